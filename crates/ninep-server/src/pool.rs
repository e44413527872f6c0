//! Worker threads that run tree methods, shared by every connection of a server and
//! shared out between users.
//!
//! A request that blocks in a tree (a pipe read with no writer, a `/log` follow,
//! `/xcpu/N/wait`) holds its worker as long as it waits. Without shares, one user's
//! waiting reads could hold every worker, and every other user's requests would wait
//! for ever; so the pool is a fair queue with a share per user.
//!
//! Rules:
//!
//! 1. **Queues.** A job waits in its owner's queue (the user of `slots` rule 1: a uid,
//!    one person over every transport), in arrival order. Nothing is refused: a job
//!    that cannot start waits.
//! 2. **Shares.** An owner runs at most [`ServerConfig::workers_per_user`] jobs at once
//!    (a quarter of `max_workers`), and the last [`ServerConfig::reserved_workers`]
//!    (an eighth) only for owners running fewer than [`RESERVE_HOLDING`]: users
//!    running many stop short of them, so a user running few always gets a worker
//!    while others wait in their own queues.
//! 3. **Fairness.** A free worker takes, among the owners that may start one more
//!    (rule 2), the oldest job of the owner running the fewest.
//! 4. **Cancelled jobs.** A job whose token is cancelled while it waits (flushed, the
//!    session reset, the connection closed) leaves its queue and runs next, whatever
//!    its owner runs: on a free worker, or on one thread beyond `max_workers` when
//!    none is free. It runs as any cancelled request does (a tree that would wait
//!    returns at once), so a flush of a waiting request is answered at once and a
//!    closing connection never waits for its own queue. The pool learns of it
//!    through a hook on the token ([`Cancel::on_cancel`]), run on the cancelling
//!    thread.
//! 5. **Threads.** The pool grows on demand, a thread for each job that may start
//!    and finds no idle worker, up to `max_workers` (rule 4: one more); idle workers
//!    exit after `worker_idle`, so a quiet server keeps no threads. The worker that
//!    went idle last is woken first (a stack, not a queue): after a burst, a trickle
//!    of work keeps as many workers as it needs busy and the rest time out, where
//!    waking them in turn kept every thread of the burst alive for good.
//! 6. A job that has to wait is counted and logged at most once per 10 s (`tally`),
//!    naming whose share or which limit held it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread;
use std::time::{Duration, Instant};

use crate::cancel::{lock, Cancel};
use crate::config::ServerConfig;
use crate::slots::{Owner, RESERVE_HOLDING};
use crate::tally::Tally;

/// Work for a pool thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How many workers there are and how they are shared out (rule 2).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shares {
    pub max: usize,
    pub per_user: usize,
    pub reserve: usize,
}

impl From<&ServerConfig> for Shares {
    fn from(c: &ServerConfig) -> Self {
        Shares {
            max: c.max_workers.max(1),
            per_user: c.workers_per_user(),
            reserve: c.reserved_workers(),
        }
    }
}

impl Shares {
    /// Whether an owner running `mine` jobs may start one more while `running` run
    /// in all (rule 2), and if not, why.
    fn check(&self, mine: usize, running: usize) -> Result<(), Wait> {
        let room = if mine < RESERVE_HOLDING {
            self.max
        } else {
            self.max.saturating_sub(self.reserve)
        };
        if mine >= self.per_user {
            Err(Wait::Share)
        } else if running >= room {
            Err(Wait::Full)
        } else {
            Ok(())
        }
    }
}

/// Why a job waits (rule 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Its owner runs its share.
    Share,
    /// Every worker it may use is busy.
    Full,
}

/// One owner's jobs.
#[derive(Default)]
struct Queue {
    running: usize,
    /// Waiting jobs by arrival number (a token's hook takes one out by its number).
    waiting: BTreeMap<u64, Job>,
}

struct State {
    owners: HashMap<Owner, Queue>,
    /// Cancelled jobs taken out of their queues, to run before any other (rule 4).
    cancelled: VecDeque<(Owner, Job)>,
    /// Jobs running now, and jobs waiting in the owners' queues.
    running: usize,
    waiting: usize,
    next_job: u64,
    /// Threads waiting for work, or started and not yet looking for it.
    idle: usize,
    threads: usize,
    /// The threads waiting for work, the last to wait on top (rule 5).
    sleepers: Vec<Arc<Sleeper>>,
}

