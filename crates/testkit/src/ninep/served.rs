//! A tree served on loopback TCP or on a unix socket in a temp dir, and a raw-frame
//! connection to it for checking exact replies.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use nf_ninep::*;
use nf_ninep_client::{Client, ClientConfig};
use nf_ninep_server::{Filesystem, ListenAddr, Listener, Server, ServerConfig};

/// Every wait in the tests is bounded by this.
pub const LIMIT: Duration = Duration::from_secs(5);

/// A short wait used to show that something does *not* happen.
pub const QUIET: Duration = Duration::from_millis(300);

/// Which transport a test runs over.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    /// Loopback TCP on a fresh port.
    Tcp,
    /// A unix socket in a fresh temp dir.
    Unix,
}

/// Both transports, for tests that run once over each.
pub const BOTH: [Via; 2] = [Via::Tcp, Via::Unix];

/// A server listening on a fresh loopback port or unix socket; shut down on drop.
pub struct Served<F: Filesystem> {
    /// The server (its stats, its shutdown).
    pub server: Server<F>,
    /// Where it listens; `None` once stopped.
    pub listener: Option<Listener>,
    _sockdir: tempfile::TempDir,
}

impl<F: Filesystem> Served<F> {
    /// Where the server listens.
    pub fn addr(&self) -> &ListenAddr {
        self.listener.as_ref().expect("listening").addr()
    }

    /// The unix socket it listens on (served [`Via::Unix`]).
    pub fn unix_path(&self) -> std::path::PathBuf {
        match self.addr() {
            ListenAddr::Unix(p) => p.clone(),
            ListenAddr::Tcp(a) => panic!("served on tcp {a}, not a unix socket"),
        }
    }

    /// A client with the default msize.
    pub fn client(&self) -> Client {
        self.client_with(ClientConfig::default())
    }

    /// A client with `config`.
    pub fn client_with(&self, config: ClientConfig) -> Client {
        match self.addr() {
            ListenAddr::Tcp(a) => Client::connect_tcp_with(*a, config),
            ListenAddr::Unix(p) => Client::connect_unix_with(p, config),
        }
        .expect("client connects")
    }

    /// A raw connection (no version sent yet).
    pub fn raw(&self) -> Raw {
        let stream = match self.addr() {
            ListenAddr::Tcp(a) => RawStream::Tcp(TcpStream::connect(a).expect("tcp connect")),
            ListenAddr::Unix(p) => RawStream::Unix(UnixStream::connect(p).expect("unix connect")),
        };
        Raw {
            stream,
            buf: Vec::new(),
            msize: 1 << 20,
        }
    }

    /// A raw connection after a successful `Tversion` at `msize`.
    pub fn raw_session(&self, msize: u32) -> Raw {
        let mut raw = self.raw();
        let v = raw.version(msize);
        assert_eq!(v.version, VERSION);
        raw
    }
}

impl<F: Filesystem> Drop for Served<F> {
    fn drop(&mut self) {
        if let Some(l) = self.listener.take() {
            l.stop();
        }
        self.server.shutdown(LIMIT);
    }
}

/// Serves `fs` with `config` over `via`.
pub fn serve<F: Filesystem>(fs: F, config: ServerConfig, via: Via) -> Served<F> {
    let server = Server::with_config(fs, config);
    let sockdir = tempfile::tempdir().expect("temp dir");
    let listener = match via {
        Via::Tcp => server.listen_tcp("127.0.0.1:0"),
        Via::Unix => server.listen_unix(sockdir.path().join("9p.sock")),
    }
    .expect("listen");
    Served {
        server,
        listener: Some(listener),
        _sockdir: sockdir,
    }
}

/// Waits until `cond` holds, for at most [`LIMIT`].
pub fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

/// The stream under a [`Raw`] connection.
enum RawStream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl RawStream {
    fn set_timeout(&self, d: Duration) {
        let d = Some(d.max(Duration::from_millis(1)));
        match self {
            RawStream::Tcp(s) => s.set_read_timeout(d),
            RawStream::Unix(s) => s.set_read_timeout(d),
        }
        .expect("set timeout");
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            RawStream::Tcp(s) => s.read(buf),
            RawStream::Unix(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            RawStream::Tcp(s) => s.write_all(buf),
            RawStream::Unix(s) => s.write_all(buf),
        }
    }
}

