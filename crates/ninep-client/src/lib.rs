//! A blocking 9P2000.L client, after diod's libnpclient: one file per operation family.
//! It needs only the codec (`nf-ninep`) and the byte transports of `nf-link`.
//!
//! ```no_run
//! use nf_ninep_client::Client;
//! use nf_ninep::LOpenFlags;
//!
//! let client = Client::connect_tcp("127.0.0.1:5640")?;
//! let root = client.attach("glenda", "")?;
//! for entry in root.readdir("/")? {
//!     println!("{}", entry.name);
//! }
//! let mut file = root.open("/status", LOpenFlags::RDONLY)?;
//! let text = file.read_to_end()?;
//! root.write_file("/notes/today", b"hello\n")?;
//! # Ok::<(), nf_ninep_client::ClientError>(())
//! ```
//!
//! | file | operations |
//! |---|---|
//! | [`connect`] | an address (`unix:`, `tcp:`, `tls:`, `shm:`) → a [`Client`] or an attached [`Root`] |
//! | `session` | version (on connect), attach → [`Root`] |
//! | `fid` | [`Fid`]: a handle that clunks itself when dropped |
//! | `walk` | walking paths (any length, 16 names per message) |
//! | `open` | lopen, lcreate → [`File`] |
//! | `read`, `write` | reads and writes, chunked to the negotiated msize / iounit |
//! | `dir` | readdir → [`DirEntry`] |
//! | `attr` | getattr → [`Stat`], setattr, statfs |
//! | `copy` | whole files to and from local readers and writers and between remote files, [`Root::open_for_write`] |
//! | `ahead`, `behind` | reads ahead and writes behind: several messages of one copy in flight |
//! | `fileops` | mkdir, remove, unlink, rename, symlink, readlink, fsync |
//! | `rpc` | tags, the reader thread, [`PendingCall`] and flush |
//! | `reply`, `sync` | a call's reply slot; rpc's locks (loom's in the model checks, `loom_tests`) |
//!
//! A [`Client`] is cheap to clone and may be used from many threads at once: calls are
//! multiplexed over the one connection, each under its own tag. Paths are `/`-separated
//! and relative to the attach root; `.` and empty elements are ignored, `..` is sent to
//! the server (which stops it at the root). Symlinks are not followed.

#![forbid(unsafe_code)]

mod ahead;
mod attr;
mod behind;
pub mod connect;
mod copy;
mod dir;
mod error;
mod fid;
mod fileops;
mod open;
mod read;
mod reply;
mod rpc;
mod session;
mod sync;
mod walk;
mod write;

#[cfg(all(test, loom))]
mod loom_tests;

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

pub use ahead::DEFAULT_DEPTH as READ_AHEAD;
pub use attr::Stat;
pub use behind::DEFAULT_DEPTH as WRITE_BEHIND;
pub use copy::{base_name, CopyError, FileCopyError};
pub use dir::DirEntry;
pub use error::ClientError;
pub use fid::Fid;
pub use open::File;
pub use read::PendingReads;
pub use rpc::PendingCall;
pub use session::Root;

use nf_link::Transport;
use nf_ninep::message::{Message, Rlerror, Rmessage, Tmessage};
use nf_ninep::types::NOFID;
use nf_ninep::version::DEFAULT_MAX_MSIZE;
use rpc::Rpc;

/// Settings of a client connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The msize to ask for (the server may offer less). Default 1 MiB.
    pub msize: u32,
    /// How long connecting (tcp) and the version exchange may take: a listener that
    /// never answers is an error ([`ClientError::TimedOut`]), not a hang. Default 10 s.
    pub connect_timeout: Duration,
    /// How long any later reply may take; `None` (the default): as long as it takes,
    /// since reading a pipe or following a log legitimately waits.
    pub reply_timeout: Option<Duration>,
}

/// Default [`ClientConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            msize: DEFAULT_MAX_MSIZE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reply_timeout: None,
        }
    }
}

struct Inner {
    rpc: Arc<Rpc>,
    reply_timeout: Option<Duration>,
    /// The connect timeout, which also bounds `Tattach` (part of connecting).
    handshake: Duration,
    next_fid: AtomicU32,
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.rpc.close();
        let reader = self
            .reader
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(reader) = reader {
            let _ = reader.join();
        }
    }
}

