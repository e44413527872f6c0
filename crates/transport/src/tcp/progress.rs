//! The progress thread: one per transport, blocked in epoll (through `mio`).
//!
//! One turn of its loop:
//! 1. Wait for events; the timeout is zero if some connection still has bytes to read
//!    (budget spent), else the nearest of the hello deadlines and, while the owner
//!    holds connections, the next [`TICK`]; else none.
//! 2. Listener readable → accept every waiting connection and start its handshake
//!    (at most [`MAX_PENDING`] at once; more are refused).
//! 3. Pending connection readable → read its hello, judge it, answer or refuse.
//! 4. Peer connection writable → drain its outgoing queue if it has one; readable →
//!    read frames into the inbox ([`super::rx`]), unless the owner holds the
//!    connection (`handoff.rs`): then stop watching its arrivals and list it as lent.
//! 5. Woken by the owner → register connections it dialled, resume connections that
//!    stalled on a full inbox, or stop.
//! 6. Drop pending connections past their hello deadline.
//! 7. At each [`TICK`] with connections lent: if the owner has not polled since the
//!    last tick, take them back and read them (`handoff.rs`, rule 4).
//!
//! A connection that closes, fails or sends garbage is deregistered and its peer
//! marked lost (which posts one error to the inbox); a goodbye marks it left.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use super::conn::{Pending, Step};
use super::faults::settle;
use super::handoff::{Visit, TICK, WATCH};
use super::rx::{Outcome, Reader};
use super::sync::lock;
use super::Shared;

/// Token of the listening socket.
const LISTENER: Token = Token(usize::MAX - 1);
/// Token of the owner's waker.
const WAKER: Token = Token(usize::MAX);
/// Handshakes in progress at most; connections beyond are closed at once.
pub(crate) const MAX_PENDING: usize = 64;
/// Bytes read from one connection before turning to the others.
const BUDGET: usize = 1 << 20;

/// Creates the epoll instance with the listener and the owner's waker registered,
/// and a second handle on it for the owner's side of the read handoff (`handoff.rs`).
pub(crate) fn prepare(listener: &TcpListener) -> io::Result<(Poll, Waker, Registry)> {
    let poll = Poll::new()?;
    poll.registry().register(
        &mut SourceFd(&listener.as_raw_fd()),
        LISTENER,
        Interest::READABLE,
    )?;
    let waker = Waker::new(poll.registry(), WAKER)?;
    let registry = poll.registry().try_clone()?;
    Ok((poll, waker, registry))
}

/// Starts the progress thread.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    poll: Poll,
    listener: TcpListener,
) -> io::Result<JoinHandle<()>> {
    let size = shared.peers.len();
    let name = format!("nf-tcp-{}", shared.hello.rank);
    std::thread::Builder::new().name(name).spawn(move || {
        let addr = listener.local_addr().ok();
        Engine {
            size,
            sh: shared,
            poll,
            listener,
            addr,
            pending: HashMap::new(),
            next_token: size,
            again: Vec::new(),
            stalled: Vec::new(),
            lent: Vec::new(),
            next_tick: Instant::now(),
        }
        .run();
    })
}

struct Engine {
    sh: Arc<Shared>,
    poll: Poll,
    listener: TcpListener,
    addr: Option<SocketAddr>,
    /// Ranks in the job; tokens below are peers' connections.
    size: usize,
    pending: HashMap<usize, Pending>,
    next_token: usize,
    /// Connections that may have more to read (budget spent, or inbox drained).
    again: Vec<usize>,
    /// Connections not read because the inbox is full; resumed when woken.
    stalled: Vec<usize>,
    /// Connections the owner holds that this thread stopped watching (step 7).
    lent: Vec<usize>,
    /// When step 7 runs next, while `lent` is not empty.
    next_tick: Instant,
}

