//! The progress thread: one per transport, blocked in epoll (through `mio`).
//!
//! One turn of its loop:
//! 1. Wait for events; the timeout is zero if some connection still has bytes to read
//!    (budget spent), else the nearest hello deadline, else none.
//! 2. Listener readable → accept every waiting connection and start its handshake
//!    (at most [`MAX_PENDING`] at once; more are refused).
//! 3. Pending connection readable → read its hello, judge it, answer or refuse.
//! 4. Peer connection writable → drain its outgoing queue if it has one; readable →
//!    read frames into the inbox ([`super::recv`]).
//! 5. Woken by the owner → register connections it dialled, resume connections that
//!    stalled on a full inbox, or stop.
//! 6. Drop pending connections past their hello deadline.
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
use mio::{Events, Interest, Poll, Token, Waker};

use super::handshake::{Pending, Step};
use super::inbox::lock;
use super::recv::{Outcome, Reader};
use super::Shared;

/// Token of the listening socket.
const LISTENER: Token = Token(usize::MAX - 1);
/// Token of the owner's waker.
const WAKER: Token = Token(usize::MAX);
/// Handshakes in progress at most; connections beyond are closed at once.
pub(crate) const MAX_PENDING: usize = 64;
/// Bytes read from one connection before turning to the others.
const BUDGET: usize = 1 << 20;

/// Creates the epoll instance with the listener and the owner's waker registered.
pub(crate) fn prepare(listener: &TcpListener) -> io::Result<(Poll, Waker)> {
    let poll = Poll::new()?;
    poll.registry().register(
        &mut SourceFd(&listener.as_raw_fd()),
        LISTENER,
        Interest::READABLE,
    )?;
    let waker = Waker::new(poll.registry(), WAKER)?;
    Ok((poll, waker))
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
            readers: (0..size).map(|_| None).collect(),
            sh: shared,
            poll,
            listener,
            addr,
            pending: HashMap::new(),
            next_token: size,
            again: Vec::new(),
            stalled: Vec::new(),
        }
        .run();
    })
}

struct Engine {
    sh: Arc<Shared>,
    poll: Poll,
    listener: TcpListener,
    addr: Option<SocketAddr>,
    readers: Vec<Option<Reader>>,
    pending: HashMap<usize, Pending>,
    next_token: usize,
    /// Connections that may have more to read (budget spent, or inbox drained).
    again: Vec<usize>,
    /// Connections not read because the inbox is full; resumed when woken.
    stalled: Vec<usize>,
}

impl Engine {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        while !self.sh.stop.load(Ordering::Acquire) {
            let timeout = if !self.again.is_empty() {
                Some(Duration::ZERO)
            } else {
                let now = Instant::now();
                self.pending
                    .values()
                    .map(|p| p.deadline.saturating_duration_since(now))
                    .min()
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
                    Token(r) if r < self.readers.len() => {
                        if ev.is_writable() {
                            self.sh.peers[r].drain(&self.sh.inbox);
                        }
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
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
        }
    }

    /// Reads from peer `r`'s connection and acts on why the reader stopped.
    fn read(&mut self, r: usize) {
        let Some(reader) = self.readers[r].as_mut() else {
            return;
        };
        let (cfg, inbox) = (&self.sh.cfg, &self.sh.inbox);
        match reader.read(inbox, cfg.max_payload, cfg.recv_limit, BUDGET) {
            Outcome::Blocked => {}
            Outcome::Budget => push_once(&mut self.again, r),
            Outcome::Full => {
                if inbox.stall(cfg.recv_limit) {
                    push_once(&mut self.stalled, r);
                } else {
                    push_once(&mut self.again, r);
                }
            }
            Outcome::Bye => {
                self.close(r);
                self.sh.peers[r].left();
                tracing::debug!(peer = r, "tcp: peer said goodbye");
            }
            Outcome::Closed(why) => {
                self.close(r);
                self.sh.peers[r].lost(why, &self.sh.inbox);
            }
            Outcome::Garbage(why) => {
                self.close(r);
                let why = format!("it sent a malformed frame ({why}); connection closed");
                self.sh.peers[r].lost(why, &self.sh.inbox);
            }
        }
    }

    /// Stops watching peer `r`'s connection.
    fn close(&mut self, r: usize) {
        if let Some(reader) = self.readers[r].take() {
            let _ = self
                .poll
                .registry()
                .deregister(&mut SourceFd(&reader.stream.as_raw_fd()));
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
                _ => self.readers.len(),
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
        self.readers[r] = Some(Reader::new(stream, r, Arc::clone(&self.sh.pool)));
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
        let interest = Interest::READABLE | Interest::WRITABLE;
        if was_pending {
            self.poll
                .registry()
                .reregister(&mut SourceFd(&fd), Token(r), interest)
        } else {
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), Token(r), interest)
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
            self.readers[r] = Some(Reader::new(stream, r, Arc::clone(&self.sh.pool)));
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
        for r in 0..self.readers.len() {
            self.close(r);
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
