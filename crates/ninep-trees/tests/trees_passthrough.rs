//! #U over real sockets: a real client against `PassthroughFs`, on TCP and unix sockets.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nf_ninep::errno::{EEXIST, EINVAL, ENOENT, ENOTEMPTY, EPERM};
use nf_ninep::{LOpenFlags, Rmessage, Tflush, Tlopen, Tmknod};
use nf_ninep_client::{ClientConfig, ClientError};
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{ecode, serve, Got, Via, BOTH, QUIET};

fn export() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("hello.txt"), "hello, world\n").unwrap();
    fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
    fs::write(dir.path().join("sub/deeper/leaf"), "leaf").unwrap();
    dir
}

/// `PassthroughFs` over `dir` on a unix socket, default limits.
fn unix_server(dir: &std::path::Path) -> nf_testkit::ninep::Served<PassthroughFs> {
    serve(
        PassthroughFs::new(dir).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    )
}

fn each_transport(test: impl Fn(Via, &std::path::Path, nf_ninep_client::Root)) {
    for via in BOTH {
        let dir = export();
        let served = serve(
            PassthroughFs::new(dir.path()).unwrap(),
            ServerConfig::default(),
            via,
        );
        let root = served.client().attach("tester", "").unwrap();
        test(via, dir.path(), root);
    }
}

#[test]
fn walk_open_read_stat() {
    each_transport(|via, _, root| {
        assert_eq!(
            root.read_file("/hello.txt").unwrap(),
            b"hello, world\n",
            "{via:?}"
        );
        assert_eq!(root.read_file("sub/deeper/leaf").unwrap(), b"leaf");
        let st = root.stat("/hello.txt").unwrap();
        assert_eq!(st.size(), 13);
        assert!(!st.is_dir());
        assert!(root.stat("/sub").unwrap().is_dir());
        let err = root.stat("/missing").unwrap_err();
        assert_eq!(err.errno(), Some(ENOENT), "{err}");
        assert!(err.to_string().contains("/missing"), "{err}");
    });
}

#[test]
fn readdir_lists_entries() {
    each_transport(|_, _, root| {
        let mut names: Vec<String> = root
            .readdir("/")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, ["hello.txt", "sub"]);
        let sub = root.readdir("/sub").unwrap();
        assert_eq!(sub.len(), 1);
        assert!(sub[0].is_dir());
    });
}

#[test]
fn create_write_and_read_back() {
    each_transport(|_, host, root| {
        let mut f = root
            .create("/sub/new.txt", LOpenFlags::RDWR, 0o640)
            .unwrap();
        f.write_all(b"first ").unwrap();
        f.write_all(b"second").unwrap();
        f.close().unwrap();
        assert_eq!(fs::read(host.join("sub/new.txt")).unwrap(), b"first second");
        assert_eq!(root.stat("/sub/new.txt").unwrap().permissions(), 0o640);
        let err = root
            .create("/sub/new.txt", LOpenFlags::WRONLY | LOpenFlags::EXCL, 0o644)
            .unwrap_err();
        assert_eq!(err.errno(), Some(EEXIST), "{err}");
        root.write_file("/hello.txt", b"replaced").unwrap();
        assert_eq!(fs::read(host.join("hello.txt")).unwrap(), b"replaced");
        // std::io traits work too.
        let mut f = root
            .open("/hello.txt", LOpenFlags::RDWR | LOpenFlags::APPEND)
            .unwrap();
        assert_eq!(f.write(b"!").unwrap(), 1);
        let mut s = String::new();
        f.seek_to(0);
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "replaced!");
    });
}

#[test]
fn mkdir_remove_rename() {
    each_transport(|_, host, root| {
        root.mkdir("/made", 0o755).unwrap();
        assert!(host.join("made").is_dir());
        root.write_file("/made/f", b"x").unwrap();
        let err = root.remove("/made").unwrap_err();
        assert_eq!(err.errno(), Some(ENOTEMPTY), "{err}");
        root.rename("/made/f", "/sub/g").unwrap();
        assert!(host.join("sub/g").exists() && !host.join("made/f").exists());
        root.remove("/made").unwrap();
        assert!(!host.join("made").exists());
        // Renaming a directory moves what is below it, and open fids follow.
        let leaf = root.walk("/sub/deeper/leaf").unwrap();
        root.rename("/sub/deeper", "/moved").unwrap();
        assert_eq!(fs::read(host.join("moved/leaf")).unwrap(), b"leaf");
        assert_eq!(leaf.stat().unwrap().size(), 4, "fid follows the rename");
        root.walk("/")
            .unwrap()
            .unlinkat("hello.txt", false)
            .unwrap();
        assert!(!host.join("hello.txt").exists());
    });
}

#[test]
fn setattr_truncate_chmod_and_symlinks() {
    each_transport(|_, host, root| {
        root.truncate("/hello.txt", 5).unwrap();
        assert_eq!(fs::read(host.join("hello.txt")).unwrap(), b"hello");
        root.chmod("/hello.txt", 0o600).unwrap();
        assert_eq!(root.stat("/hello.txt").unwrap().permissions(), 0o600);
        root.symlink("/link", "hello.txt").unwrap();
        assert_eq!(root.readlink("/link").unwrap(), "hello.txt");
        assert!(root.stat("/link").unwrap().is_symlink());
        assert_eq!(
            fs::read_link(host.join("link")).unwrap().to_str(),
            Some("hello.txt")
        );
    });
}

