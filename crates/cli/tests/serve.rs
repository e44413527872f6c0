//! `nf serve` and the `nf` file commands end to end: real processes, a real unix socket.

mod serve_support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use nf_ninep::errno::EPIPE;
use nf_ninep::{LOpenFlags, DEFAULT_MAX_MSIZE};
use nf_ninep_client::{Client, ClientConfig};
use nf_node::pipe::DEFAULT_PIPE_CAPACITY;
use serve_support::{nf, run_bounded, signal, text, wait_bounded, Served, Watchdog, DEADLINE};

#[test]
fn file_commands_end_to_end() {
    let s = Served::start(&[]);
    let ok = |args: &[&str]| {
        let out = s.run(args);
        assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };

    let ls = ok(&["ls", &s.at("/")]);
    for name in ["fs/", "log", "mem/", "pipe/", "ro/", "status"] {
        assert!(ls.lines().any(|l| l == name), "{name} missing in {ls}");
    }
    assert!(ok(&["ls", "-l", &s.at("/fs")]).contains("-rw-r--r--"));
    assert!(ok(&["cat", &s.at("/status")]).contains("cores "));
    assert!(ok(&["stat", &s.at("/status")]).contains("size 0"));

    // write / cat / mkdir / rm on /fs reach the host directory.
    ok(&["write", &s.at("/fs/note"), "written", "by", "nf"]);
    assert_eq!(
        std::fs::read(s.export.join("note")).unwrap(),
        b"written by nf\n"
    );
    assert_eq!(ok(&["cat", &s.at("/fs/note")]), "written by nf\n");
    ok(&["write", "-a", &s.at("/fs/note"), "more"]);
    assert_eq!(ok(&["cat", &s.at("/fs/note")]), "written by nf\nmore\n");
    ok(&["mkdir", &s.at("/fs/dir")]);
    assert!(s.export.join("dir").is_dir());
    ok(&["rm", &s.at("/fs/dir"), &s.at("/fs/note")]);
    assert!(!s.export.join("dir").exists() && !s.export.join("note").exists());

    // cp both ways, with a file larger than one message.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let local = s.dir.path().join("big.bin");
    std::fs::write(&local, &big).unwrap();
    ok(&[
        "cp",
        "--msize",
        "8192",
        local.to_str().unwrap(),
        &s.at("/fs/big.bin"),
    ]);
    assert_eq!(std::fs::read(s.export.join("big.bin")).unwrap(), big);
    let back = s.dir.path().join("back.bin");
    ok(&["cp", &s.at("/ro/big.bin"), back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), big);
    // Remote to remote; writes to /ro stay off the host.
    ok(&["cp", &s.at("/fs/hello.txt"), &s.at("/ro/copy.txt")]);
    assert_eq!(ok(&["cat", &s.at("/ro/copy.txt")]), "hello\n");
    assert!(!s.export.join("copy.txt").exists());

    // The log, and tail.
    for i in 0..15 {
        ok(&["write", &s.at("/log"), &format!("line {i}")]);
    }
    let tail = ok(&["tail", "-n", "3", &s.at("/log")]);
    assert_eq!(tail, "line 12\nline 13\nline 14\n");
}

#[test]
fn errors_name_the_file_and_the_reason() {
    let s = Served::start(&[]);
    let out = s.run(&["cat", &s.at("/fs/nosuch")]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("/fs/nosuch") && err.contains("No such file"),
        "{err}"
    );

    let out = s.run(&["cat", &s.at("/mem/nosuchjob/0/1")]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/mem/nosuchjob") && err.contains("No such file"),
        "{err}"
    );

    let out = s.run(&["write", &s.at("/status"), "x"]);
    assert!(!out.status.success(), "status is read-only");

    let out = s.run(&["cp", "a", "b"]);
    assert!(text(&out.stderr).contains("neither is remote"));

    let out = s.run(&["ls", "unix:/nonexistent/sock:/"]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("nf serve"), "{err}");

    let out = s.run(&["ls", "ftp:x:/"]);
    assert!(text(&out.stderr).contains("bad address"));
}

