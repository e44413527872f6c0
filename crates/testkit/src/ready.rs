//! Waiting for a condition a test can observe, instead of sleeping and hoping: the
//! deadline only catches a hang, it is never a claim about speed.

use std::thread;
use std::time::{Duration, Instant};

/// The longest pause between two looks; the first looks come faster, so a
/// condition that is already true, or soon is, costs little.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Calls `probe` until it gives a value and returns it; panics naming `what` and what
/// `probe` said last when `bound` passes first.
pub fn wait_for<T>(what: &str, bound: Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + bound;
    let mut pause = Duration::from_millis(1);
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) if Instant::now() >= deadline => {
                panic!("{what}: not within {bound:?}; last: {last}")
            }
            Err(_) => {
                thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

/// Waits until `cond` holds; panics naming `what` when `bound` passes first.
pub fn eventually(what: &str, bound: Duration, mut cond: impl FnMut() -> bool) {
    wait_for(what, bound, || {
        if cond() {
            Ok(())
        } else {
            Err("still false".to_owned())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_that_succeeds_later_gives_its_value() {
        let mut n = 0;
        let v = wait_for("the third look", Duration::from_secs(10), || {
            n += 1;
            if n == 3 {
                Ok(n)
            } else {
                Err(format!("look {n}"))
            }
        });
        assert_eq!(v, 3);
    }

    #[test]
    #[should_panic(expected = "never: not within")]
    fn a_condition_that_never_holds_fails_naming_it() {
        eventually("never", Duration::from_millis(20), || false);
    }
}
