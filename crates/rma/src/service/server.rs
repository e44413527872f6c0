//! The service thread: applies other domains' requests to this proc's memory.
//!
//! One turn of its loop:
//! 1. Wait in epoll. The timeout is [`LOCK_POLL`] while lock requests wait for their
//!    ticket (a same-domain proc's unlock is a store in shared memory and wakes no
//!    one), else none: an idle service costs nothing.
//! 2. Listener readable → accept every waiting connection.
//! 3. Connection ready → flush its unsent replies; apply every whole request in its
//!    buffer, in order (the first one must be the hello); read more; repeat until
//!    the socket has nothing more (epoll is edge-triggered) or the unsent replies
//!    exceed [`OUT_LIMIT`] (then stop reading until it is writable: the origin reads
//!    replies whenever its own writes stall, so this cannot deadlock).
//! 4. Grant the lock requests whose ticket came up; skip the tickets of origins whose
//!    connection is gone, so one dead waiter does not block the line.
//! 5. Woken with `stop` set → return; dropping the sockets closes every connection.
//!
//! A request the protocol cannot frame closes its connection (logged); a well-framed
//! request naming memory outside this proc's segments is refused with a reply that
//! says why, and changes nothing.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token, Waker};

use super::conn::{Conn, End};
use super::wire::Hello;
use crate::error::RmaError;
use crate::shm::control::Control;
use crate::shm::lock::{mark_holder, poison_held, poisoned_by, served, skip, Patience};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX);
/// How often waiting lock requests are checked (step 1).
const LOCK_POLL: Duration = Duration::from_micros(100);

/// What the owner and the service thread share.
pub(crate) struct Shared {
    /// Our hello: job cookie, our rank, job size.
    pub hello: Hello,
    /// This proc's live segments as (base, len); base is also our own pointer.
    pub own: RwLock<Vec<(u64, u64)>>,
    /// This proc's control segment.
    pub ctl: Arc<Control>,
    /// How to wait for stripe locks.
    pub patience: Patience,
    /// Our pid (stamped into the locks we take).
    pub pid: u32,
    /// Set by the owner to end the thread.
    pub stop: AtomicBool,
    /// A connection whose peer stops acknowledging is lost after about this.
    pub dead_after: std::time::Duration,
}

/// A running service thread; stopped and joined when dropped.
pub(crate) struct Service {
    shared: Arc<Shared>,
    waker: Waker,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

fn io_err(what: String) -> impl FnOnce(io::Error) -> RmaError {
    move |source| RmaError::Io { what, source }
}

impl Service {
    /// Binds and opens a listener on `(bind, any port)`, before the thread exists, so
    /// its address can go out with the proc's introduction (peers that dial it before
    /// [`Service::start`] wait in its backlog).
    pub(crate) fn listen(bind: IpAddr) -> Result<std::net::TcpListener, RmaError> {
        let want = SocketAddr::new(bind, 0);
        let listener = std::net::TcpListener::bind(want).map_err(io_err(format!(
            "binding the rma service listener on {want}"
        )))?;
        listener
            .set_nonblocking(true)
            .map_err(io_err(format!("configuring the listener on {want}")))?;
        Ok(listener)
    }

    /// Starts the thread on a listener from [`Service::listen`].
    pub(crate) fn start(
        std_listener: std::net::TcpListener,
        shared: Arc<Shared>,
    ) -> Result<Service, RmaError> {
        let addr = std_listener
            .local_addr()
            .map_err(io_err("reading the address of the service listener".into()))?;
        let mut listener = TcpListener::from_std(std_listener);
        let poll = Poll::new().map_err(io_err("creating the service's epoll".into()))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(io_err("registering the service listener".into()))?;
        let waker = Waker::new(poll.registry(), WAKER)
            .map_err(io_err("creating the service's waker".into()))?;
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("nf-rma-{}", shared.hello.rank))
            .spawn(move || {
                Server {
                    sh,
                    poll,
                    listener,
                    conns: HashMap::new(),
                    next: 0,
                    waiters: Vec::new(),
                }
                .run()
            })
            .map_err(io_err("starting the service thread".into()))?;
        Ok(Service {
            shared,
            waker,
            thread: Some(thread),
            addr,
        })
    }

    /// The address origins connect to.
    #[cfg(test)]
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                tracing::warn!(addr = %self.addr, "rma service thread did not stop; leaving it");
            }
        }
    }
}

/// A lock request waiting for its ticket.
pub(crate) struct LockWait {
    pub token: Token,
    pub origin: usize,
    pub id: u64,
    pub mutex: usize,
    pub ticket: u32,
}

struct Server {
    sh: Arc<Shared>,
    poll: Poll,
    listener: TcpListener,
    conns: HashMap<Token, Conn>,
    next: usize,
    waiters: Vec<LockWait>,
}

