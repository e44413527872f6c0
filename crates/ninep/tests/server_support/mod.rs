//! Helpers shared by the server tests: servers on loopback TCP or on unix sockets in
//! temp dirs, a raw-frame connection for checking exact replies, and a tree that
//! counts the fid states it hands out and gets back.

#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nf_ninep::client::{Client, ClientConfig};
use nf_ninep::server::trees::synthetic::{StaticFile, Stream, SynFid, SyntheticTree};
use nf_ninep::server::{Ctx, Filesystem, FsResult, ListenAddr, Listener, Server, ServerConfig};
use nf_ninep::*;

/// Every wait in the tests is bounded by this.
pub const LIMIT: Duration = Duration::from_secs(5);

/// A short wait used to show that something does *not* happen.
pub const QUIET: Duration = Duration::from_millis(300);

/// Which transport a test runs over.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    Tcp,
    Unix,
}

pub const BOTH: [Via; 2] = [Via::Tcp, Via::Unix];

/// A server listening on a fresh loopback port or unix socket; shut down on drop.
pub struct Served<F: Filesystem> {
    pub server: Server<F>,
    pub listener: Option<Listener>,
    _sockdir: tempfile::TempDir,
}

impl<F: Filesystem> Served<F> {
    pub fn addr(&self) -> &ListenAddr {
        self.listener.as_ref().expect("listening").addr()
    }

    /// A client with the default msize.
    pub fn client(&self) -> Client {
        self.client_with(ClientConfig::default())
    }

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

pub enum RawStream {
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
    Frame(Frame<Rmessage>),
    Nothing,
    Closed,
}

impl Raw {
    pub fn send(&mut self, tag: u16, msg: impl Into<Tmessage>) {
        let mut out = Vec::new();
        encode_frame(tag, &msg.into(), u32::MAX, &mut out).expect("encode");
        self.send_bytes(&out);
    }

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

    pub fn lopen(&mut self, fid: u32, flags: LOpenFlags) -> Rmessage {
        self.rpc(3, Tlopen { fid, flags })
    }

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

/// A synthetic tree that counts the fid states it creates and the clunks it gets.
#[derive(Default)]
pub struct Counting {
    pub tree: SyntheticTree,
    pub created: AtomicUsize,
    pub clunked: AtomicUsize,
}

impl Counting {
    /// A tree with `/hello` (static), `/dir/` and `/stream` (blocks until pushed).
    pub fn sample() -> (Counting, Stream) {
        let c = Counting::default();
        c.tree
            .add_file("/hello", StaticFile::new("hello, world\n"))
            .unwrap();
        c.tree.add_dir("/dir/sub").unwrap();
        let stream = Stream::new();
        c.tree.add_file("/stream", stream.clone()).unwrap();
        (c, stream)
    }

    /// States created and not clunked yet.
    pub fn live(&self) -> usize {
        self.created.load(Ordering::SeqCst) - self.clunked.load(Ordering::SeqCst)
    }

    fn made<T>(&self, r: FsResult<T>) -> FsResult<T> {
        if r.is_ok() {
            self.created.fetch_add(1, Ordering::SeqCst);
        }
        r
    }
}

impl Filesystem for Counting {
    type Fid = SynFid;

    fn attach(
        &self,
        ctx: &Ctx,
        req: &Tattach,
        afid: Option<&SynFid>,
    ) -> FsResult<(Rattach, SynFid)> {
        self.made(self.tree.attach(ctx, req, afid))
    }

    fn walk1(&self, ctx: &Ctx, dir: &SynFid, name: &str) -> FsResult<(Qid, SynFid)> {
        self.made(self.tree.walk1(ctx, dir, name))
    }

    fn clone_fid(&self, ctx: &Ctx, fid: &SynFid) -> FsResult<SynFid> {
        self.made(self.tree.clone_fid(ctx, fid))
    }

    fn getattr(&self, ctx: &Ctx, fid: &SynFid, req: &Tgetattr) -> FsResult<Rgetattr> {
        self.tree.getattr(ctx, fid, req)
    }

    fn lopen(&self, ctx: &Ctx, fid: &SynFid, req: &Tlopen) -> FsResult<Rlopen> {
        self.tree.lopen(ctx, fid, req)
    }

    fn read(&self, ctx: &Ctx, fid: &SynFid, req: &Tread) -> FsResult<Rread> {
        self.tree.read(ctx, fid, req)
    }

    fn write(&self, ctx: &Ctx, fid: &SynFid, req: &Twrite) -> FsResult<Rwrite> {
        self.tree.write(ctx, fid, req)
    }

    fn readdir(&self, ctx: &Ctx, dir: &SynFid, req: &Treaddir) -> FsResult<Rreaddir> {
        self.tree.readdir(ctx, dir, req)
    }

    fn clunk(&self, ctx: &Ctx, fid: &SynFid) -> FsResult<()> {
        self.clunked.fetch_add(1, Ordering::SeqCst);
        self.tree.clunk(ctx, fid)
    }
}