#[test]
fn qids_are_stable_and_versions_move_on_writes() {
    each_transport(|_, _, root| {
        let a = root.stat("/hello.txt").unwrap().qid;
        let b = root.stat("/hello.txt").unwrap().qid;
        assert_eq!(a, b);
        assert_ne!(a.path, root.stat("/sub").unwrap().qid.path);
        let f = root.open("/hello.txt", LOpenFlags::WRONLY).unwrap();
        f.write_at(b"H", 0).unwrap();
        let c = root.stat("/hello.txt").unwrap().qid;
        assert_eq!(c.path, a.path);
        assert_ne!(c.version, a.version);
    });
}

#[test]
fn reads_and_writes_chunk_to_msize() {
    let dir = export();
    let served = unix_server(dir.path());
    let client = served.client_with(ClientConfig {
        msize: 8192,
        ..ClientConfig::default()
    });
    assert_eq!(client.msize(), 8192);
    let root = client.attach("tester", "").unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    root.write_file("/big", &data).unwrap();
    assert_eq!(fs::read(dir.path().join("big")).unwrap(), data);
    assert_eq!(root.read_file("/big").unwrap(), data);
    let f = root.open("/big", LOpenFlags::RDONLY).unwrap();
    assert_eq!(f.chunk(), 8192 - 24);
    assert_eq!(f.read_chunk(0, 1 << 20).unwrap().len(), 8192 - 24);
}

#[test]
fn remote_errors_are_typed() {
    each_transport(|_, _, root| {
        let err = root.open("/nope/deeper", LOpenFlags::RDONLY).unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::Remote {
                    op: "walk",
                    errno: ENOENT,
                    ..
                }
            ),
            "{err}"
        );
        let io: std::io::Error = err.into();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    });
}

#[test]
fn mknod_makes_fifos_and_sockets_but_no_devices() {
    let dir = export();
    let s = unix_server(dir.path());
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    let mknod = |name: &str, mode: u32| Tmknod {
        dfid: 1,
        name: name.into(),
        mode,
        major: 1,
        minor: 1,
        gid: 0,
    };
    let r = raw.rpc(5, mknod("fifo", 0o010_640));
    assert!(matches!(r, Rmessage::Rmknod(_)), "{r:?}");
    let meta = fs::symlink_metadata(dir.path().join("fifo")).unwrap();
    assert!(meta.file_type().is_fifo());
    let r = raw.rpc(5, mknod("sock", 0o140_600));
    assert!(matches!(r, Rmessage::Rmknod(_)), "{r:?}");
    assert!(fs::symlink_metadata(dir.path().join("sock"))
        .unwrap()
        .file_type()
        .is_socket());
    // Character and block devices (here /dev/mem's numbers) are refused, regular files
    // are for Tlcreate.
    for (name, mode, errno) in [
        ("chr", 0o020_600, EPERM),
        ("blk", 0o060_600, EPERM),
        ("reg", 0o100_600, EINVAL),
    ] {
        let r = raw.rpc(5, mknod(name, mode));
        assert_eq!(ecode(&r), errno, "{name}");
        assert!(!dir.path().join(name).exists(), "{name} was created");
    }
}

/// Holds a write lease on a file (tests/kernel9p/hold-lease.pl) until dropped, so that
/// any other open(2) of it blocks in the kernel for `lease-break-time`.
struct LeaseHolder(Child);

impl LeaseHolder {
    fn take(file: &std::path::Path) -> LeaseHolder {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/kernel9p/hold-lease.pl"
        );
        let mut child = Command::new("perl")
            .arg(script)
            .arg(file)
            .arg("60")
            .stdout(Stdio::piped())
            .spawn()
            .expect("perl runs tests/kernel9p/hold-lease.pl");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        let holder = LeaseHolder(child);
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(
            line.trim(),
            "leased",
            "hold-lease.pl could not take the lease"
        );
        holder
    }
}

impl Drop for LeaseHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn flushing_an_open_blocked_on_a_lease_answers_at_once() {
    let dir = export();
    let leased = dir.path().join("leased");
    fs::write(&leased, "x").unwrap();
    let holder = LeaseHolder::take(&leased);
    let s = unix_server(dir.path());
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    raw.walk(1, 2, &["leased"]);
    raw.send(
        10,
        Tlopen {
            fid: 2,
            flags: LOpenFlags::RDONLY,
        },
    );
    assert!(
        matches!(raw.recv_within(Duration::from_millis(300)), Got::Nothing),
        "the open waits for the lease break"
    );
    // Answered within rpc's deadline (5 s), far below lease-break-time (45 s by
    // default): the open was really abandoned, not waited for.
    let r = raw.rpc(11, Tflush { oldtag: 10 });
    assert!(matches!(r, Rmessage::Rflush(_)), "{r:?}");
    assert!(
        matches!(raw.recv_within(QUIET), Got::Nothing),
        "the flushed Tlopen was answered"
    );
    assert_eq!(s.server.stats().in_flight, 0);
    // The fid is still there and not open: once the lease is gone it opens.
    drop(holder);
    let r = raw.lopen(2, LOpenFlags::RDONLY);
    assert!(matches!(r, Rmessage::Rlopen(_)), "{r:?}");
}