impl Server {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        loop {
            let timeout = (!self.waiters.is_empty()).then_some(LOCK_POLL);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                tracing::error!(error = %e, "rma service: epoll failed; service stops");
                return;
            }
            if self.sh.stop.load(Ordering::Acquire) {
                return;
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    t => self.serve(t),
                }
            }
            self.grant_locks();
        }
    }

    fn accept(&mut self) {
        loop {
            let (mut stream, peer) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::warn!(error = %e, "rma service: accept failed");
                    return;
                }
            };
            if let Err(e) = super::tune(&stream, self.sh.dead_after) {
                tracing::warn!(%peer, error = %e, "rma service: cannot configure connection; closed");
                continue;
            }
            let token = Token(self.next);
            self.next += 1;
            if let Err(e) = self.poll.registry().register(
                &mut stream,
                token,
                Interest::READABLE | Interest::WRITABLE,
            ) {
                tracing::warn!(%peer, error = %e, "rma service: cannot watch connection; closed");
                continue;
            }
            self.conns.insert(token, Conn::new(stream, peer));
        }
    }

    fn serve(&mut self, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if let Err(end) = conn.pump(&self.sh, &mut self.waiters, token) {
            match end {
                End::Closed => tracing::debug!(peer = %conn.peer, "rma service: origin closed"),
                End::Fault(why) => tracing::warn!(
                    peer = %conn.peer,
                    origin = ?conn.origin,
                    "rma service: closing connection: {why}"
                ),
            }
            let mut conn = self.conns.remove(&token).expect("present");
            let _ = self.poll.registry().deregister(&mut conn.stream);
            if let Some(origin) = conn.origin {
                let ctl = &self.sh.ctl;
                let n = ctl.header().nmutex.load(Ordering::Acquire) as usize;
                let held = poison_held(ctl, n, origin);
                if held > 0 {
                    tracing::warn!(
                        origin,
                        "rma service: proc {origin} left holding {held} mutex(es); their \
                         waiters get an error"
                    );
                }
            }
        }
    }

    fn grant_locks(&mut self) {
        let ctl = &self.sh.ctl;
        let conns = &mut self.conns;
        let rank = self.sh.hello.rank;
        self.waiters.retain(|w| {
            let word = ctl.mutex(w.mutex);
            if let Some(gone) = poisoned_by(word) {
                if let Some(c) = conns.get_mut(&w.token) {
                    let why = format!(
                        "lock: mutex {} of proc {rank}: proc {gone} left the job holding it",
                        w.mutex
                    );
                    c.reply(false, w.id, why.as_bytes());
                    let _ = c.flush();
                }
                return false;
            }
            if !served(word, w.ticket) {
                return true;
            }
            match conns.get_mut(&w.token) {
                Some(c) => {
                    mark_holder(word, w.origin);
                    c.reply(true, w.id, &[]);
                    // What the socket does not take now goes at its next writable event.
                    let _ = c.flush();
                }
                None => skip(word),
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    //! A real service thread on loopback, spoken to with raw sockets: strangers and
    //! garbage are shut out, bad requests refused with reasons, and it keeps serving.

    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpStream};

    use nf_core::wait::Waiter;
    use nf_core::WaitMode;

    use super::*;
    use crate::service::wire::{self, entry, Op, Rep, Req, HELLO_LEN, REP_LEN};
    use crate::shm::control;
    use crate::shm::map::Mapping;

    const COOKIE: u64 = 42;
    /// The fixture's `NF_DEAD_AFTER_MS`, unlike the default and the origin's below.
    const SERVICE_DEAD_AFTER: Duration = Duration::from_millis(3_000);

    /// The tcp user timeout of socket `fd`.
    fn user_timeout(fd: std::os::fd::BorrowedFd<'_>) -> Option<Duration> {
        socket2::SockRef::from(&fd).tcp_user_timeout().unwrap()
    }

    #[test]
    fn both_ends_of_a_service_connection_take_nf_dead_after_ms() {
        use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
        let f = fixture();
        let origin_dead_after = Duration::from_millis(7_000);
        let ours = Hello {
            cookie: COOKIE,
            rank: 1,
            size: 2,
        };
        let conn =
            crate::origin::Conn::dial(f.service.addr(), &ours, 0, origin_dead_after).unwrap();
        assert_eq!(user_timeout(conn.stream().as_fd()), Some(origin_dead_after));
        // The service's end is a socket of this very process: the one whose peer is
        // the origin's end.
        let origin_end = conn.stream().local_addr().unwrap();
        let service_end = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&fd| fd != conn.stream().as_raw_fd())
            .find_map(|fd| {
                // SAFETY: the fd is open (listed just now) and only read from here, while
                // the fixture that owns it lives.
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                let peer = socket2::SockRef::from(&fd).peer_addr().ok()?.as_socket()?;
                (peer == origin_end).then(|| user_timeout(fd))
            });
        assert_eq!(service_end, Some(Some(SERVICE_DEAD_AFTER)));
    }

    struct Fixture {
        service: Service,
        memory: Vec<u8>,
        _dir: tempfile::TempDir,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ctl = Control::new(Mapping::create(&dir.path().join("ctl"), control::SIZE).unwrap());
        ctl.init(std::process::id());
        let memory: Vec<u8> = (0..4096).map(|i| i as u8).collect();
        let shared = Arc::new(Shared {
            hello: Hello {
                cookie: COOKIE,
                rank: 0,
                size: 2,
            },
            own: RwLock::new(vec![(memory.as_ptr() as u64, memory.len() as u64)]),
            ctl: Arc::new(ctl),
            patience: Patience::new(
                Waiter::new(WaitMode::Yield, 1, None, None),
                Duration::from_millis(50),
                Arc::new(vec![0, 0]),
            ),
            pid: std::process::id(),
            stop: AtomicBool::new(false),
            dead_after: SERVICE_DEAD_AFTER,
        });
        let service = Service::start(
            Service::listen(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap(),
            shared,
        )
        .unwrap();
        Fixture {
            service,
            memory,
            _dir: dir,
        }
    }

    fn connect(f: &Fixture) -> TcpStream {
        let s = TcpStream::connect(f.service.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    fn greet(f: &Fixture) -> TcpStream {
        let mut s = connect(f);
        let ours = Hello {
            cookie: COOKIE,
            rank: 1,
            size: 2,
        };
        s.write_all(&ours.encode()).unwrap();
        let mut b = [0u8; HELLO_LEN];
        s.read_exact(&mut b).unwrap();
        assert_eq!(Hello::decode(&b, &ours).unwrap().rank, 0);
        s
    }

    /// The service closed the connection: a read sees the end (or a reset).
    fn closed(s: &mut TcpStream) -> bool {
        let mut b = [0u8; 64];
        matches!(s.read(&mut b), Ok(0) | Err(_))
    }

    fn request(s: &mut TcpStream, req: Req, entries: &[(u64, u64)], data: &[u8]) -> (Rep, Vec<u8>) {
        let mut frame = req.encode().to_vec();
        for &(a, l) in entries {
            frame.extend_from_slice(&entry(a, l));
        }
        frame.extend_from_slice(data);
        s.write_all(&frame).unwrap();
        let mut h = [0u8; REP_LEN];
        s.read_exact(&mut h).unwrap();
        let rep = Rep::decode(&h).unwrap();
        let mut body = vec![0u8; rep.data_len as usize];
        s.read_exact(&mut body).unwrap();
        (rep, body)
    }

    fn get(id: u64, n: u32) -> Req {
        Req {
            nseg: n,
            ..Req::bare(Op::Get, id)
        }
    }

    #[test]
    fn strangers_and_garbage_are_shut_out_and_bad_requests_refused() {
        let f = fixture();
        let base = f.memory.as_ptr() as u64;

        let mut stranger = connect(&f);
        let wrong = Hello {
            cookie: COOKIE + 1,
            rank: 1,
            size: 2,
        };
        stranger.write_all(&wrong.encode()).unwrap();
        assert!(
            closed(&mut stranger),
            "a hello with another job's cookie is refused"
        );
        let mut junk = connect(&f);
        junk.write_all(&[0xAB; HELLO_LEN]).unwrap();
        assert!(closed(&mut junk), "garbage instead of a hello is refused");

        let mut s = greet(&f);
        let (rep, why) = request(&mut s, get(1, 1), &[(base + 4090, 8)], &[]);
        assert!(!rep.ok && rep.id == 1);
        assert!(String::from_utf8_lossy(&why).contains("not inside any segment of proc 0"));
        let (rep, data) = request(&mut s, get(2, 2), &[(base + 10, 3), (base + 100, 2)], &[]);
        assert!(rep.ok);
        assert_eq!(data, [10, 11, 12, 100, 101]);
        let put = Req {
            nseg: 1,
            data_len: 2,
            ..Req::bare(Op::Put, 3)
        };
        let fence = Req::bare(Op::Fence, 4);
        let mut frame = put.encode().to_vec();
        frame.extend_from_slice(&entry(base + 200, 2));
        frame.extend_from_slice(&[7, 9]);
        s.write_all(&frame).unwrap();
        assert!(request(&mut s, fence, &[], &[]).0.ok, "fence after put");
        let (_, data) = request(&mut s, get(5, 1), &[(base + 199, 4)], &[]);
        assert_eq!(data, [199, 7, 9, 202], "the put landed in order");
        let (etype, arg) = wire::encode_rmw(crate::xfer::RmwOp::FetchAddInt(1));
        let rmw = Req {
            etype,
            arg,
            nseg: 1,
            ..Req::bare(Op::Rmw, 6)
        };
        let (rep, why) = request(&mut s, rmw, &[(base + 2, 4)], &[]);
        assert!(!rep.ok && String::from_utf8_lossy(&why).contains("aligned"));
        let mut lock = Req::bare(Op::Lock, 7);
        lock.arg[0] = 3;
        let (rep, why) = request(&mut s, lock, &[], &[]);
        assert!(
            !rep.ok && String::from_utf8_lossy(&why).contains("mutex 3 of proc 0 does not exist")
        );

        let mut bad = Req::bare(Op::Fence, 8).encode();
        bad[0] = 99;
        s.write_all(&bad).unwrap();
        assert!(closed(&mut s), "an unknown operation closes the connection");
        let mut again = greet(&f);
        let (rep, data) = request(&mut again, get(9, 1), &[(base, 4)], &[]);
        assert!(rep.ok && data == [0, 1, 2, 3], "the service keeps serving");
    }
}
