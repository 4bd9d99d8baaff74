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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_recursion_fits_in_the_big_stack() {
        // ~100 bytes of frame per level: far beyond a default 2 MiB thread.
        fn depth(n: u64) -> u64 {
            let pad = std::hint::black_box([n; 8]);
            if n == 0 {
                0
            } else {
                1 + depth(n - 1) + (pad[7] - n)
            }
        }
        assert_eq!(run_guarded(|| depth(200_000)), Ok(200_000));
    }

    #[test]
    fn panics_become_messages() {
        let r: Result<(), String> = run_guarded(|| panic!("boom {}", 7));
        assert_eq!(r, Err("boom 7".to_string()));
    }
}
