//! The file commands where a user's habits from cp(1) and stat(1) apply.

mod serve_support;

use std::process::Command;

use serve_support::{run_bounded, text, Served};

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

/// `nf ARGS` on a terminal: script(1) gives it a pseudo-terminal; what it wrote there
/// (stdout and stderr together) is script's output.
fn on_a_terminal(args: &[&str]) -> (bool, String) {
    let line = std::iter::once(env!("CARGO_BIN_EXE_nf"))
        .chain(args.iter().copied())
        .map(|a| shell_words::quote(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let out = run_bounded(Command::new("script").args(["-qec", &line, "/dev/null"]));
    (out.status.success(), text(&out.stdout))
}

#[test]
fn cp_shows_progress_on_a_terminal_for_a_long_copy_and_nothing_with_q_or_off_one() {
    let s = Served::start(&[]);
    // 24 MiB: over the 8 MiB from which a bar is worth showing.
    let data = vec![7u8; 24 << 20];
    std::fs::write(s.export.join("big.bin"), &data).unwrap();
    let local = s.dir.path().join("big.copy");
    let local = local.to_str().unwrap();
    let total = "24.00 MiB";
    // Download and upload, on a terminal: a bar with the byte counts.
    let (ok, shown) = on_a_terminal(&["cp", &s.at("/fs/big.bin"), local]);
    assert!(ok, "{shown}");
    assert!(shown.contains(total), "no progress shown:\n{shown}");
    assert_eq!(std::fs::read(local).unwrap().len(), data.len());
    let (ok, shown) = on_a_terminal(&["cp", local, &s.at("/fs/up.bin")]);
    assert!(ok, "{shown}");
    assert!(shown.contains(total), "no progress shown:\n{shown}");
    // -q: nothing, on a terminal too.
    let (ok, shown) = on_a_terminal(&["cp", "-q", &s.at("/fs/big.bin"), local]);
    assert!(ok && shown.trim().is_empty(), "{shown}");
    // Off a terminal (a log, a pipe): nothing either.
    let out = s.run(&["cp", &s.at("/fs/big.bin"), local]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        text(&out.stderr)
    );
}
