//! Requests run inline on the connection's reader thread (`Filesystem::runs_inline`):
//! the host trees need no worker thread at all, a request that would wait moves to a
//! worker, and a tree that answers `WOULD_BLOCK` where it may block gets `EIO`, never
//! the sentinel on the wire.

mod server_support;

use std::sync::atomic::{AtomicUsize, Ordering};

use nf_ninep::errno::EIO;
use nf_ninep::server::{Ctx, Filesystem, FsResult, PassthroughFs, ServerConfig, WOULD_BLOCK};
use nf_ninep::*;
use server_support::{ecode, serve, Via};

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

/// A one-file tree whose reads say `WOULD_BLOCK` inline and, when `broken`, also where
/// they may block.
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
            return Err(Rlerror::new(WOULD_BLOCK));
        }
        if self.broken {
            return Err(Rlerror::new(WOULD_BLOCK));
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