/// A worker waiting for work: woken on its own, the last to wait first (rule 5).
#[derive(Default)]
struct Sleeper {
    wake: Condvar,
    /// Set (under the pool's lock) when a job is handed to it.
    woken: std::sync::atomic::AtomicBool,
}

impl State {
    /// Jobs that could start now (rules 2 and 4), counted up to `limit`.
    fn ready(&self, shares: &Shares, limit: usize) -> usize {
        let mut n = self.cancelled.len().min(limit);
        let mut running = self.running;
        for q in self.owners.values() {
            for mine in q.running..q.running + q.waiting.len() {
                if n >= limit || shares.check(mine, running).is_err() {
                    break;
                }
                running += 1;
                n += 1;
            }
        }
        n
    }

    /// The job a free worker runs next (rules 3 and 4); only a cancelled one when the
    /// pool is over `max_workers`.
    fn next(&mut self, shares: &Shares, over: bool) -> Option<(Owner, Job)> {
        let (owner, job) = match self.cancelled.pop_front() {
            Some(cancelled) => cancelled,
            None if over => return None,
            None => {
                let running = self.running;
                let owner = self
                    .owners
                    .iter()
                    .filter(|(_, q)| !q.waiting.is_empty())
                    .filter(|(_, q)| shares.check(q.running, running).is_ok())
                    .min_by_key(|(_, q)| (q.running, q.waiting.keys().next().copied()))
                    .map(|(owner, _)| owner.clone())?;
                let (_, job) = self.owners.get_mut(&owner)?.waiting.pop_first()?;
                self.waiting -= 1;
                (owner, job)
            }
        };
        self.running += 1;
        self.owners.entry(owner.clone()).or_default().running += 1;
        Some((owner, job))
    }

    /// A job of `owner` finished.
    fn done(&mut self, owner: &Owner) {
        self.running -= 1;
        if let Some(q) = self.owners.get_mut(owner) {
            q.running -= 1;
            if q.running == 0 && q.waiting.is_empty() {
                self.owners.remove(owner);
            }
        }
    }
}

/// What a change to the queues asks of the threads.
enum Dispatch {
    /// Nothing can start, or an idle worker was woken.
    Done,
    /// A new thread is to be started (counted already).
    Spawn,
}

struct Inner {
    state: Mutex<State>,
    shares: Shares,
    idle_timeout: Duration,
    /// Jobs that had to wait (rule 6).
    waited: Tally,
}

