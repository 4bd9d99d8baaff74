//! How the driver steers running chains: stop them, or hold them while it
//! checks their draws.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Read by every chain at each draw it emits. `stop` ends the chains
/// (Ctrl-C, a write that failed, `--target-ess` reached); `hold` pauses
/// them at their next draw while the collector checks the draws it has
/// against `--target-ess`: the check needs no more draws, so holding
/// cannot wait on itself, and on a busy machine the cores go to the check
/// instead of to draws past the checkpoint that a passing check drops.
#[derive(Debug, Default)]
pub struct Control {
    /// Public for the signal handlers and the rank relay, which set and
    /// forward it as a plain flag.
    pub stop: AtomicBool,
    hold: AtomicBool,
}

/// How long a held chain sleeps between looks at the flags.
const HELD_POLL: Duration = Duration::from_micros(200);

impl Control {
    pub const fn new() -> Control {
        Control {
            stop: AtomicBool::new(false),
            hold: AtomicBool::new(false),
        }
    }

    /// Ends the chains at their next draw.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Holds the chains at their next draw until the guard is dropped.
    pub fn hold(&self) -> Held<'_> {
        self.hold.store(true, Ordering::SeqCst);
        Held(self)
    }

    /// Returns once the chains are not held (or are stopped).
    pub fn wait_while_held(&self) {
        while self.hold.load(Ordering::Relaxed) && !self.is_stopped() {
            std::thread::sleep(HELD_POLL);
        }
    }
}

/// The chains are held while this lives.
pub struct Held<'a>(&'a Control);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.hold.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held chain waits until the hold ends, and a stop ends the wait.
    #[test]
    fn a_held_chain_waits_for_the_release_or_the_stop() {
        let control = Control::new();
        control.wait_while_held();
        let released = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let held = control.hold();
            let waiter = scope.spawn(|| {
                control.wait_while_held();
                released.load(Ordering::SeqCst)
            });
            std::thread::sleep(Duration::from_millis(20));
            released.store(true, Ordering::SeqCst);
            drop(held);
            assert!(waiter.join().unwrap(), "waited for the release");
        });
        let _held = control.hold();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| control.wait_while_held());
            std::thread::sleep(Duration::from_millis(20));
            control.stop();
            waiter.join().unwrap();
        });
        assert!(control.is_stopped());
    }
}