impl Engine {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        while !self.sh.stop.load(Ordering::Acquire) {
            let timeout = if !self.again.is_empty() {
                Some(Duration::ZERO)
            } else {
                let now = Instant::now();
                let tick = (!self.lent.is_empty()).then_some(self.next_tick);
                self.pending
                    .values()
                    .map(|p| p.deadline)
                    .chain(tick)
                    .min()
                    .map(|t| t.saturating_duration_since(now))
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.fail(&e);
                return;
            }
            let mut woken = false;
            for ev in events.iter() {
                match ev.token() {
                    WAKER => woken = true,
                    LISTENER => self.accept(),
                    Token(r) if r < self.size => {
                        if ev.is_writable() {
                            self.sh.peers[r].drain(&self.sh.inbox);
                        }
                        // A lent connection's first event stops it being watched.
                        if ev.is_readable()
                            || ev.is_read_closed()
                            || ev.is_error()
                            || self.sh.peers[r].rx.lent()
                        {
                            self.read(r);
                        }
                    }
                    Token(t) => self.handshake(t),
                }
            }
            if woken {
                self.install_dialled();
                let stalled = std::mem::take(&mut self.stalled);
                self.again.extend(stalled);
            }
            for r in std::mem::take(&mut self.again) {
                self.read(r);
            }
            self.expire();
            self.tick();
        }
    }

    /// Reads from peer `r`'s connection, if this thread holds it, and acts on why the
    /// reader stopped.
    fn read(&mut self, r: usize) {
        let sh = &self.sh;
        let rx = &sh.peers[r].rx;
        let mut st = match rx.visit(&sh.registry) {
            Ok(Visit::Read(st)) => st,
            Ok(Visit::Lent) => {
                if self.lent.is_empty() {
                    self.next_tick = Instant::now() + TICK;
                }
                push_once(&mut self.lent, r);
                return;
            }
            Err(e) => {
                let why = format!("the progress thread cannot change what it watches: {e}");
                rx.close(&sh.registry);
                sh.peers[r].lost(why, &sh.inbox);
                return;
            }
        };
        let Some(reader) = st.reader.as_mut() else {
            return;
        };
        let (cfg, mut inbox) = (&sh.cfg, &sh.inbox);
        let outcome = reader.read(
            &mut inbox,
            cfg.max_payload,
            cfg.recv_limit,
            BUDGET,
            false,
            None,
        );
        match settle(sh, r, &mut st, outcome) {
            Some(Outcome::Budget) => push_once(&mut self.again, r),
            Some(Outcome::Full) => {
                if inbox.stall(cfg.recv_limit) {
                    push_once(&mut self.stalled, r);
                } else {
                    push_once(&mut self.again, r);
                }
            }
            _ => {}
        }
    }

    /// Step 7: takes lent connections back from an owner that stopped polling.
    fn tick(&mut self) {
        if self.lent.is_empty() || Instant::now() < self.next_tick {
            return;
        }
        self.next_tick = Instant::now() + TICK;
        let sh = &self.sh;
        self.lent.retain(|&r| sh.peers[r].rx.lent());
        if sh.polled.swap(false, Ordering::AcqRel) {
            return;
        }
        for r in std::mem::take(&mut self.lent) {
            let rx = &sh.peers[r].rx;
            if let Err(e) = rx.hand_back(&sh.registry, r) {
                let why = format!("the progress thread cannot watch the connection: {e}");
                rx.close(&sh.registry);
                sh.peers[r].lost(why, &sh.inbox);
            }
        }
    }

    /// Accepts every waiting connection; each starts its handshake.
    fn accept(&mut self) {
        loop {
            let (stream, remote) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    tracing::warn!(listener = ?self.addr, "tcp: accept failed: {e}");
                    return;
                }
            };
            if self.pending.len() >= MAX_PENDING {
                tracing::warn!(
                    remote = %remote,
                    "tcp: refused connection from {remote}: {MAX_PENDING} handshakes already \
                     in progress"
                );
                continue;
            }
            let token = self.next_token;
            self.next_token = match self.next_token.checked_add(1) {
                Some(t) if t < LISTENER.0 => t,
                _ => self.size,
            };
            let registered = stream.set_nonblocking(true).and_then(|()| {
                self.poll.registry().register(
                    &mut SourceFd(&stream.as_raw_fd()),
                    Token(token),
                    Interest::READABLE,
                )
            });
            if let Err(e) = registered {
                tracing::warn!(remote = %remote, "tcp: refused connection from {remote}: cannot watch it: {e}");
                continue;
            }
            let deadline = Instant::now() + self.sh.cfg.hello_timeout;
            self.pending
                .insert(token, Pending::new(stream, remote, deadline));
        }
    }

    /// Moves the handshake of pending connection `token` forward.
    fn handshake(&mut self, token: usize) {
        let Some(p) = self.pending.get_mut(&token) else {
            return;
        };
        let theirs = match p.advance() {
            Step::Wait => return,
            Step::Fail(why) => return self.refuse(token, why),
            Step::Hello(h) => h,
        };
        let ours = &self.sh.hello;
        if let Err(why) = Pending::judge(&theirs, ours) {
            return self.refuse(token, why);
        }
        let r = theirs.rank as usize;
        if self.sh.peers[r].was_connected() {
            return self.refuse(
                token,
                format!("rank {r} is already connected; a second connection is refused"),
            );
        }
        if let Err(why) = p.answer(ours, self.sh.cfg.dead_after) {
            return self.refuse(token, why);
        }
        let Some(p) = self.pending.remove(&token) else {
            return;
        };
        let stream = Arc::new(p.stream);
        if let Err(e) = self.watch(r, &stream, true) {
            tracing::warn!(remote = %p.remote, "tcp: dropped rank {r}'s connection: cannot watch it: {e}");
            return;
        }
        self.sh.peers[r].install(Arc::clone(&stream), p.remote);
        let reader = Reader::new(stream, r, Arc::clone(&self.sh.pool));
        self.sh.peers[r].rx.install(reader);
        tracing::debug!(peer = r, remote = %p.remote, "tcp: accepted connection");
    }

    /// Closes a pending connection and says why.
    fn refuse(&mut self, token: usize, why: String) {
        if let Some(p) = self.pending.remove(&token) {
            let _ = self
                .poll
                .registry()
                .deregister(&mut SourceFd(&p.stream.as_raw_fd()));
            tracing::warn!(remote = %p.remote, "tcp: refused connection from {}: {why}", p.remote);
        }
    }

    /// Watches an established connection under its peer's token.
    fn watch(&self, r: usize, stream: &TcpStream, was_pending: bool) -> io::Result<()> {
        let fd = stream.as_raw_fd();
        if was_pending {
            self.poll
                .registry()
                .reregister(&mut SourceFd(&fd), Token(r), WATCH)
        } else {
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), Token(r), WATCH)
        }
    }

    /// Starts reading the connections the owner dialled.
    fn install_dialled(&mut self) {
        let dialled = std::mem::take(&mut *lock(&self.sh.dialled));
        for (r, stream) in dialled {
            if let Err(e) = self.watch(r, &stream, false) {
                let why = format!("the progress thread cannot watch the connection: {e}");
                self.sh.peers[r].lost(why, &self.sh.inbox);
                continue;
            }
            let reader = Reader::new(stream, r, Arc::clone(&self.sh.pool));
            self.sh.peers[r].rx.install(reader);
        }
    }

    /// Drops pending connections whose hello is late.
    fn expire(&mut self) {
        let now = Instant::now();
        let late: Vec<usize> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(&t, _)| t)
            .collect();
        let limit = self.sh.cfg.hello_timeout;
        for t in late {
            self.refuse(t, format!("no complete hello within {limit:?}"));
        }
    }

    /// The event loop cannot go on: every connection is reported lost.
    fn fail(&mut self, e: &io::Error) {
        tracing::error!("tcp: progress thread stops: epoll failed: {e}");
        for r in 0..self.size {
            self.sh.peers[r].rx.close(&self.sh.registry);
            let why = format!("the tcp progress thread stopped (epoll failed: {e})");
            self.sh.peers[r].lost(why, &self.sh.inbox);
        }
    }
}

fn push_once(list: &mut Vec<usize>, r: usize) {
    if !list.contains(&r) {
        list.push(r);
    }
}
