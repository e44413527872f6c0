//! The file commands where a user's habits from cp(1) and stat(1) apply.

mod serve_support;

use std::process::Command;
use std::time::Duration;

use nf_ninep_server::{ListenAddr, ServerConfig};
use nf_ninep_trees::SyntheticTree;
use nf_testkit::ninep::{serve, Probe, Via};
use serve_support::{nf, run_bounded, text, Served};

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

/// `nf cp` between two servers (each a tree of probe files, which see whether requests
/// were in flight together): reads in flight on the source feed writes in flight on
/// the destination; a stream is written one message at a time, in order; `--depth 1`
/// sends one message at a time on both sides.
#[test]
fn cp_between_servers_keeps_reads_and_writes_in_flight_and_a_stream_in_order() {
    let data: Vec<u8> = (0..3 * 4072 + 5).map(|i| (i % 251) as u8).collect();
    let from = SyntheticTree::new();
    let (src, src1) = (Probe::holding(true, &data), Probe::holding(true, &data));
    from.add_file("/src", src.clone()).unwrap();
    from.add_file("/src1", src1.clone()).unwrap();
    let to = SyntheticTree::new();
    // Waiting longer for company than a read takes, so writes behind meet.
    let dst = Probe::new(true).waiting(Duration::from_secs(1));
    let (stream, dst1) = (Probe::new(false), Probe::new(true));
    to.add_file("/dst", dst.clone()).unwrap();
    to.add_file("/stream", stream.clone()).unwrap();
    to.add_file("/dst1", dst1.clone()).unwrap();
    let (from, to) = (
        serve(from, ServerConfig::default(), Via::Unix),
        serve(to, ServerConfig::default(), Via::Unix),
    );
    let at = |addr: &ListenAddr, path: &str| match addr {
        ListenAddr::Unix(sock) => format!("unix:{}:{path}", sock.display()),
        ListenAddr::Tcp(a) => format!("tcp:{a}:{path}"),
    };
    let cp = |extra: &[&str], src: &str, dst: &str| {
        let out = run_bounded(
            nf().args(["cp", "--msize", "4096"])
                .args(extra)
                .args([at(from.addr(), src), at(to.addr(), dst)]),
        );
        assert!(out.status.success(), "nf cp: {}", text(&out.stderr));
    };
    cp(&[], "/src", "/dst");
    let (got, wrote) = dst.seen();
    assert!(got == data, "the bytes differ");
    let read = src.seen().1;
    assert!(
        read >= 2 && wrote >= 2,
        "(reads, writes) at once: ({read}, {wrote})"
    );
    cp(&[], "/src", "/stream");
    let (got, wrote) = stream.seen();
    assert!(got == data, "the bytes differ or came out of order");
    assert_eq!(wrote, 1, "two writes were in flight on a stream");
    cp(&["--depth", "1"], "/src1", "/dst1");
    let (got, wrote) = dst1.seen();
    assert!(got == data, "the bytes differ");
    assert_eq!((src1.seen().1, wrote), (1, 1), "(reads, writes) at once");
}

#[test]
fn cp_r_between_servers_copies_the_tree() {
    let (a, b) = (Served::start(&[]), Served::start(&[]));
    let tree = a.export.join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(tree.join("big.bin"), &big).unwrap();
    for i in 0..20 {
        std::fs::write(tree.join(format!("sub/f{i}")), format!("file {i}\n")).unwrap();
    }
    std::fs::write(tree.join("sub/deeper/empty"), b"").unwrap();
    std::os::unix::fs::symlink("sub/f1", tree.join("link")).unwrap();
    let out = a.run(&[
        "cp",
        "-r",
        "--msize",
        "8192",
        &a.at("/fs/tree"),
        &b.at("/fs/"),
    ]);
    assert!(out.status.success(), "nf cp -r: {}", text(&out.stderr));
    let copy = b.export.join("tree");
    assert!(std::fs::read(copy.join("big.bin")).unwrap() == big);
    for i in 0..20 {
        assert_eq!(
            std::fs::read_to_string(copy.join(format!("sub/f{i}"))).unwrap(),
            format!("file {i}\n")
        );
    }
    assert_eq!(std::fs::read(copy.join("sub/deeper/empty")).unwrap(), b"");
    assert_eq!(
        std::fs::read_link(copy.join("link")).unwrap(),
        std::path::Path::new("sub/f1")
    );
}
