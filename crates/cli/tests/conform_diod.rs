//! External conformance: diod's own clients (`diodls`, `diodcat`, Debian's `diod`
//! package, installed by `scripts/setup.sh`) against `nf serve` over loopback tcp.
//! They send `Tauth` first and take `Rlerror(ENOENT)` as "no authentication needed"
//! (what diod answers); anything else stops them before they attach.

mod serve_support;

use std::process::Command;

use serve_support::{run_bounded, text, Served};

/// A tcp port free a moment ago on loopback.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn diod_tool(name: &str) -> Command {
    let path = format!("/usr/sbin/{name}");
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} is missing: run scripts/setup.sh (it installs Debian's diod)"
    );
    Command::new(path)
}

#[test]
fn diods_clients_list_and_read_through_nf_serve() {
    let port = free_port();
    let tcp = format!("127.0.0.1:{port}");
    let s = Served::start(&["--tcp", &tcp]);
    std::fs::create_dir(s.export.join("sub")).unwrap();
    std::fs::write(s.export.join("sub/b.txt"), b"bee\n").unwrap();

    let out = run_bounded(diod_tool("diodls").args(["-t", "20", "-s", &tcp, "-a", "/fs", "/"]));
    let listed = text(&out.stdout);
    assert!(
        out.status.success() && listed.contains("hello.txt") && listed.contains("sub"),
        "diodls -a /fs /: {listed}\n{}",
        text(&out.stderr)
    );
    let out = run_bounded(diod_tool("diodls").args(["-t", "20", "-s", &tcp, "-a", "/", "/"]));
    let root = text(&out.stdout);
    for name in ["status", "log", "pipe", "fs", "ro", "mem"] {
        assert!(
            root.lines().any(|l| l.trim() == name),
            "no {name} in {root}"
        );
    }
    let out = run_bounded(diod_tool("diodcat").args([
        "-t",
        "20",
        "-s",
        &tcp,
        "-a",
        "/fs",
        "hello.txt",
        "sub/b.txt",
    ]));
    assert_eq!(
        text(&out.stdout),
        "hello\nbee\n",
        "diodcat: {}",
        text(&out.stderr)
    );
    let out = run_bounded(diod_tool("diodcat").args(["-t", "20", "-s", &tcp, "-a", "/fs", "nope"]));
    assert!(!out.status.success(), "a missing file is an error");
}
