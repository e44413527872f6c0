//! Requests run inline on the connection's reader thread (`Filesystem::runs_inline`):
//! the host trees need no worker thread at all, a request that would wait moves to a
//! worker, and a tree that answers `FsError::WouldBlock` where it may block gets `EIO`
//! (there is nowhere else to run it). A mount table decides per request: by the child
//! it reaches, and for synthetic files by the file.

use std::sync::atomic::{AtomicUsize, Ordering};

use nf_ninep::errno::EIO;
use std::sync::Arc;

use nf_ninep::*;
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult, ServerConfig};
use nf_ninep_trees::synthetic::{StaticFile, Stream};
use nf_ninep_trees::Erased;
use nf_ninep_trees::{MountTable, PassthroughFs, SyntheticTree};
use nf_testkit::ninep::{ecode, serve, Got, Raw, Via, QUIET};

#[test]
fn host_trees_serve_without_worker_threads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "data").unwrap();
    let s = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = s.client().attach("t", "").unwrap();
    for _ in 0..50 {
        assert_eq!(root.read_file("/f").unwrap(), b"data");
        root.write_file("/g", b"x").unwrap();
        assert_eq!(root.readdir("/").unwrap().len(), 2);
    }
    assert_eq!(s.server.stats().workers, 0, "a request went to a worker");
}

/// A one-file tree whose reads say `FsError::WouldBlock` inline and, when `broken`,
/// also where they may block.
struct Waits {
    broken: bool,
    inline_tries: AtomicUsize,
}

impl Filesystem for Waits {
    type Fid = ();

    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(&self, _: &Ctx, _: &Tattach, _: Option<&()>) -> FsResult<(Rattach, ())> {
        let qid = Qid {
            ty: QidType::DIR,
            version: 0,
            path: 1,
        };
        Ok((Rattach { qid }, ()))
    }

    fn walk1(&self, _: &Ctx, _: &(), _: &str) -> FsResult<(Qid, ())> {
        Ok((Qid::default(), ()))
    }

    fn clone_fid(&self, _: &Ctx, _: &()) -> FsResult<()> {
        Ok(())
    }

    fn getattr(&self, _: &Ctx, _: &(), _: &Tgetattr) -> FsResult<Rgetattr> {
        Ok(Rgetattr {
            valid: GetattrMask::BASIC,
            qid: Qid::default(),
            attr: Attr {
                mode: 0o100_444,
                ..Attr::default()
            },
        })
    }

    fn read(&self, ctx: &Ctx, _: &(), _: &Tread) -> FsResult<Rread> {
        if !ctx.may_block() {
            self.inline_tries.fetch_add(1, Ordering::SeqCst);
            return Err(FsError::WouldBlock);
        }
        if self.broken {
            return Err(FsError::WouldBlock);
        }
        Ok(Rread {
            data: b"waited".to_vec().into(),
        })
    }
}

fn read_once(broken: bool) -> (Rmessage, usize, usize) {
    let s = serve(
        Waits {
            broken,
            inline_tries: AtomicUsize::new(0),
        },
        ServerConfig::default(),
        Via::Unix,
    );
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    raw.walk(1, 2, &["f"]);
    raw.lopen(2, LOpenFlags::RDONLY);
    let r = raw.rpc(
        9,
        Tread {
            fid: 2,
            offset: 0,
            count: 100,
        },
    );
    let tries = s.server.fs().inline_tries.load(Ordering::SeqCst);
    (r, tries, s.server.stats().workers)
}

#[test]
fn a_request_that_would_wait_moves_to_a_worker() {
    let (r, tries, workers) = read_once(false);
    match r {
        Rmessage::Rread(r) => assert_eq!(r.data.as_slice(), b"waited"),
        other => panic!("{other:?}"),
    }
    assert_eq!((tries, workers), (1, 1));
}

#[test]
fn would_block_where_a_tree_may_block_is_an_eio() {
    let (r, tries, _) = read_once(true);
    assert_eq!(ecode(&r), EIO);
    assert_eq!(tries, 1);
}

/// A tree that does not run inline, counting the calls it got where it may not block
/// (there must be none).
#[derive(Default)]
struct Plain {
    inline_calls: Arc<AtomicUsize>,
}