#[test]
fn tail_follows_the_log_as_it_grows() {
    let s = Served::start(&[]);
    assert!(s.run(&["write", &s.at("/log"), "old"]).status.success());
    let mut follower = nf()
        .args(["tail", "-f", "-n", "1", &s.at("/log")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _watchdog = Watchdog::new(follower.id());
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "old");
    assert!(s.run(&["write", &s.at("/log"), "new"]).status.success());
    assert_eq!(lines.next().unwrap().unwrap(), "new");
    follower.kill().unwrap();
    follower.wait().unwrap();
}

#[test]
fn a_pipe_between_processes_and_a_crashed_writer() {
    let s = Served::start(&[]);
    // Opening it for creation only (a writer that writes nothing) ends no stream.
    assert!(s.run(&["write", &s.at("/pipe/p")]).status.success());
    // A reader process: it waits for a writer.
    let mut reader = nf()
        .args(["cat", &s.at("/pipe/p")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A reader that never prints is killed, ending its output: the test fails, not hangs.
    let _watchdog = Watchdog::new(reader.id());
    let mut got = BufReader::new(reader.stdout.take().unwrap()).lines();
    // A writer fed from stdin, killed outright after writing.
    let mut writer = nf()
        .args(["write", &s.at("/pipe/p")])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    writer
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"before the crash\n")
        .unwrap();
    writer.stdin.as_mut().unwrap().flush().unwrap();
    // Kill the writer once its bytes have gone through the pipe.
    assert_eq!(got.next().unwrap().unwrap(), "before the crash");
    signal(writer.id(), "KILL");
    writer.wait().unwrap();
    // Then end of file when the connection died: nothing more, and `cat` succeeds.
    assert!(got.next().is_none(), "end of file after the crash");
    assert!(wait_bounded(&mut reader).success());
}

#[test]
fn sigterm_stops_the_server_and_removes_its_socket() {
    let mut s = Served::start(&[]);
    assert!(s.socket.exists());
    let status = s.terminate();
    assert!(status.success(), "{status}");
    assert!(!s.socket.exists());
}

#[test]
fn detached_server_answers_then_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run/nf.sock");
    let out = run_bounded(
        nf().arg("serve")
            .arg("--unix")
            .arg(&socket)
            .env("NF_LOG", "warn"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let pid: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("nf serve: ready (pid "))
        .and_then(|l| l.strip_suffix(')'))
        .expect("ready line with a pid")
        .parse()
        .unwrap();
    let addr = format!("unix:{}:/status", socket.display());
    let cat = run_bounded(nf().args(["cat", &addr]));
    assert!(text(&cat.stdout).contains("arch "));
    signal(pid, "TERM");
    assert!(
        nf_testkit::exited_within(pid, DEADLINE),
        "detached server did not stop"
    );
    assert!(!socket.exists(), "the stopped server left its socket");
}

#[test]
fn remote_listening_without_authentication_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bounded(
        nf().args(["serve", "-f", "--no-unix", "--tcp", "0.0.0.0:0"])
            .env("NF_LOG", "warn"),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("without authentication") && err.contains("0.0.0.0"),
        "{err}"
    );
    // Loopback is fine.
    let mut child = nf()
        .args(["serve", "-f", "--no-unix", "--tcp", "127.0.0.1:0"])
        .env("NF_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _watchdog = Watchdog::new(child.id());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.next().unwrap().unwrap();
    // The address is printed the way the client commands take it.
    let addr = listening.strip_prefix("nf serve: listening on ").unwrap();
    assert!(addr.starts_with("tcp:127.0.0.1:"), "{listening}");
    let cat = run_bounded(nf().args(["cat", &format!("{addr}:/status")]));
    assert!(text(&cat.stdout).contains("arch "), "{}", text(&cat.stderr));
    signal(child.id(), "TERM");
    assert!(wait_bounded(&mut child).success());
    drop(dir);
}

#[test]
fn bad_serve_arguments_are_refused_clearly() {
    let out = run_bounded(nf().args(["serve", "-f", "--msize", "100"]));
    assert!(text(&out.stderr).contains("msize"), "{}", text(&out.stderr));
    let out = run_bounded(nf().args(["serve", "-f", "--export", "/nonexistent/dir"]));
    assert!(text(&out.stderr).contains("not a directory"));
    let out = run_bounded(nf().args(["serve", "-f", "--no-unix"]));
    assert!(text(&out.stderr).contains("nothing to listen on"));
}

#[test]
fn shm_clients_work_and_a_killed_one_is_released() {
    let s = Served::start(&[]);
    let shm = format!("shm:{}.shm", s.socket.display());
    let out = s.run(&["cat", &format!("{shm}:/status")]);
    assert!(
        text(&out.stdout).contains("cores "),
        "{}",
        text(&out.stderr)
    );
    // A reader over shared memory, blocked on a pipe, then killed outright.
    assert!(s.run(&["write", &s.at("/pipe/k")]).status.success());
    let mut reader = nf()
        .args(["cat", &format!("{shm}:/pipe/k")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _watchdog = Watchdog::new(reader.id());
    // Every reply within the deadline: a write that never wakes fails the test.
    let bounded = ClientConfig {
        reply_timeout: Some(DEADLINE),
        ..ClientConfig::default()
    };
    let client = Client::connect_unix_with(&s.socket, bounded).unwrap();
    let root = client.attach("root", "").unwrap();
    let w = root.open("/pipe/k", LOpenFlags::WRONLY).unwrap();
    // Once the reader prints what was written, it has the pipe open.
    w.write_at(b"x", 0).unwrap();
    let mut got = [0u8; 1];
    std::io::Read::read_exact(reader.stdout.as_mut().unwrap(), &mut got).unwrap();
    assert_eq!(&got, b"x");
    signal(reader.id(), "KILL");
    reader.wait().unwrap();
    // Nothing drains the pipe now but the dead reader's last read, which may still wait
    // in the server for data (one message at most): the writes fill that and the
    // pipe's buffer, then one blocks until the server notices the dead client and lets
    // its reader go, which wakes it with EPIPE.
    let more = vec![b'y'; DEFAULT_PIPE_CAPACITY + DEFAULT_MAX_MSIZE as usize + 1];
    let err = w.write_all_at(&more, 0).expect_err("reader never released");
    assert_eq!(err.errno(), Some(EPIPE), "{err}");
}

#[test]
fn cp_r_copies_a_tree_both_ways_with_modes_and_links() {
    use std::os::unix::fs::PermissionsExt;
    let s = Served::start(&[]);
    let ok = |args: &[&str]| {
        let out = s.run(args);
        assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
    };
    let src = s.dir.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    for k in 0..40u32 {
        let bytes: Vec<u8> = (0..k * 997).map(|i| (i % 253) as u8).collect();
        std::fs::write(src.join(format!("f{k}")), bytes).unwrap();
    }
    std::fs::write(src.join("a/b/secret"), b"x").unwrap();
    std::fs::set_permissions(
        src.join("a/b/secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("f1", src.join("link")).unwrap();
    ok(&["cp", "-r", src.to_str().unwrap(), &s.at("/fs/")]);
    let there = s.export.join("tree");
    for k in 0..40u32 {
        let name = format!("f{k}");
        assert_eq!(
            std::fs::read(there.join(&name)).unwrap(),
            std::fs::read(src.join(&name)).unwrap()
        );
    }
    let mode = std::fs::metadata(there.join("a/b/secret"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read_link(there.join("link")).unwrap().to_str(),
        Some("f1")
    );
    let back = s.dir.path().join("back");
    ok(&["cp", "-r", &s.at("/fs/tree"), back.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(back.join("f39")).unwrap(),
        std::fs::read(src.join("f39")).unwrap()
    );
    assert_eq!(std::fs::read(back.join("a/b/secret")).unwrap(), b"x");
    assert_eq!(
        std::fs::read_link(back.join("link")).unwrap().to_str(),
        Some("f1")
    );
    // Server to server (here the same server) copies the tree there, modes and links
    // included.
    ok(&["cp", "-r", &s.at("/fs/tree"), &s.at("/fs/other")]);
    let other = s.export.join("other");
    assert_eq!(
        std::fs::read(other.join("f39")).unwrap(),
        std::fs::read(src.join("f39")).unwrap()
    );
    let mode = std::fs::metadata(other.join("a/b/secret"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read_link(other.join("link")).unwrap().to_str(),
        Some("f1")
    );
}