/// A pool of worker threads shared out between users.
#[derive(Clone)]
pub(crate) struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    pub fn new(shares: Shares, idle_timeout: Duration) -> Self {
        Pool {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    owners: HashMap::new(),
                    cancelled: VecDeque::new(),
                    running: 0,
                    waiting: 0,
                    next_job: 0,
                    idle: 0,
                    threads: 0,
                    sleepers: Vec::new(),
                }),
                shares,
                idle_timeout,
                waited: Tally::new(),
            }),
        }
    }

    /// Worker threads alive now.
    pub fn threads(&self) -> usize {
        lock(&self.inner.state).threads
    }

    /// Jobs waiting for a worker now.
    pub fn waiting(&self) -> usize {
        let st = lock(&self.inner.state);
        st.waiting + st.cancelled.len()
    }

    /// Runs `job` of `owner` on a pool thread when the rules allow; cancelling
    /// `cancel` while it waits runs it next (rule 4).
    pub fn submit(&self, owner: Owner, cancel: &Cancel, job: Job) {
        let mut st = lock(&self.inner.state);
        let number = st.next_job;
        st.next_job += 1;
        let mine = st.owners.get(&owner).map_or(0, |q| q.running);
        let held = self.inner.shares.check(mine, st.running).err();
        st.owners
            .entry(owner.clone())
            .or_default()
            .waiting
            .insert(number, job);
        st.waiting += 1;
        let dispatch = self.dispatch(&mut st);
        let full = matches!(dispatch, Dispatch::Done) && st.idle == 0;
        drop(st);
        self.start(dispatch);
        match held.or(full.then_some(Wait::Full)) {
            Some(Wait::Share) => self.inner.waited.hit(|| {
                format!(
                    "requests of {owner} wait in its own queue: it runs its share of the 9P workers already (max_workers / 4 = {}; nf serve --max-workers)",
                    self.inner.shares.per_user
                )
            }),
            Some(Wait::Full) => self.inner.waited.hit(|| {
                format!(
                    "9P worker pool is full: a request of {owner} waits for a free worker (max_workers = {}, the last {} kept for users running fewer than {RESERVE_HOLDING}; nf serve --max-workers)",
                    self.inner.shares.max, self.inner.shares.reserve
                )
            }),
            None => {}
        }
        let pool = Arc::downgrade(&self.inner);
        cancel.on_cancel(Box::new(move || withdraw(&pool, &owner, number)));
    }

    /// Wakes an idle worker for a job that may start, or asks for a new thread.
    fn dispatch(&self, st: &mut State) -> Dispatch {
        let ready = st.ready(&self.inner.shares, st.idle + 1);
        if ready == 0 {
            return Dispatch::Done;
        }
        if ready <= st.idle {
            // None waiting: the idle one is starting and will look for work itself.
            if let Some(s) = st.sleepers.pop() {
                s.woken.store(true, Ordering::Relaxed);
                s.wake.notify_one();
            }
            return Dispatch::Done;
        }
        let most = if st.cancelled.is_empty() {
            self.inner.shares.max
        } else {
            self.inner.shares.max + 1
        };
        if st.threads >= most {
            return Dispatch::Done;
        }
        st.threads += 1;
        st.idle += 1;
        Dispatch::Spawn
    }

    /// Starts the thread `dispatch` asked for (outside the pool's lock).
    fn start(&self, dispatch: Dispatch) {
        if let Dispatch::Spawn = dispatch {
            let pool = self.clone();
            let spawned = thread::Builder::new()
                .name("9p-worker".into())
                .spawn(move || pool.work());
            if let Err(e) = spawned {
                let mut st = lock(&self.inner.state);
                st.threads -= 1;
                st.idle -= 1;
                drop(st);
                tracing::error!(error = %e, "spawning a 9P worker failed; the job waits for a running worker");
            }
        }
    }

    fn work(&self) {
        let inner = &*self.inner;
        let me = Arc::new(Sleeper::default());
        let mut st = lock(&inner.state);
        // Counted idle since `dispatch` asked for this thread.
        st.idle -= 1;
        loop {
            let over = st.threads > inner.shares.max;
            if let Some((owner, job)) = st.next(&inner.shares, over) {
                drop(st);
                // A panic is the server's bug; the pool's counts stay right.
                let _ = panic::catch_unwind(AssertUnwindSafe(job));
                st = lock(&inner.state);
                st.done(&owner);
                continue;
            }
            if over {
                st.threads -= 1;
                return;
            }
            st.idle += 1;
            me.woken.store(false, Ordering::Relaxed);
            st.sleepers.push(Arc::clone(&me));
            let deadline = Instant::now() + inner.idle_timeout;
            let mut timed_out = false;
            while !me.woken.load(Ordering::Relaxed) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    timed_out = true;
                    st.sleepers.retain(|s| !Arc::ptr_eq(s, &me));
                    break;
                }
                st = me
                    .wake
                    .wait_timeout(st, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            st.idle -= 1;
            if timed_out && st.ready(&inner.shares, 1) == 0 {
                st.threads -= 1;
                return;
            }
        }
    }
}

