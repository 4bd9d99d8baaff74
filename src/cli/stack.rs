//! Running the front end on a thread with a large stack.
//!
//! The parser and checker are recursive; pathological input (thousands of
//! nested parentheses) must end in a diagnostic or success, not a stack
//! overflow. A generous stack is the second line of defence behind the
//! front end's own depth limits. Panics are caught and reported as
//! internal errors instead of aborting the whole run.

use std::any::Any;
use std::thread;

const FRONT_END_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Run `work` on a big-stack thread; `Err` carries the panic message.
pub fn run_guarded<T: Send>(work: impl FnOnce() -> T + Send) -> Result<T, String> {
    thread::scope(|scope| {
        let handle = thread::Builder::new()
            .name("bat-front-end".into())
            .stack_size(FRONT_END_STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|err| format!("cannot start front-end thread: {err}"))?;
        handle.join().map_err(|payload| panic_message(&*payload))
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