impl Plain {
    fn saw(&self, ctx: &Ctx) {
        if !ctx.may_block() {
            self.inline_calls.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Filesystem for Plain {
    type Fid = ();

    fn attach(&self, ctx: &Ctx, _: &Tattach, _: Option<&()>) -> FsResult<(Rattach, ())> {
        self.saw(ctx);
        let qid = Qid {
            ty: QidType::DIR,
            version: 0,
            path: 1,
        };
        Ok((Rattach { qid }, ()))
    }

    fn walk1(&self, ctx: &Ctx, _: &(), _: &str) -> FsResult<(Qid, ())> {
        self.saw(ctx);
        Ok((Qid::default(), ()))
    }

    fn clone_fid(&self, ctx: &Ctx, _: &()) -> FsResult<()> {
        self.saw(ctx);
        Ok(())
    }

    fn getattr(&self, ctx: &Ctx, _: &(), _: &Tgetattr) -> FsResult<Rgetattr> {
        self.saw(ctx);
        Ok(Rgetattr {
            valid: GetattrMask::BASIC,
            qid: Qid::default(),
            attr: Attr {
                mode: 0o100_444,
                ..Attr::default()
            },
        })
    }

    fn read(&self, ctx: &Ctx, _: &(), _: &Tread) -> FsResult<Rread> {
        self.saw(ctx);
        Ok(Rread {
            data: b"plain".to_vec().into(),
        })
    }
}

fn read(raw: &mut Raw, tag: u16, fid: u32) -> Vec<u8> {
    match raw.rpc(
        tag,
        Tread {
            fid,
            offset: 0,
            count: 100,
        },
    ) {
        Rmessage::Rread(r) => r.data.as_slice().to_vec(),
        other => panic!("read of fid {fid}: {other:?}"),
    }
}

fn open(raw: &mut Raw, fid: u32, names: &[&str]) {
    assert!(matches!(raw.walk(1, fid, names), Rmessage::Rwalk(_)));
    assert!(matches!(
        raw.lopen(fid, LOpenFlags::RDONLY),
        Rmessage::Rlopen(_)
    ));
}

#[test]
fn a_mount_table_decides_inline_per_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "data").unwrap();
    let syn = SyntheticTree::new();
    let log = Stream::new().writable();
    syn.add_file("/log", log.clone()).unwrap();
    syn.add_file("/motd", StaticFile::new("hi")).unwrap();
    let syn: Arc<nf_ninep_trees::DynFs> = Arc::new(Erased(syn));
    let mut table = MountTable::new();
    table
        .mount("fs", PassthroughFs::new(dir.path()).unwrap())
        .unwrap();
    table.mount_dyn("log", Arc::clone(&syn), "log").unwrap();
    table.mount_dyn("motd", syn, "motd").unwrap();
    let plain = Plain::default();
    let inline_calls = Arc::clone(&plain.inline_calls);
    table.mount("plain", plain).unwrap();
    let s = serve(table, ServerConfig::default(), Via::Unix);
    let mut raw = s.raw_session(8192);
    raw.attach(1);

    // Host files, static files, and a stream with data waiting: all on the reader
    // thread.
    open(&mut raw, 2, &["fs", "f"]);
    assert_eq!(read(&mut raw, 10, 2), b"data");
    open(&mut raw, 3, &["motd"]);
    assert_eq!(read(&mut raw, 10, 3), b"hi");
    log.push(b"line\n");
    open(&mut raw, 4, &["log"]);
    assert_eq!(read(&mut raw, 10, 4), b"line\n");
    assert_eq!(s.server.stats().workers, 0, "a request went to a worker");

    // A stream read that must wait moves to a worker; other tags go on inline meanwhile,
    // and the flush cancels it.
    raw.send(
        20,
        Tread {
            fid: 4,
            offset: 0,
            count: 100,
        },
    );
    assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
    assert_eq!(read(&mut raw, 21, 2), b"data");
    raw.send(22, Tflush { oldtag: 20 });
    let f = raw.recv();
    assert_eq!((f.tag, f.body), (22, Rmessage::Rflush(Rflush)));
    assert!(
        matches!(raw.recv_within(QUIET), Got::Nothing),
        "the flushed read was answered"
    );
    assert!(s.server.stats().workers >= 1);

    // A child that does not run inline is called only where it may block.
    open(&mut raw, 5, &["plain", "x"]);
    assert_eq!(read(&mut raw, 23, 5), b"plain");
    assert!(matches!(
        raw.walk(1, 6, &["plain", ".."]),
        Rmessage::Rwalk(_)
    ));
    assert_eq!(
        inline_calls.load(Ordering::SeqCst),
        0,
        "a tree that does not run inline was called on the reader thread"
    );
}
