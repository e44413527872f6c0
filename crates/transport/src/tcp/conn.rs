//! Wire-up of the tcp transport: connecting to every peer ([`TcpTransport::connect`],
//! step 2 of the wire-up in `mod.rs`), and setting up one connection, the hello
//! exchange, from both ends:
//! 1. The lower rank dials the higher one ([`dial`], blocking, bounded by the
//!    wire-up deadline) and sends its hello.
//! 2. The higher rank's progress thread reads that hello without blocking
//!    ([`Pending`]); it must arrive whole within the hello deadline, or the
//!    connection is dropped (no slowloris hang).
//! 3. The acceptor checks magic, version, cookie, job size, packet limit and that the
//!    rank is a lower one not yet connected; anything wrong → the connection is closed
//!    and a warning names the remote address and the reason. Otherwise it answers
//!    with its own hello.
//! 4. The dialler checks that answer the same way (and that it came from the rank it
//!    dialled); only then does either side send packets.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{SockRef, TcpKeepalive};

use super::sync::lock;
use super::wire::{Hello, HELLO_LEN};
use super::TcpTransport;
use crate::error::TransportError;

impl TcpTransport {
    /// Step 2 of wire-up: connects to every peer with an address (indexed by rank;
    /// `None` for ourselves and for peers reached another way). Every rank must call
    /// it with the same table, after a fence that follows everyone's `listen`.
    pub fn connect(&mut self, peers: &[Option<SocketAddr>]) -> Result<(), TransportError> {
        let (me, size) = (self.rank(), self.size());
        if peers.len() != size {
            return Err(TransportError::Config(format!(
                "tcp connect got {} addresses for a job of {size} ranks",
                peers.len()
            )));
        }
        let cfg = &self.sh.cfg;
        let deadline = Instant::now() + cfg.connect_timeout;
        for (p, addr) in peers.iter().enumerate().skip(me + 1) {
            let Some(addr) = *addr else { continue };
            if self.sh.peers[p].was_connected() {
                continue;
            }
            let stream = Arc::new(dial(addr, p, &self.sh.hello, deadline, cfg.dead_after)?);
            self.sh.peers[p].install(Arc::clone(&stream), addr);
            lock(&self.sh.dialled).push((p, stream));
            self.wake()?;
        }
        loop {
            let missing: Vec<usize> = (0..me)
                .filter(|&p| peers[p].is_some() && !self.sh.peers[p].was_connected())
                .collect();
            let Some(&first) = missing.first() else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                return Err(TransportError::WireUp {
                    peer: first,
                    why: format!(
                        "it did not connect to us at {} within {:?} (ranks missing: {missing:?}); \
                         check that it reached wire-up and can reach this address",
                        self.addr, cfg.connect_timeout
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Dials `peer` at `addr`, exchanges hellos, and returns the non-blocking stream.
pub(crate) fn dial(
    addr: SocketAddr,
    peer: usize,
    ours: &Hello,
    deadline: Instant,
    dead_after: Duration,
) -> Result<TcpStream, TransportError> {
    let failed = |why: String| TransportError::Handshake { peer, addr, why };
    let remaining = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| failed("wire-up deadline passed (raise connect_timeout?)".into()))
    };
    let stream = loop {
        match TcpStream::connect_timeout(&addr, remaining()?) {
            Ok(s) => break s,
            // The peer's listener exists before its address is published, but a
            // launcher may let us run ahead: retry a refusal until the deadline.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(10));
                if remaining().is_err() {
                    return Err(failed(format!(
                        "connection refused until the deadline: {e}"
                    )));
                }
            }
            Err(e) => return Err(failed(format!("connect: {e}"))),
        }
    };
    let io = |what: &str, e: io::Error| {
        failed(match e.kind() {
            io::ErrorKind::UnexpectedEof => format!(
                "the peer closed the connection during {what}: it refused our hello \
                 (see its log: another job's cookie, job size or max payload?)"
            ),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                format!("no answer to our hello before the deadline ({what})")
            }
            _ => format!("{what}: {e}"),
        })
    };
    stream
        .set_write_timeout(Some(remaining()?))
        .map_err(|e| io("setting a write timeout", e))?;
    (&stream)
        .write_all(&ours.encode())
        .map_err(|e| io("sending our hello", e))?;
    stream
        .set_read_timeout(Some(remaining()?))
        .map_err(|e| io("setting a read timeout", e))?;
    let mut answer = [0u8; HELLO_LEN];
    (&stream)
        .read_exact(&mut answer)
        .map_err(|e| io("reading the answer", e))?;
    let theirs = Hello::decode(&answer).map_err(failed)?;
    theirs.check_against(ours).map_err(failed)?;
    if theirs.rank as usize != peer {
        return Err(failed(format!(
            "the answer comes from rank {}: the address table is wrong",
            theirs.rank
        )));
    }
    let setup = || -> io::Result<()> {
        stream.set_read_timeout(None)?;
        stream.set_write_timeout(None)?;
        stream.set_nonblocking(true)?;
        tune(&stream, dead_after)
    };
    setup().map_err(|e| io("configuring the socket", e))?;
    Ok(stream)
}

/// Socket options of an established tcp connection: no Nagle delay, and a broken
/// link (peer host gone, cable pulled) detected within about `dead_after` rather than
/// never. The tcp transport's connections use it, and so does `nf-rma`'s service path.
pub fn tune(stream: &impl AsFd, dead_after: Duration) -> io::Result<()> {
    let sock = SockRef::from(stream);
    sock.set_tcp_nodelay(true)?;
    let idle = (dead_after / 3).max(Duration::from_secs(1));
    let every = (dead_after / 6).max(Duration::from_secs(1));
    sock.set_tcp_keepalive(
        &TcpKeepalive::new()
            .with_time(idle)
            .with_interval(every)
            .with_retries(3),
    )?;
    sock.set_tcp_user_timeout(Some(dead_after))
}

/// What became of a pending connection after reading from it.
pub(crate) enum Step {
    /// The hello is not complete yet.
    Wait,
    /// A whole, well-formed hello (not yet checked against the job).
    Hello(Hello),
    /// Give up on this connection, for this reason.
    Fail(String),
}

/// An accepted connection whose hello has not fully arrived.
pub(crate) struct Pending {
    pub(crate) stream: TcpStream,
    pub(crate) remote: SocketAddr,
    pub(crate) deadline: Instant,
    got: [u8; HELLO_LEN],
    n: usize,
}

impl Pending {
    /// A freshly accepted, non-blocking connection.
    pub(crate) fn new(stream: TcpStream, remote: SocketAddr, deadline: Instant) -> Pending {
        Pending {
            stream,
            remote,
            deadline,
            got: [0; HELLO_LEN],
            n: 0,
        }
    }

    /// Reads what has arrived of the hello (never beyond it: packets that follow
    /// belong to the connection's reader).
    pub(crate) fn advance(&mut self) -> Step {
        while self.n < HELLO_LEN {
            match (&self.stream).read(&mut self.got[self.n..]) {
                Ok(0) => {
                    return Step::Fail(format!(
                        "closed after {} of the {HELLO_LEN} hello bytes",
                        self.n
                    ))
                }
                Ok(k) => self.n += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Step::Fail(format!("reading its hello: {e}")),
            }
        }
        match Hello::decode(&self.got) {
            Ok(h) => Step::Hello(h),
            Err(why) => Step::Fail(why),
        }
    }

    /// Checks a complete hello against our job: the peer must be a lower rank
    /// (lower ranks dial higher ones).
    pub(crate) fn judge(theirs: &Hello, ours: &Hello) -> Result<(), String> {
        theirs.check_against(ours)?;
        if theirs.rank >= ours.rank {
            return Err(format!(
                "rank {} dialled rank {}, but only lower ranks dial higher ones",
                theirs.rank, ours.rank
            ));
        }
        Ok(())
    }

    /// Answers an accepted hello with ours and readies the socket for traffic.
    pub(crate) fn answer(&self, ours: &Hello, dead_after: Duration) -> Result<(), String> {
        match (&self.stream).write(&ours.encode()) {
            Ok(HELLO_LEN) => {}
            Ok(k) => return Err(format!("could send only {k} bytes of our hello")),
            Err(e) => return Err(format!("sending our hello: {e}")),
        }
        tune(&self.stream, dead_after).map_err(|e| format!("configuring the socket: {e}"))
    }
}