/// Rule 4: takes job `number` of `owner` out of its queue, if it still waits there,
/// to run next.
fn withdraw(pool: &Weak<Inner>, owner: &Owner, number: u64) {
    let Some(inner) = pool.upgrade() else {
        return;
    };
    let pool = Pool { inner };
    let mut st = lock(&pool.inner.state);
    let Some(job) = st
        .owners
        .get_mut(owner)
        .and_then(|q| q.waiting.remove(&number))
    else {
        return;
    };
    st.waiting -= 1;
    st.cancelled.push_back((owner.clone(), job));
    let dispatch = pool.dispatch(&mut st);
    drop(st);
    pool.start(dispatch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Instant;

    const A: Owner = Owner::Uid(1001);
    const B: Owner = Owner::Uid(1002);

    fn pool(max: usize) -> Pool {
        let config = ServerConfig::default().max_workers(max);
        Pool::new(Shares::from(&config), Duration::from_millis(50))
    }

    /// A job that blocks until `release` is dropped or cancelled, then says so.
    fn blocked(
        release: &Arc<Mutex<mpsc::Receiver<()>>>,
        done: &mpsc::Sender<&'static str>,
        name: &'static str,
    ) -> Job {
        let (rx, done) = (Arc::clone(release), done.clone());
        Box::new(move || {
            let _ = lock(&rx).recv();
            let _ = done.send(name);
        })
    }

    fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(Instant::now() < deadline, "{what}");
            thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn blocked_jobs_do_not_block_others() {
        let pool = pool(64);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (done_tx, _done_rx) = mpsc::channel();
        for _ in 0..4 {
            pool.submit(A, &Cancel::new(), blocked(&release_rx, &done_tx, "a"));
        }
        let (tx, rx) = mpsc::channel();
        pool.submit(A, &Cancel::new(), Box::new(move || tx.send(()).unwrap()));
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        drop(release_tx);
        // Idle threads go away.
        wait_until("idle workers exit", || pool.threads() == 0);
    }

    /// After a burst, a trickle of short jobs keeps the workers it needs, not every
    /// thread of the burst: woken in turn, none of them was ever idle for
    /// `worker_idle` (50 ms here) and the pool kept them all.
    #[test]
    fn a_trickle_after_a_burst_lets_the_extra_workers_go() {
        let pool = pool(64);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (done_tx, _done_rx) = mpsc::channel();
        for _ in 0..8 {
            pool.submit(A, &Cancel::new(), blocked(&release_rx, &done_tx, "a"));
        }
        wait_until("the burst runs on 8 threads", || pool.threads() == 8);
        drop(release_tx);
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.threads() > 2 {
            assert!(
                Instant::now() < deadline,
                "{} threads kept for a trickle of work",
                pool.threads()
            );
            let (tx, rx) = mpsc::channel();
            pool.submit(A, &Cancel::new(), Box::new(move || tx.send(()).unwrap()));
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
            thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn one_owner_runs_its_share_and_the_others_still_run() {
        // 16 workers: 4 per owner.
        let pool = pool(16);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (done_tx, done_rx) = mpsc::channel();
        for _ in 0..40 {
            pool.submit(A, &Cancel::new(), blocked(&release_rx, &done_tx, "a"));
        }
        wait_until("A's share runs, the rest wait in A's queue", || {
            pool.waiting() == 36
        });
        assert_eq!(pool.threads(), 4, "a thread per job that may run");
        pool.submit(
            B,
            &Cancel::new(),
            Box::new(move || done_tx.send("b").unwrap()),
        );
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(5)), Ok("b"));
        drop(release_tx);
        for _ in 0..40 {
            assert_eq!(done_rx.recv_timeout(Duration::from_secs(5)), Ok("a"));
        }
    }

    #[test]
    fn a_cancelled_job_runs_next_even_past_its_owners_share_and_a_full_pool() {
        let pool = pool(4);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (done_tx, done_rx) = mpsc::channel();
        // One worker per owner here: A's and B's blocked jobs hold two, the reserve
        // none; C and D fill the pool.
        for owner in [A, B, Owner::Uid(3), Owner::Uid(4)] {
            pool.submit(
                owner,
                &Cancel::new(),
                blocked(&release_rx, &done_tx, "held"),
            );
        }
        wait_until("the pool fills", || pool.threads() == 4);
        let cancel = Cancel::new();
        let (tx, rx) = mpsc::channel();
        pool.submit(A, &cancel, Box::new(move || tx.send(()).unwrap()));
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "waits"
        );
        cancel.cancel();
        rx.recv_timeout(Duration::from_secs(5))
            .expect("a cancelled job runs at once");
        drop(release_tx);
        let got: Vec<_> = (0..4)
            .map(|_| done_rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(got.iter().filter(|n| **n == "held").count(), 4);
        wait_until("the extra thread leaves", || pool.threads() <= 4);
    }
}
