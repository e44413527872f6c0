//! Worker threads that run tree methods, shared by every connection of a server.
//!
//! The pool grows on demand so that a request blocked in a tree (a stream read) never
//! holds up the others: a job submitted while no worker is idle gets a new thread, up to
//! `max_workers`; beyond that jobs wait in the queue. Idle workers exit after
//! `worker_idle`, so a quiet server keeps no threads.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use crate::cancel::lock;

/// Work for a pool thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

struct State {
    queue: VecDeque<Job>,
    idle: usize,
    threads: usize,
}

struct Inner {
    state: Mutex<State>,
    work: Condvar,
    max_threads: usize,
    idle_timeout: Duration,
}

/// An elastic thread pool.
#[derive(Clone)]
pub(crate) struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    pub fn new(max_threads: usize, idle_timeout: Duration) -> Self {
        Pool {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    idle: 0,
                    threads: 0,
                }),
                work: Condvar::new(),
                max_threads: max_threads.max(1),
                idle_timeout,
            }),
        }
    }

    /// Worker threads alive now.
    pub fn threads(&self) -> usize {
        lock(&self.inner.state).threads
    }

    /// Runs `job` on a pool thread, starting one if every thread is busy.
    pub fn submit(&self, job: Job) {
        let mut st = lock(&self.inner.state);
        st.queue.push_back(job);
        if st.queue.len() <= st.idle {
            self.inner.work.notify_one();
            return;
        }
        if st.threads >= self.inner.max_threads {
            tracing::warn!(
                max_workers = self.inner.max_threads,
                queued = st.queue.len(),
                "9P worker pool is full: requests wait for a free worker (raise ServerConfig::max_workers)"
            );
            return;
        }
        st.threads += 1;
        drop(st);
        let inner = Arc::clone(&self.inner);
        let spawned = thread::Builder::new()
            .name("9p-worker".into())
            .spawn(move || work(&inner));
        if let Err(e) = spawned {
            lock(&self.inner.state).threads -= 1;
            tracing::error!(error = %e, "spawning a 9P worker failed; the job waits for a running worker");
        }
    }
}

fn work(inner: &Inner) {
    let mut st = lock(&inner.state);
    loop {
        if let Some(job) = st.queue.pop_front() {
            drop(st);
            job();
            st = lock(&inner.state);
            continue;
        }
        st.idle += 1;
        let (guard, timeout) = inner
            .work
            .wait_timeout(st, inner.idle_timeout)
            .unwrap_or_else(PoisonError::into_inner);
        st = guard;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            st.threads -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn blocked_jobs_do_not_block_others() {
        let pool = Pool::new(64, Duration::from_millis(50));
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        for _ in 0..4 {
            let rx = Arc::clone(&release_rx);
            pool.submit(Box::new(move || {
                let _ = lock(&rx).recv();
            }));
        }
        let (done_tx, done_rx) = mpsc::channel();
        pool.submit(Box::new(move || done_tx.send(()).unwrap()));
        done_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        drop(release_tx);
        // Idle threads go away.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while pool.threads() > 0 && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(pool.threads(), 0);
    }
}
