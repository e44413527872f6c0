//! #R over real sockets: writes go to private in-memory copies that vanish with the
//! server; the host directory never changes.

use std::fs;

use nf_ninep::errno::{EEXIST, ENOENT, ENOSPC, EXDEV};
use nf_ninep::LOpenFlags;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::ReadOnlyView;
use nf_testkit::ninep::{serve, Via, BOTH};

fn export() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("data.txt"), "original\n").unwrap();
    fs::create_dir(dir.path().join("docs")).unwrap();
    fs::write(dir.path().join("docs/readme"), "read me").unwrap();
    dir
}

/// Every file under `dir` with its content, to compare before and after.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.push((p.display().to_string(), Vec::new()));
                stack.push(p);
            } else {
                out.push((p.display().to_string(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn writes_are_private_and_disappear_with_the_server() {
    for via in BOTH {
        let dir = export();
        let before = snapshot(dir.path());
        {
            let served = serve(
                ReadOnlyView::new(dir.path()).unwrap(),
                ServerConfig::default(),
                via,
            );
            let root = served.client().attach("tester", "").unwrap();
            assert_eq!(root.read_file("/data.txt").unwrap(), b"original\n");

            // Overwrite, append, create, mkdir, remove, rename: all visible through 9P…
            root.write_file("/data.txt", b"changed\n").unwrap();
            let mut f = root
                .open("/docs/readme", LOpenFlags::WRONLY | LOpenFlags::APPEND)
                .unwrap();
            f.write_all(b" twice").unwrap();
            drop(f);
            root.write_file("/docs/new", b"new file").unwrap();
            root.mkdir("/made", 0o755).unwrap();
            root.write_file("/made/inside", b"deep").unwrap();
            root.rename("/docs/new", "/made/renamed").unwrap();
            root.truncate("/data.txt", 3).unwrap();

            assert_eq!(root.read_file("/data.txt").unwrap(), b"cha", "{via:?}");
            assert_eq!(root.read_file("/docs/readme").unwrap(), b"read me twice");
            assert_eq!(root.read_file("/made/renamed").unwrap(), b"new file");
            assert_eq!(root.stat("/docs/new").unwrap_err().errno(), Some(ENOENT));
            let mut names: Vec<_> = root
                .readdir("/made")
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            names.sort();
            assert_eq!(names, ["inside", "renamed"]);

            root.remove("/docs/readme").unwrap();
            assert_eq!(root.stat("/docs/readme").unwrap_err().errno(), Some(ENOENT));
            assert!(root.readdir("/docs").unwrap().is_empty());
            root.remove("/docs").unwrap();
            assert_eq!(
                root.mkdir("/made", 0o755).unwrap_err().errno(),
                Some(EEXIST)
            );

            // …and shared by every client of this server…
            let other = served.client().attach("other", "").unwrap();
            assert_eq!(other.read_file("/made/inside").unwrap(), b"deep");

            // …while the host never changes.
            assert_eq!(snapshot(dir.path()), before, "{via:?}");
        }
        // A new server sees the host as it was: the private copies are gone.
        let served = serve(
            ReadOnlyView::new(dir.path()).unwrap(),
            ServerConfig::default(),
            via,
        );
        let root = served.client().attach("tester", "").unwrap();
        assert_eq!(root.read_file("/data.txt").unwrap(), b"original\n");
        assert_eq!(root.read_file("/docs/readme").unwrap(), b"read me");
        assert_eq!(root.stat("/made").unwrap_err().errno(), Some(ENOENT));
        assert_eq!(snapshot(dir.path()), before);
    }
}

#[test]
fn a_removed_directory_can_be_made_again_empty() {
    let dir = export();
    let served = serve(
        ReadOnlyView::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = served.client().attach("tester", "").unwrap();
    root.remove("/docs/readme").unwrap();
    root.remove("/docs").unwrap();
    root.mkdir("/docs", 0o700).unwrap();
    assert!(
        root.readdir("/docs").unwrap().is_empty(),
        "host entries stay hidden"
    );
    assert_eq!(root.stat("/docs").unwrap().permissions(), 0o700);
    assert!(dir.path().join("docs/readme").exists());
}

#[test]
fn directories_do_not_rename_and_memory_is_bounded() {
    let dir = export();
    let view = ReadOnlyView::new(dir.path())
        .unwrap()
        .with_memory_limit(1000);
    let served = serve(view, ServerConfig::default(), Via::Tcp);
    let root = served.client().attach("tester", "").unwrap();
    assert_eq!(
        root.rename("/docs", "/docs2").unwrap_err().errno(),
        Some(EXDEV)
    );
    root.write_file("/small", &[1; 600]).unwrap();
    let err = root.write_file("/big", &[2; 600]).unwrap_err();
    assert_eq!(err.errno(), Some(ENOSPC), "{err}");
    root.remove("/small").unwrap();
    root.write_file("/big", &[2; 600]).unwrap();
    assert!(served.server.fs().memory_used() <= 1000);
}
