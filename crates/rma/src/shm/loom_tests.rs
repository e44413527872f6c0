//! Model checks of the control segment's locks (rules 2 and 3 of `control.rs`) under
//! loom: the real taking and releasing code (`lock.rs`) over a control segment in
//! private memory whose atomics are loom's (`sync.rs`), with each proc a loom thread.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nf-rma
//! --release --lib loom` (scripts/test.sh does). loom explores every interleaving of
//! the atomics and every value a weak ordering lets a load see. What a lock guards is
//! a plain counter in a loom `UnsafeCell`: loom fails the model if two threads touch
//! it without the lock ordering one access before the other, so a lock that lets two
//! holders in at once, or hands over without publishing what the last holder wrote,
//! is caught even when the counter happens to end right.
//!
//! Each model has two procs taking the lock twice each (so a proc also queues behind
//! itself). A third spinning proc makes loom's exploration of yield loops exceed its
//! branch limit, so exclusion is checked pairwise.
//!
//! Checks:
//! 1. Two procs take stripes 0 and 1 (ascending, as `lock_stripes` always does):
//!    each stripe's counter is touched by one holder at a time and ends at four, and
//!    neither waits forever (loom fails a wait that never ends as a branch-limit
//!    overrun, a deadlock of the two yield loops).
//!
//!    Mutation that fails it: in `StripeGuard::drop`, `store(0, Ordering::Release)`
//!    → `store(0, Ordering::Relaxed)`. loom: "Causality violation: Concurrent write
//!    accesses to `UnsafeCell`" (the next holder's increment is not ordered after the
//!    last holder's).
//! 2. Two procs take mutex 0: each holder finds as many earlier holders as its ticket
//!    says (served in ticket order, one at a time) and the count ends at four.
//!
//!    Mutation that fails it: in `release`, `serving.fetch_add(1, Ordering::Release)`
//!    → `fetch_add(1, Ordering::Relaxed)`. loom: "Causality violation: Concurrent
//!    write accesses to `UnsafeCell`".

use std::sync::Arc;
use std::time::Duration;

use loom::cell::UnsafeCell;
use loom::thread;
use nf_core::wait::Waiter;
use nf_core::WaitMode;

use super::control::Control;
use super::lock::{lock_stripes, release, take_ticket, wait_ticket, Patience};

/// Times each proc takes the lock: twice, so a proc also queues behind itself.
const ROUNDS: u32 = 2;

/// A count kept in plain memory, changed only by a lock's holder.
struct Guarded(UnsafeCell<u32>);

// SAFETY: every access goes through loom's `UnsafeCell`, which checks that accesses
// from different threads are ordered (that is what these models test).
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new() -> Guarded {
        Guarded(UnsafeCell::new(0))
    }

    /// Adds one; returns the count before.
    fn bump(&self) -> u32 {
        // SAFETY: loom fails the model if another thread's access is not ordered
        // before this one (it tracks the cell's accesses).
        self.0.with_mut(|c| unsafe {
            let before = *c;
            *c = before + 1;
            before
        })
    }

    fn get(&self) -> u32 {
        // SAFETY: as in `bump`.
        self.0.with(|c| unsafe { *c })
    }
}

/// Yields between tries (sync.rs under loom); never checks liveness (no pids).
fn patience() -> Patience {
    Patience::new(
        Waiter::new(WaitMode::Yield, 1, None, None),
        Duration::from_secs(3600),
        Arc::new(Vec::new()),
    )
}

/// Runs `body` as proc 0 and as procs 1.. in loom threads, one per entry of `args`.
fn procs<A: Send + 'static>(args: Vec<A>, body: impl Fn(usize, A) + Send + Sync + 'static) {
    let body = Arc::new(body);
    let mut args = args.into_iter().enumerate();
    let (_, first) = args.next().expect("at least one proc");
    let others: Vec<_> = args
        .map(|(proc, a)| {
            let body = Arc::clone(&body);
            thread::spawn(move || body(proc, a))
        })
        .collect();
    body(0, first);
    for t in others {
        t.join().unwrap();
    }
}

#[test]
fn loom_stripe_locks_exclude_and_never_deadlock() {
    loom::model(|| {
        let ctl = Arc::new(Control::model(0));
        let counts = Arc::new([Guarded::new(), Guarded::new()]);
        let (c, n) = (Arc::clone(&ctl), Arc::clone(&counts));
        procs(vec![0b11u64, 0b11], move |proc, mask| {
            for _ in 0..ROUNDS {
                let held = lock_stripes(&c, mask, proc as u32 + 1, &patience(), "accumulate")
                    .expect("no pid to find dead");
                for s in (0..2).filter(|s| mask & 1 << s != 0) {
                    n[s].bump();
                }
                drop(held);
            }
        });
        for (s, count) in counts.iter().enumerate() {
            assert_eq!(
                count.get(),
                2 * ROUNDS,
                "stripe {s}: each proc held it each round"
            );
            assert_eq!(ctl.stripe(s).load(super::sync::Ordering::Acquire), 0);
        }
    });
}

#[test]
fn loom_the_ticket_mutex_serves_one_holder_at_a_time_in_ticket_order() {
    loom::model(|| {
        let ctl = Arc::new(Control::model(1));
        let count = Arc::new(Guarded::new());
        let (c, n) = (Arc::clone(&ctl), Arc::clone(&count));
        procs(vec![(); 2], move |proc, ()| {
            for _ in 0..ROUNDS {
                let ticket = take_ticket(c.mutex(0));
                wait_ticket(&c, 0, ticket, proc, &patience()).expect("nobody poisons it");
                assert_eq!(n.bump(), ticket, "served out of ticket order");
                assert!(release(c.mutex(0), proc), "proc {proc} held the mutex");
            }
        });
        assert_eq!(count.get(), 2 * ROUNDS);
    });
}