/// A connection that sends and receives single frames, for exact-reply checks.
pub struct Raw {
    stream: RawStream,
    buf: Vec<u8>,
    msize: u32,
}

/// What a raw receive saw.
#[derive(Debug)]
pub enum Got {
    /// A whole reply frame.
    Frame(Frame<Rmessage>),
    /// Nothing within the time given.
    Nothing,
    /// The server closed the connection.
    Closed,
}

impl Raw {
    /// Sends `msg` under `tag`.
    pub fn send(&mut self, tag: u16, msg: impl Into<Tmessage>) {
        let mut out = Vec::new();
        encode_frame(tag, &msg.into(), u32::MAX, &mut out).expect("encode");
        self.send_bytes(&out);
    }

    /// Sends `bytes` as they are (frames, or not).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// The next frame, or nothing within `within`, or end of stream.
    pub fn recv_within(&mut self, within: Duration) -> Got {
        let deadline = Instant::now() + within;
        loop {
            let decoder = FrameDecoder::new(self.msize.max(1 << 20));
            if let Some((frame, used)) = decoder
                .decode::<Rmessage>(&self.buf)
                .expect("reply decodes")
            {
                self.buf.drain(..used);
                return Got::Frame(frame);
            }
            let now = Instant::now();
            if now >= deadline {
                return Got::Nothing;
            }
            self.stream.set_timeout(deadline - now);
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Got::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Got::Nothing
                }
                Err(_) => return Got::Closed,
            }
        }
    }

    /// The next frame (panics if none comes within [`LIMIT`]).
    pub fn recv(&mut self) -> Frame<Rmessage> {
        match self.recv_within(LIMIT) {
            Got::Frame(f) => f,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    /// Sends `msg` under `tag` and returns the reply body (checking its tag).
    pub fn rpc(&mut self, tag: u16, msg: impl Into<Tmessage>) -> Rmessage {
        self.send(tag, msg);
        let f = self.recv();
        assert_eq!(f.tag, tag, "reply tag");
        f.body
    }

    /// `Tversion` at `msize`; later receives are bounded by the msize agreed.
    pub fn version(&mut self, msize: u32) -> Rversion {
        let r = self.rpc(
            NOTAG,
            Tversion {
                msize,
                version: VERSION.into(),
            },
        );
        match r {
            Rmessage::Rversion(v) => {
                self.msize = v.msize;
                v
            }
            other => panic!("expected Rversion, got {other:?}"),
        }
    }

    /// `Tattach` of `fid` (tag 1, user `test`, no afid).
    pub fn attach(&mut self, fid: u32) -> Rmessage {
        self.rpc(
            1,
            Tattach {
                fid,
                afid: NOFID,
                uname: "test".into(),
                aname: String::new(),
                n_uname: NONUNAME,
            },
        )
    }

    /// `Twalk` from `fid` to `newfid` through `names` (tag 2).
    pub fn walk(&mut self, fid: u32, newfid: u32, names: &[&str]) -> Rmessage {
        self.rpc(
            2,
            Twalk {
                fid,
                newfid,
                wnames: names.iter().map(|s| s.to_string()).collect(),
            },
        )
    }

    /// `Tlopen` of `fid` with `flags` (tag 3).
    pub fn lopen(&mut self, fid: u32, flags: LOpenFlags) -> Rmessage {
        self.rpc(3, Tlopen { fid, flags })
    }

    /// `Tclunk` of `fid` (tag 4).
    pub fn clunk(&mut self, fid: u32) -> Rmessage {
        self.rpc(4, Tclunk { fid })
    }
}

/// The errno of an `Rlerror` (panics on anything else).
pub fn ecode(r: &Rmessage) -> u32 {
    match r {
        Rmessage::Rlerror(e) => e.ecode,
        other => panic!("expected Rlerror, got {other:?}"),
    }
}