/// A connection to a 9P2000.L server. Clones share the connection, which closes when
/// the last clone (and every [`Fid`], [`File`] and [`Root`] made from it) is dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("msize", &self.msize())
            .finish()
    }
}

impl Client {
    /// Connects over TCP and negotiates the version with the default settings.
    pub fn connect_tcp(addr: impl ToSocketAddrs + fmt::Display) -> Result<Client, ClientError> {
        Client::connect_tcp_with(addr, ClientConfig::default())
    }

    /// Connects over TCP with `config`.
    pub fn connect_tcp_with(
        addr: impl ToSocketAddrs + fmt::Display,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let stream = connect_tcp_stream(addr, config.connect_timeout)?;
        let _ = stream.set_nodelay(true);
        Client::with_transport(stream, config)
    }

    /// Connects to a unix socket and negotiates the version with the default settings.
    pub fn connect_unix(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        Client::connect_unix_with(path, ClientConfig::default())
    }

    /// Connects to a unix socket with `config`.
    pub fn connect_unix_with(
        path: impl AsRef<Path>,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path).map_err(|error| ClientError::Connect {
            addr: format!("unix:{}", path.display()),
            error,
        })?;
        Client::with_transport(stream, config)
    }

    /// Negotiates the version over an already connected transport.
    pub fn with_transport(
        transport: impl Transport,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let transport: Arc<dyn Transport> = Arc::new(transport);
        let msize = within(&transport, config.connect_timeout, || {
            session::version(&*transport, config.msize)
        })
        .inspect_err(|_| transport.close())?;
        let rpc = Rpc::new(transport, msize);
        let reader_rpc = Arc::clone(&rpc);
        let reader = thread::Builder::new()
            .name("9p-client-reader".into())
            .spawn(move || reader_rpc.read_replies())
            .map_err(ClientError::Io)?;
        Ok(Client {
            inner: Arc::new(Inner {
                rpc,
                reply_timeout: config.reply_timeout,
                handshake: config.connect_timeout,
                next_fid: AtomicU32::new(0),
                reader: Mutex::new(Some(reader)),
            }),
        })
    }

    /// How long connecting may take; it bounds `Tattach` as well.
    pub(crate) fn handshake_timeout(&self) -> Duration {
        self.inner.reply_timeout.unwrap_or(self.inner.handshake)
    }

    /// How long a reply may take ([`ClientConfig::reply_timeout`]).
    pub(crate) fn reply_timeout(&self) -> Option<Duration> {
        self.inner.reply_timeout
    }

    /// The negotiated msize.
    pub fn msize(&self) -> u32 {
        self.inner.rpc.msize()
    }

    /// Closes the connection: every call in flight and every later one fails with
    /// [`ClientError::Disconnected`] (a watchdog's answer to a server that stopped
    /// answering).
    pub fn close(&self) {
        self.inner.rpc.close();
    }

    /// True once the connection has failed or been closed.
    pub fn is_closed(&self) -> bool {
        self.inner.rpc.is_closed()
    }

    /// Sends a raw request and returns the call to wait on (or flush).
    pub fn start(&self, msg: impl Into<Tmessage>) -> Result<PendingCall, ClientError> {
        let msg = msg.into();
        self.inner.rpc.start(msg.msg_type().name(), &msg)
    }

    /// Sends `msg`, borrowed (a write's buffer goes back to its owner), for `op`.
    pub(crate) fn start_message(
        &self,
        op: &'static str,
        msg: &Tmessage,
    ) -> Result<PendingCall, ClientError> {
        self.inner.rpc.start(op, msg)
    }

    /// Sends a read whose data the reader thread copies into `sink` (see `rpc.rs`).
    pub(crate) fn start_into(
        &self,
        msg: nf_ninep::message::Tread,
        sink: rpc::Sink,
    ) -> Result<PendingCall, ClientError> {
        self.inner.rpc.start_with("read", &msg.into(), Some(sink))
    }

    /// Stops the reader from writing into the sink of call `tag`, if it still has one.
    pub(crate) fn unsink(&self, tag: u16) {
        self.inner.rpc.unsink(tag);
    }

    /// Sends a raw request and waits for its reply (`Rlerror` included).
    pub fn call(&self, msg: impl Into<Tmessage>) -> Result<Rmessage, ClientError> {
        self.start(msg)?.wait()
    }

    /// Sends `msg` for operation `op` and picks the expected reply out of the answer
    /// (`None` from `pick`: a reply of the wrong type).
    pub(crate) fn request<R>(
        &self,
        op: &'static str,
        msg: impl Into<Tmessage>,
        pick: impl FnOnce(Rmessage) -> Option<R>,
    ) -> Result<R, ClientError> {
        self.request_within(op, msg, pick, self.inner.reply_timeout)
    }

    /// [`Client::request`] waiting at most `limit` for the reply (`None`: no limit).
    pub(crate) fn request_within<R>(
        &self,
        op: &'static str,
        msg: impl Into<Tmessage>,
        pick: impl FnOnce(Rmessage) -> Option<R>,
        limit: Option<Duration>,
    ) -> Result<R, ClientError> {
        let call = self.inner.rpc.start(op, &msg.into())?;
        self.finish(op, call, pick, limit)
    }

    /// Waits for a call [`Client::request_within`] (or a pipelined read) started, at
    /// most `limit`, and picks the expected reply out of the answer.
    pub(crate) fn finish<R>(
        &self,
        op: &'static str,
        call: PendingCall,
        pick: impl FnOnce(Rmessage) -> Option<R>,
        limit: Option<Duration>,
    ) -> Result<R, ClientError> {
        let reply = match limit {
            None => call.wait()?,
            Some(after) => match call.wait_timeout(after)? {
                Some(reply) => reply,
                // Abandon it. A reply that beat the flush did the work (a read took
                // its bytes): it is the answer. A failed flush leaves the connection
                // of no further use.
                None => match call.flush_within(Some(after)) {
                    Ok(Some(reply)) => reply,
                    Ok(None) => return Err(ClientError::TimedOut { what: op, after }),
                    Err(_) => {
                        self.inner.rpc.close();
                        return Err(ClientError::TimedOut { what: op, after });
                    }
                },
            },
        };
        let got = reply.msg_type().name();
        match reply {
            Rmessage::Rlerror(Rlerror { ecode }) => Err(ClientError::Remote {
                op,
                path: String::new(),
                errno: ecode,
            }),
            other => pick(other).ok_or(ClientError::UnexpectedReply { op, got }),
        }
    }

    /// A fid number not used by this client.
    pub(crate) fn new_fid(&self) -> u32 {
        loop {
            let n = self.inner.next_fid.fetch_add(1, Ordering::Relaxed);
            if n != NOFID {
                return n;
            }
        }
    }
}

