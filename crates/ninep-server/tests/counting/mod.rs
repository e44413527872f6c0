//! A tree for the server tests that counts the fid states it hands out and gets back, so
//! a test can see that the server releases every state exactly once.

// Each test binary uses a part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

use nf_ninep::*;
use nf_ninep_server::{Ctx, Filesystem, FsResult};
use nf_ninep_trees::synthetic::{StaticFile, Stream, SynFid, SyntheticTree};

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
