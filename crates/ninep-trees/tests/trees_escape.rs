//! Nothing outside the export can be reached: not by `..`, not through symlinks (made
//! on the host or by a client), for #U and #R alike.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

use nf_ninep::errno::{ELOOP, ENOENT, EOPNOTSUPP};
use nf_ninep::{LOpenFlags, Rmessage};
use nf_ninep_client::Root;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::{PassthroughFs, ReadOnlyView};
use nf_testkit::ninep::{serve, Via};

/// `base/outside/secret` and an export `base/inside` holding symlinks that point out.
fn layout() -> tempfile::TempDir {
    let base = tempfile::tempdir().unwrap();
    fs::create_dir(base.path().join("outside")).unwrap();
    fs::write(base.path().join("outside/secret"), "secret").unwrap();
    fs::set_permissions(
        base.path().join("outside/secret"),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let inside = base.path().join("inside");
    fs::create_dir(&inside).unwrap();
    fs::write(inside.join("ok"), "fine").unwrap();
    symlink("../outside", inside.join("reldir")).unwrap();
    symlink(base.path().join("outside"), inside.join("absdir")).unwrap();
    symlink("../outside/secret", inside.join("relfile")).unwrap();
    base
}

fn assert_contained(root: &Root, base: &std::path::Path) {
    // `..` stops at the root.
    let up = root.walk("../../..").unwrap();
    assert_eq!(up.qid(), root.qid());
    assert_eq!(
        root.stat("/../outside/secret").unwrap_err().errno(),
        Some(ENOENT)
    );
    assert_eq!(root.read_file("../../ok").unwrap(), b"fine");

    // Symlinked directories are not traversed: the server says the link is not a
    // directory (the client reports the server's errno for a partial walk).
    for link in ["/reldir/secret", "/absdir/secret"] {
        let err = root.read_file(link).unwrap_err();
        assert_eq!(err.errno(), Some(nf_ninep::errno::ENOTDIR), "{link}: {err}");
    }
    // A symlink to a file cannot be opened; its target is readable as text only.
    let err = root.open("/relfile", LOpenFlags::RDONLY).unwrap_err();
    assert_eq!(err.errno(), Some(ELOOP), "{err}");
    assert_eq!(root.readlink("/relfile").unwrap(), "../outside/secret");
    assert!(root.stat("/relfile").unwrap().is_symlink());
    // chmod through a symlink is refused and the target keeps its mode.
    let err = root.chmod("/relfile", 0o777).unwrap_err();
    assert!(
        matches!(err.errno(), Some(EOPNOTSUPP) | Some(nf_ninep::errno::EROFS)),
        "{err}"
    );
    let mode = fs::metadata(base.join("outside/secret"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);

    // Walking through a symlink in one message stops at the link.
    let walk = root
        .client()
        .call(nf_ninep::Twalk {
            fid: root.number(),
            newfid: 999,
            wnames: vec!["reldir".into(), "secret".into()],
        })
        .unwrap();
    match walk {
        Rmessage::Rwalk(w) => assert_eq!(w.wqids.len(), 1, "only the link itself"),
        Rmessage::Rlerror(e) => assert_eq!(e.ecode, nf_ninep::errno::ENOTDIR),
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read(base.join("outside/secret")).unwrap(), b"secret");
}

#[test]
fn passthrough_keeps_clients_inside() {
    let base = layout();
    let served = serve(
        PassthroughFs::new(base.path().join("inside")).unwrap(),
        ServerConfig::default(),
        Via::Tcp,
    );
    let root = served.client().attach("tester", "").unwrap();
    assert_contained(&root, base.path());

    // A symlink made by a client leads nowhere either.
    root.symlink("/mine", "/etc").unwrap();
    assert_eq!(
        root.read_file("/mine/passwd").unwrap_err().errno(),
        Some(nf_ninep::errno::ENOTDIR)
    );
    root.symlink("/mine2", "../outside/secret").unwrap();
    assert_eq!(
        root.open("/mine2", LOpenFlags::WRONLY).unwrap_err().errno(),
        Some(ELOOP)
    );
    // Truncating through a symlink is refused too.
    assert!(root.truncate("/mine2", 0).is_err());
    assert_eq!(
        fs::read(base.path().join("outside/secret")).unwrap(),
        b"secret"
    );
}

#[test]
fn readonly_view_keeps_clients_inside() {
    let base = layout();
    let served = serve(
        ReadOnlyView::new(base.path().join("inside")).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = served.client().attach("tester", "").unwrap();
    assert_contained(&root, base.path());
    assert!(root.write_file("/relfile", b"x").is_err());
    assert_eq!(
        fs::read(base.path().join("outside/secret")).unwrap(),
        b"secret"
    );
}

#[test]
fn a_directory_swapped_for_a_symlink_on_the_host_leads_nowhere() {
    let base = layout();
    let inside = base.path().join("inside");
    fs::create_dir(inside.join("d")).unwrap();
    fs::write(inside.join("d/secret"), "inner").unwrap();
    let served = serve(
        PassthroughFs::new(&inside).unwrap(),
        ServerConfig::default(),
        Via::Tcp,
    );
    let root = served.client().attach("tester", "").unwrap();
    let fid = root.walk("/d/secret").unwrap();
    // The host replaces d with a symlink to the outside directory.
    fs::remove_dir_all(inside.join("d")).unwrap();
    symlink("../outside", inside.join("d")).unwrap();
    let err = fid.lopen(LOpenFlags::RDONLY).unwrap_err();
    assert!(
        matches!(err.errno(), Some(ELOOP) | Some(nf_ninep::errno::ENOTDIR)),
        "{err}"
    );
}