/// Runs `step` on `transport`, closing the transport if it has not finished within
/// `limit` (which makes a blocked receive return): the step then fails with
/// [`ClientError::TimedOut`].
fn within<T>(
    transport: &Arc<dyn Transport>,
    limit: Duration,
    step: impl FnOnce() -> Result<T, ClientError>,
) -> Result<T, ClientError> {
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watched = Arc::clone(transport);
    let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&expired);
    let watchdog = thread::Builder::new()
        .name("9p-client-deadline".into())
        .spawn(move || {
            if finished.recv_timeout(limit).is_err() {
                flag.store(true, Ordering::SeqCst);
                watched.close();
            }
        })
        .map_err(ClientError::Io)?;
    let out = step();
    let _ = done.send(());
    let _ = watchdog.join();
    if expired.load(Ordering::SeqCst) && out.is_err() {
        return Err(ClientError::TimedOut {
            what: "version",
            after: limit,
        });
    }
    out
}

/// A tcp connection to `addr` — each address it resolves to in turn, each try bounded
/// by `limit` — for 9P (plain, or under TLS).
pub fn connect_tcp_stream(
    addr: impl ToSocketAddrs + fmt::Display,
    limit: Duration,
) -> Result<TcpStream, ClientError> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|error| ClientError::Resolve {
            addr: addr.to_string(),
            error,
        })?
        .collect();
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to");
    for a in &addrs {
        match TcpStream::connect_timeout(a, limit) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(ClientError::Connect {
        addr: format!(
            "tcp:{}",
            addrs
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        error: last,
    })
}
