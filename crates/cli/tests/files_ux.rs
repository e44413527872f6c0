//! The file commands where a user's habits from cp(1) and stat(1) apply.

mod serve_support;

use serve_support::{text, Served};

#[test]
fn cp_into_a_directory_keeps_the_name_both_ways() {
    let s = Served::start(&[]);
    let ok = |args: &[&str]| {
        let out = s.run(args);
        assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
    };
    // Remote file into a local directory (`nf cp :/ro/input.dat .`).
    let here = s.dir.path().join("here");
    std::fs::create_dir(&here).unwrap();
    ok(&["cp", &s.at("/ro/hello.txt"), here.to_str().unwrap()]);
    assert_eq!(std::fs::read(here.join("hello.txt")).unwrap(), b"hello\n");
    // Local file into a remote directory, with and without a trailing slash.
    let local = s.dir.path().join("up.txt");
    std::fs::write(&local, b"up\n").unwrap();
    ok(&["mkdir", &s.at("/fs/sub")]);
    ok(&["cp", local.to_str().unwrap(), &s.at("/fs/sub")]);
    assert_eq!(std::fs::read(s.export.join("sub/up.txt")).unwrap(), b"up\n");
    ok(&["cp", local.to_str().unwrap(), &s.at("/fs/")]);
    assert_eq!(std::fs::read(s.export.join("up.txt")).unwrap(), b"up\n");
    // Remote to a remote directory.
    ok(&["cp", &s.at("/fs/hello.txt"), &s.at("/fs/sub")]);
    assert_eq!(
        std::fs::read(s.export.join("sub/hello.txt")).unwrap(),
        b"hello\n"
    );
}
