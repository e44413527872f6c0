//! A blocking 9P2000.L client, after diod's libnpclient: one file per operation family.
//!
//! ```no_run
//! use nf_ninep::client::Client;
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
//! # Ok::<(), nf_ninep::client::ClientError>(())
//! ```
//!
//! | file | operations |
//! |---|---|
//! | `session` | version (on connect), attach → [`Root`] |
//! | `fid` | [`Fid`]: a handle that clunks itself when dropped |
//! | `walk` | walking paths (any length, 16 names per message) |
//! | `open` | lopen, lcreate → [`File`] |
//! | `read`, `write` | reads and writes, chunked to the negotiated msize / iounit |
//! | `dir` | readdir → [`DirEntry`] |
//! | `attr` | getattr → [`Stat`], setattr, statfs |
//! | `fileops` | mkdir, remove, unlink, rename, symlink, readlink, fsync |
//! | `rpc` | tags, the reader thread, [`PendingCall`] and flush |
//!
//! A [`Client`] is cheap to clone and may be used from many threads at once: calls are
//! multiplexed over the one connection, each under its own tag. Paths are `/`-separated
//! and relative to the attach root; `.` and empty elements are ignored, `..` is sent to
//! the server (which stops it at the root). Symlinks are not followed.

mod attr;
mod dir;
mod error;
mod fid;
mod fileops;
mod open;
mod read;
mod rpc;
mod session;
mod walk;
mod write;

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

pub use attr::Stat;
pub use dir::DirEntry;
pub use error::ClientError;
pub use fid::Fid;
pub use open::File;
pub use rpc::PendingCall;
pub use session::Root;

use crate::message::{Message, Rlerror, Rmessage, Tmessage};
use crate::server::transport::Transport;
use crate::types::NOFID;
use crate::version::DEFAULT_MAX_MSIZE;
use rpc::Rpc;

/// Settings of a client connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The msize to ask for (the server may offer less). Default 1 MiB.
    pub msize: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            msize: DEFAULT_MAX_MSIZE,
        }
    }
}

struct Inner {
    rpc: Arc<Rpc>,
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
    pub fn connect_tcp(addr: impl ToSocketAddrs) -> Result<Client, ClientError> {
        Client::connect_tcp_with(addr, ClientConfig::default())
    }

    /// Connects over TCP with `config`.
    pub fn connect_tcp_with(
        addr: impl ToSocketAddrs,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|source| ClientError::Connect {
                addr: String::from("<unresolvable address>"),
                source,
            })?
            .collect();
        let stream = TcpStream::connect(&addrs[..]).map_err(|source| ClientError::Connect {
            addr: addrs
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            source,
        })?;
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
        let stream = UnixStream::connect(path).map_err(|source| ClientError::Connect {
            addr: path.display().to_string(),
            source,
        })?;
        Client::with_transport(stream, config)
    }

    /// Negotiates the version over an already connected transport.
    pub fn with_transport(
        transport: impl Transport,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let transport: Arc<dyn Transport> = Arc::new(transport);
        let msize =
            session::version(&*transport, config.msize).inspect_err(|_| transport.close())?;
        let rpc = Rpc::new(transport, msize);
        let reader_rpc = Arc::clone(&rpc);
        let reader = thread::Builder::new()
            .name("9p-client-reader".into())
            .spawn(move || reader_rpc.read_replies())
            .map_err(ClientError::Io)?;
        Ok(Client {
            inner: Arc::new(Inner {
                rpc,
                next_fid: AtomicU32::new(0),
                reader: Mutex::new(Some(reader)),
            }),
        })
    }

    /// The negotiated msize.
    pub fn msize(&self) -> u32 {
        self.inner.rpc.msize()
    }

    /// Sends a raw request and returns the call to wait on (or flush).
    pub fn start(&self, msg: impl Into<Tmessage>) -> Result<PendingCall, ClientError> {
        let msg = msg.into();
        self.inner.rpc.start(msg.msg_type().name(), &msg)
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
        let reply = self.inner.rpc.start(op, &msg.into())?.wait()?;
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
