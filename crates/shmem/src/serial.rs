//! One thread at a time on the Rust side, for programs granted
//! `SHMEM_THREAD_SERIALIZED` or `SHMEM_THREAD_MULTIPLE`: the rma layer and the world
//! under it are single-threaded (their state is in `RefCell`s), so every call that
//! reaches them from any thread holds this lock for its duration ([`Serial::enter`]).
//!
//! Rules:
//! 1. Re-entrant: a thread holding it may enter again (a call inside a call), and
//!    leaves it when its outermost entry ends.
//! 2. Held only inside a Rust-side call. Waiting loops on memory (`wait_until`, the
//!    lock's retries, the same-host collectives) run outside it, taking it per step,
//!    so a thread waiting there never keeps another from the calls it waits for.
//! 3. A call that blocks inside the rma layer (a barrier through the network, a quiet
//!    waiting for acknowledgements) holds it while it blocks: the other threads' calls
//!    that reach the Rust side wait meanwhile (same-host puts, gets and atomics take the
//!    C side's fast path and never wait).

use std::sync::{Condvar, Mutex};

/// The lock (module docs).
#[derive(Default)]
pub struct Serial {
    /// The holder (`pthread_self`: no handle to clone on every call, unlike
    /// `std::thread::current`) and how many times it entered.
    held: Mutex<Option<(libc::pthread_t, u32)>>,
    /// Signalled when the holder leaves.
    free: Condvar,
}

/// Holding [`Serial`] until dropped.
pub struct Entered<'a>(&'a Serial);

impl Serial {
    /// Waits until no other thread holds the lock, then holds it (rule 1).
    pub fn enter(&self) -> Entered<'_> {
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match held.as_mut() {
                None => {
                    *held = Some((me, 1));
                    break;
                }
                // SAFETY: pthread_equal has no preconditions.
                Some((owner, depth)) if unsafe { libc::pthread_equal(*owner, me) } != 0 => {
                    *depth += 1;
                    break;
                }
                Some(_) => held = self.free.wait(held).unwrap_or_else(|p| p.into_inner()),
            }
        }
        Entered(self)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let mut held = self.0.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, depth)) = held.as_mut() {
            *depth -= 1;
            if *depth == 0 {
                *held = None;
                self.0.free.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn one_thread_at_a_time_and_reentrant() {
        let serial = Arc::new(Serial::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (serial, inside, most) = (serial.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _outer = serial.enter();
                        let _inner = serial.enter(); // rule 1: no deadlock
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            1,
            "two threads were inside at once"
        );
        assert!(serial.held.lock().unwrap().is_none(), "left held");
    }
}
