//! SyntheticTree served over a socket: static, dynamic and stream files, directory
//! hooks, qid versions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nf_ninep::errno::{EACCES, EROFS};
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Ctx, FsResult, ServerConfig};
use nf_ninep_trees::synthetic::{DirOps, DynamicFile, FileNode, StaticFile, Stream, SyntheticTree};
use nf_testkit::ninep::{serve, Via};

/// Lets clients create plain in-memory files and directories, and remove them.
struct Scratch;

impl DirOps for Scratch {
    fn create(&self, _: &Ctx, name: &str, _: u32) -> FsResult<Arc<dyn FileNode>> {
        Ok(Arc::new(StaticFile::new(format!("made {name}"))))
    }
    fn mkdir(&self, _: &Ctx, _: &str, _: u32) -> FsResult<()> {
        Ok(())
    }
    fn remove(&self, _: &Ctx, _: &str) -> FsResult<()> {
        Ok(())
    }
}

fn tree() -> (SyntheticTree, Stream, Arc<Mutex<Vec<u8>>>) {
    let t = SyntheticTree::new();
    t.add_file("/motd", StaticFile::new("welcome\n")).unwrap();
    let opens = AtomicU64::new(0);
    t.add_file(
        "/status",
        DynamicFile::new(move || {
            format!("open #{}\n", opens.fetch_add(1, Ordering::SeqCst)).into_bytes()
        }),
    )
    .unwrap();
    let ctl = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&ctl);
    t.add_file(
        "/ctl",
        DynamicFile::write_only(move |data| {
            sink.lock().unwrap().extend_from_slice(data);
            Ok(())
        }),
    )
    .unwrap();
    let log = Stream::new().writable();
    t.add_file("/log", log.clone()).unwrap();
    t.add_dir("/scratch").unwrap();
    t.set_dir_ops("/scratch", Scratch).unwrap();
    (t, log, ctl)
}

#[test]
fn files_behave_as_their_kind() {
    let (t, log, ctl) = tree();
    let s = serve(t, ServerConfig::default(), Via::Unix);
    let root = s.client().attach("t", "").unwrap();
    assert_eq!(root.read_file("/motd").unwrap(), b"welcome\n");
    assert_eq!(root.stat("/motd").unwrap().size(), 8);
    assert_eq!(root.stat("/motd").unwrap().permissions(), 0o444);
    let err = root.open("/motd", LOpenFlags::WRONLY).unwrap_err();
    assert_eq!(err.errno(), Some(EACCES));
    // A snapshot per open.
    assert_eq!(root.read_file("/status").unwrap(), b"open #0\n");
    assert_eq!(root.read_file("/status").unwrap(), b"open #1\n");
    // Writes go to the handler; qid.version moves.
    let before = root.stat("/ctl").unwrap().qid;
    root.open("/ctl", LOpenFlags::WRONLY)
        .unwrap()
        .write_all(b"start")
        .unwrap();
    assert_eq!(&*ctl.lock().unwrap(), b"start");
    let after = root.stat("/ctl").unwrap().qid;
    assert_eq!(before.path, after.path);
    assert_ne!(before.version, after.version);
    // The log keeps history; writes append.
    log.push(b"one\n");
    let mut w = root.open("/log", LOpenFlags::WRONLY).unwrap();
    w.write_all(b"two\n").unwrap();
    let r = root.open("/log", LOpenFlags::RDONLY).unwrap();
    assert_eq!(r.read_chunk(0, 100).unwrap(), b"one\ntwo\n");
    log.close();
    assert_eq!(r.read_chunk(0, 100).unwrap(), b"");
}

#[test]
fn directories_change_only_where_allowed() {
    let (t, _, _) = tree();
    let s = serve(t, ServerConfig::default(), Via::Tcp);
    let root = s.client().attach("t", "").unwrap();
    assert_eq!(root.mkdir("/nope", 0o755).unwrap_err().errno(), Some(EROFS));
    assert_eq!(root.remove("/motd").unwrap_err().errno(), Some(EROFS));
    let f = root
        .create("/scratch/new", LOpenFlags::RDONLY, 0o644)
        .unwrap();
    assert_eq!(f.read_chunk(0, 100).unwrap(), b"made new");
    root.mkdir("/scratch/sub", 0o755).unwrap();
    let mut names: Vec<_> = root
        .readdir("/scratch")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["new", "sub"]);
    root.remove("/scratch/new").unwrap();
    root.walk("/scratch")
        .unwrap()
        .unlinkat("sub", true)
        .unwrap();
    assert!(root.readdir("/scratch").unwrap().is_empty());
    assert!(!s.server.fs().contains("/scratch/new"));
    // Reading an open file whose node was removed still works.
    s.server
        .fs()
        .add_file("/scratch/tmp", StaticFile::new("still here"))
        .unwrap();
    let f = root.open("/scratch/tmp", LOpenFlags::RDONLY).unwrap();
    s.server.fs().remove("/scratch/tmp").unwrap();
    assert_eq!(f.read_chunk(0, 100).unwrap(), b"still here");
}
