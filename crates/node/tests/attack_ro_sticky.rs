//! Attack: `/ro`'s shared overlay ignored the sticky bit of host
//! directories. A user unlinked root's file in a 1777 directory (a whiteout in the
//! overlay) and wrote their own in its place; every other client then read the
//! user's content as if it were root's. Here an unprivileged account tries that and
//! every variant of it (rename over the file, rename it away, chown, chgrp) against
//! a root server on its real unix socket, and a second account checks what it reads.

mod support;

use std::os::unix::fs::PermissionsExt;

use nf_ninep::errno::EPERM;
use nf_ninep::{LOpenFlags, SetAttr, SetattrMask};
use nf_ninep_client::{Client, Root};
use nf_testkit::users::{as_user, second_test_account, test_account, Account};
use support::Node;

/// What root's file says.
const NOTICE: &[u8] = b"from root: the queue is closed\n";

/// A root server exporting a directory with a sticky, world-writable `pub/` (as
/// `/tmp`) that holds root's 0644 `notice`; its sockets reachable by every user.
fn node_with_sticky_dir() -> Node {
    let node = Node::start();
    let open = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    // The test's own directories are root's 0700; the server's sockets must be
    // reachable as they are under /run/ninefold.
    open(node.dir.path(), 0o755);
    open(node.socket.parent().unwrap(), 0o755);
    open(&node.socket, 0o777);
    let e = &node.export;
    open(e, 0o755);
    std::fs::create_dir(e.join("pub")).unwrap();
    open(&e.join("pub"), 0o1777);
    std::fs::write(e.join("pub/notice"), NOTICE).unwrap();
    open(&e.join("pub/notice"), 0o644);
    node
}

fn session(node: &Node, user: &Account) -> Root {
    let client = as_user(user, || Client::connect_unix(&node.socket)).expect("connect");
    client.attach(&user.name, "").expect("attach as oneself")
}

fn errno<T: std::fmt::Debug>(r: Result<T, nf_ninep_client::ClientError>) -> u32 {
    r.expect_err("must be refused").errno().unwrap_or(0)
}

#[test]
fn a_user_cannot_replace_roots_file_in_a_sticky_directory_of_the_overlay() {
    let (user, other) = (test_account().unwrap(), second_test_account().unwrap());
    let node = node_with_sticky_dir();
    let me = session(&node, &user);

    // The attack as reported: unlink root's file, then write one's own in its place.
    assert_eq!(
        errno(me.remove("/ro/pub/notice")),
        EPERM,
        "unlink (Tremove)"
    );
    let dir = me.walk("/ro/pub").unwrap();
    assert_eq!(
        errno(dir.unlinkat("notice", false)),
        EPERM,
        "unlink (Tunlinkat)"
    );
    assert!(
        me.create("/ro/pub/notice", LOpenFlags::WRONLY, 0o644)
            .is_err(),
        "the name is still root's file"
    );

    // The same through rename: over root's file, and root's file away.
    me.write_file("/ro/pub/forged", b"from root: send your password to me\n")
        .expect("a user may add their own file to a sticky directory");
    assert_eq!(
        errno(me.rename("/ro/pub/forged", "/ro/pub/notice")),
        EPERM,
        "rename over root's file"
    );
    assert_eq!(
        errno(me.rename("/ro/pub/notice", "/ro/pub/old")),
        EPERM,
        "rename root's file away"
    );

    // Nor may the user make their file root's, or root's file theirs.
    let to = |uid, gid| SetAttr {
        uid,
        gid,
        ..SetAttr::default()
    };
    let forged = me.walk("/ro/pub/forged").unwrap();
    assert_eq!(
        errno(forged.setattr(SetattrMask::UID, to(0, 0))),
        EPERM,
        "chown to root"
    );
    assert_eq!(
        errno(forged.setattr(SetattrMask::GID, to(0, 0))),
        EPERM,
        "chgrp to a group the user is not in"
    );
    let notice = me.walk("/ro/pub/notice").unwrap();
    assert_eq!(
        errno(notice.setattr(SetattrMask::UID, to(user.uid, user.gid))),
        EPERM,
        "chown of root's file"
    );

    // Another user still reads root's words, still root's.
    let them = session(&node, &other);
    assert_eq!(them.read_file("/ro/pub/notice").unwrap(), NOTICE);
    assert_eq!(them.stat("/ro/pub/notice").unwrap().attr.uid, 0);

    // A file root made in the overlay itself is protected the same way.
    let root = node.root();
    root.write_file("/ro/pub/rules", b"root's rules\n").unwrap();
    assert_eq!(errno(me.remove("/ro/pub/rules")), EPERM);
    assert_eq!(errno(me.rename("/ro/pub/forged", "/ro/pub/rules")), EPERM);

    // What the rule still allows: the user's own entries, and root anything.
    me.rename("/ro/pub/forged", "/ro/pub/mine")
        .expect("renaming one's own file");
    me.remove("/ro/pub/mine").expect("removing one's own file");
    root.remove("/ro/pub/notice")
        .expect("root may remove anything");
    root.remove("/ro/pub/rules").unwrap();
}

#[test]
fn chmod_and_chown_in_the_overlay_drop_set_id_bits_as_the_kernel_does() {
    let user = test_account().unwrap();
    let node = node_with_sticky_dir();
    let me = session(&node, &user);
    let root = node.root();

    // Root's setuid file anyone may write: a user's write drops the bit.
    root.write_file("/ro/pub/tool", b"#!/bin/sh\n").unwrap();
    root.chmod("/ro/pub/tool", 0o4777).unwrap();
    let f = me.open("/ro/pub/tool", LOpenFlags::WRONLY).unwrap();
    f.write_at(b"#", 0).unwrap();
    f.close().unwrap();
    let mode = root.stat("/ro/pub/tool").unwrap().attr.mode;
    assert_eq!(
        mode & 0o6000,
        0,
        "setuid dropped by the user's write: {mode:o}"
    );

    // A user cannot put setgid for a group they are not in on their own file.
    me.write_file("/ro/pub/mine", b"x").unwrap();
    let mine = me.walk("/ro/pub/mine").unwrap();
    let attr = SetAttr {
        gid: 0,
        ..SetAttr::default()
    };
    assert_eq!(errno(mine.setattr(SetattrMask::GID, attr)), EPERM);
    root.walk("/ro/pub/mine")
        .unwrap()
        .setattr(SetattrMask::GID, attr)
        .expect("root may chgrp");
    me.chmod("/ro/pub/mine", 0o2755).unwrap();
    let mode = root.stat("/ro/pub/mine").unwrap().attr.mode;
    assert_eq!(
        mode & 0o2000,
        0,
        "setgid of a foreign group dropped: {mode:o}"
    );
    // Root's chown of a setuid file drops the bit too.
    root.chmod("/ro/pub/mine", 0o4755).unwrap();
    let attr = SetAttr {
        uid: 0,
        ..SetAttr::default()
    };
    root.walk("/ro/pub/mine")
        .unwrap()
        .setattr(SetattrMask::UID, attr)
        .unwrap();
    let st = root.stat("/ro/pub/mine").unwrap().attr;
    assert_eq!((st.uid, st.mode & 0o4000), (0, 0), "{:o}", st.mode);
}
