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
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use super::wire::{self, Hello, Op, Rep, Req, ENTRY_LEN, HELLO_LEN, MAX_DATA, REQ_LEN};
use crate::apply::{self, Applier, Target};
use crate::error::RmaError;
use crate::shm::control::Control;
use crate::shm::lock::{mark_holder, release, served, skip, take_ticket, Patience};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX);
/// Unsent reply bytes per connection before we stop reading its requests.
const OUT_LIMIT: usize = 16 << 20;
/// Smallest read buffer growth.
const READ_CHUNK: usize = 256 << 10;
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
    /// Binds a listener on `(bind, any port)` and starts the thread.
    pub(crate) fn start(bind: IpAddr, shared: Arc<Shared>) -> Result<Service, RmaError> {
        let want = SocketAddr::new(bind, 0);
        let std_listener = std::net::TcpListener::bind(want).map_err(io_err(format!(
            "binding the rma service listener on {want}"
        )))?;
        let addr = std_listener.local_addr().map_err(io_err(format!(
            "reading the address of the listener on {want}"
        )))?;
        std_listener
            .set_nonblocking(true)
            .map_err(io_err(format!("configuring the listener on {addr}")))?;
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
struct LockWait {
    token: Token,
    origin: usize,
    id: u64,
    mutex: usize,
    ticket: u32,
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
            if let Err(e) = super::tune(&stream) {
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
        }
    }

    fn grant_locks(&mut self) {
        let ctl = &self.sh.ctl;
        let conns = &mut self.conns;
        self.waiters.retain(|w| {
            let word = ctl.mutex(w.mutex);
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

/// Why a connection ends.
enum End {
    /// The origin closed it between requests.
    Closed,
    /// Something broke; the reason is logged.
    Fault(String),
}

/// One origin's connection: its unread bytes and unsent replies.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    origin: Option<usize>,
    /// Bytes `lo..hi` are received and not yet applied.
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    /// Bytes of the frame being assembled, once its header is known.
    want: usize,
    /// Unsent reply bytes are `out[sent..]`.
    out: Vec<u8>,
    sent: usize,
}

impl Conn {
    fn new(stream: TcpStream, peer: SocketAddr) -> Conn {
        Conn {
            stream,
            peer,
            origin: None,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
            want: HELLO_LEN,
            out: Vec::new(),
            sent: 0,
        }
    }

    fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Step 3 of the loop for this connection.
    fn pump(&mut self, sh: &Shared, waiters: &mut Vec<LockWait>, token: Token) -> Result<(), End> {
        loop {
            self.flush()?;
            if self.unsent() > OUT_LIMIT {
                return Ok(());
            }
            self.apply_frames(sh, waiters, token)?;
            if self.unsent() > OUT_LIMIT {
                continue;
            }
            match self.read_more() {
                Ok(0) if self.hi == self.lo => return Err(End::Closed),
                Ok(0) => return Err(End::Fault("connection closed inside a request".into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.flush(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(End::Fault(format!("read failed: {e}"))),
            }
        }
    }

    fn flush(&mut self) -> Result<(), End> {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(End::Fault("socket accepts no more bytes".into())),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(End::Fault(format!("write failed: {e}"))),
            }
        }
        self.out.clear();
        self.sent = 0;
        Ok(())
    }

    fn read_more(&mut self) -> io::Result<usize> {
        if self.hi == self.buf.len() {
            if self.lo > 0 {
                self.buf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
            }
            if self.hi == self.buf.len() {
                let grow = self.want.saturating_sub(self.hi).max(READ_CHUNK);
                self.buf.resize(self.buf.len() + grow, 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.hi..])?;
        self.hi += n;
        Ok(n)
    }

    fn reply(&mut self, ok: bool, id: u64, data: &[u8]) {
        super::push_reply(&mut self.out, ok, id, data);
    }

    fn apply_frames(
        &mut self,
        sh: &Shared,
        waiters: &mut Vec<LockWait>,
        token: Token,
    ) -> Result<(), End> {
        loop {
            let avail = self.hi - self.lo;
            let Some(origin) = self.origin else {
                if avail < HELLO_LEN {
                    return Ok(());
                }
                let b: &[u8; HELLO_LEN] = self.buf[self.lo..self.lo + HELLO_LEN]
                    .try_into()
                    .expect("len");
                let theirs = Hello::decode(b, &sh.hello)
                    .map_err(|why| End::Fault(format!("refused hello: {why}")))?;
                self.lo += HELLO_LEN;
                self.origin = Some(theirs.rank as usize);
                self.out.extend_from_slice(&sh.hello.encode());
                continue;
            };
            if avail < REQ_LEN {
                self.want = REQ_LEN;
                return Ok(());
            }
            let h: &[u8; REQ_LEN] = self.buf[self.lo..self.lo + REQ_LEN]
                .try_into()
                .expect("len");
            let req = Req::decode(h).map_err(|why| End::Fault(format!("bad request: {why}")))?;
            let total = REQ_LEN + req.body_len();
            if avail < total {
                self.want = total;
                return Ok(());
            }
            let body = &self.buf[self.lo + REQ_LEN..self.lo + total];
            let mut ctx = Ctx {
                sh,
                origin,
                out: &mut self.out,
                waiters,
                token,
            };
            ctx.handle(&req, body)?;
            self.lo += total;
            if self.unsent() > OUT_LIMIT {
                return Ok(());
            }
        }
    }
}

/// Everything one request may touch.
struct Ctx<'a> {
    sh: &'a Shared,
    origin: usize,
    out: &'a mut Vec<u8>,
    waiters: &'a mut Vec<LockWait>,
    token: Token,
}

impl Ctx<'_> {
    fn reply(&mut self, ok: bool, id: u64, data: &[u8]) {
        super::push_reply(self.out, ok, id, data);
    }

    fn refuse(&mut self, id: u64, why: String) {
        self.reply(false, id, why.as_bytes());
    }

    fn handle(&mut self, req: &Req, body: &[u8]) -> Result<(), End> {
        let (ents, data) = body.split_at(req.nseg as usize * ENTRY_LEN);
        match req.op {
            Op::Put | Op::Get | Op::Acc => self.memory(req, ents, data),
            Op::Rmw => {
                self.rmw(req, ents);
                Ok(())
            }
            Op::Fence => {
                self.reply(true, req.id, &[]);
                Ok(())
            }
            Op::Lock | Op::Unlock => {
                self.mutex(req);
                Ok(())
            }
        }
    }

    /// Put, get and accumulate: check every entry, then apply.
    fn memory(&mut self, req: &Req, ents: &[u8], data: &[u8]) -> Result<(), End> {
        let n = req.nseg as usize;
        let op = match req.op {
            Op::Put => "put",
            Op::Get => "get",
            _ => "acc",
        };
        let scale = match req.op {
            Op::Acc => match wire::decode_scale(req.etype, &req.arg) {
                Some(s) => Some(s),
                None => {
                    self.refuse(req.id, format!("acc: unknown element type {}", req.etype));
                    return Ok(());
                }
            },
            _ => None,
        };
        let elem = scale.map_or(1, |s| s.elem_size() as u64);
        let sh = self.sh;
        let own = sh.own.read().unwrap_or_else(|p| p.into_inner());
        let mut total = 0u64;
        for i in 0..n {
            let (addr, len) = wire::entry_at(ents, i);
            let inside = own
                .iter()
                .any(|&(b, l)| addr >= b && len <= l && addr - b <= l - len);
            if len == 0 || !inside {
                self.refuse(
                    req.id,
                    format!(
                        "{op}: entry {i}: range {addr:#x}+{len} B is not inside any segment of \
                         proc {}",
                        sh.hello.rank
                    ),
                );
                return Ok(());
            }
            if len % elem != 0 {
                self.refuse(
                    req.id,
                    format!("{op}: entry {i}: {len} B is not a multiple of {elem} B"),
                );
                return Ok(());
            }
            total += len;
        }
        if req.op != Op::Get && total != data.len() as u64 {
            return Err(End::Fault(format!(
                "{op} entries cover {total} B but {} B of data came",
                data.len()
            )));
        }
        if req.op == Op::Get && (n == 0 || total > MAX_DATA) {
            self.refuse(
                req.id,
                format!("get of {total} B in {n} entries is out of bounds"),
            );
            return Ok(());
        }
        let applier = Applier {
            pid: sh.pid,
            patience: &sh.patience,
        };
        if req.op == Op::Get {
            self.out.extend_from_slice(
                &Rep {
                    ok: true,
                    id: req.id,
                    data_len: total,
                }
                .encode(),
            );
        }
        let mut off = 0usize;
        for i in 0..n {
            let (addr, len) = wire::entry_at(ents, i);
            let (p, len) = (addr as *mut u8, len as usize);
            match (req.op, scale) {
                (Op::Put, _) => {
                    // SAFETY: addr..addr+len lies in one of our live segments (checked
                    // above under the read lock we still hold, so it cannot be unmapped).
                    unsafe { std::ptr::copy_nonoverlapping(data[off..].as_ptr(), p, len) }
                }
                (Op::Get, _) => {
                    // SAFETY: as for put; reading our own mapped memory.
                    let src = unsafe { std::slice::from_raw_parts(p, len) };
                    self.out.extend_from_slice(src);
                }
                (_, Some(scale)) => {
                    let t = Target {
                        ctl: &sh.ctl,
                        owner_addr: addr,
                        local: p,
                    };
                    // SAFETY: as for put; the data slice holds `len` bytes at `off`.
                    let r = unsafe { apply::acc(&t, &applier, scale, data[off..].as_ptr(), len) };
                    if let Err(e) = r {
                        self.refuse(req.id, e.to_string());
                        return Ok(());
                    }
                }
                _ => unreachable!("accumulate always has a scale"),
            }
            off += len;
        }
        Ok(())
    }

    fn rmw(&mut self, req: &Req, ents: &[u8]) {
        let Some(op) = wire::decode_rmw(req.etype, &req.arg) else {
            return self.refuse(req.id, format!("rmw: unknown kind {}", req.etype));
        };
        if req.nseg != 1 {
            return self.refuse(req.id, format!("rmw: {} entries, expected 1", req.nseg));
        }
        let (addr, len) = wire::entry_at(ents, 0);
        let size = op.size() as u64;
        let sh = self.sh;
        let own = sh.own.read().unwrap_or_else(|p| p.into_inner());
        let inside = own
            .iter()
            .any(|&(b, l)| addr >= b && size <= l && addr - b <= l - size);
        if len != size || !inside || addr % size != 0 {
            let why = format!(
                "rmw: {addr:#x}+{len} B is not an aligned {size} B integer inside a segment of \
                 proc {}",
                sh.hello.rank
            );
            return self.refuse(req.id, why);
        }
        let t = Target {
            ctl: &sh.ctl,
            owner_addr: addr,
            local: addr as *mut u8,
        };
        let applier = Applier {
            pid: sh.pid,
            patience: &sh.patience,
        };
        // SAFETY: the integer lies in our live segment (checked under the read lock still
        // held) and is aligned to its size.
        match unsafe { apply::rmw(&t, &applier, op) } {
            Ok(old) => self.reply(true, req.id, &old.to_le_bytes()),
            Err(e) => self.refuse(req.id, e.to_string()),
        }
    }

    fn mutex(&mut self, req: &Req) {
        let m = req.arg_u64() as usize;
        let ctl = &self.sh.ctl;
        let have = ctl.header().nmutex.load(Ordering::Acquire) as usize;
        let op = if req.op == Op::Lock { "lock" } else { "unlock" };
        if m >= have {
            let why = format!(
                "{op}: mutex {m} of proc {} does not exist (that proc has {have})",
                self.sh.hello.rank
            );
            return self.refuse(req.id, why);
        }
        let word = ctl.mutex(m);
        if req.op == Op::Unlock {
            if !release(word, self.origin) {
                let why = format!(
                    "unlock: mutex {m} of proc {} is not held by proc {}",
                    self.sh.hello.rank, self.origin
                );
                self.refuse(req.id, why);
            }
            return;
        }
        let ticket = take_ticket(word);
        if served(word, ticket) {
            mark_holder(word, self.origin);
            self.reply(true, req.id, &[]);
        } else {
            self.waiters.push(LockWait {
                token: self.token,
                origin: self.origin,
                id: req.id,
                mutex: m,
                ticket,
            });
        }
    }
}
