//! `/xcpu` through a real 9P client against a real node server: the session files one
//! by one, the job's life (stdin, output, wait, kill), when sessions end, the limits,
//! and a second, unprivileged account trying what it must not.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use nf_ninep::errno::{EACCES, EBUSY, EDQUOT, EFBIG, EINVAL, ENOENT, EPIPE};
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, File, Root};
use nf_ninep_server::ServerConfig;
use nf_node::xcpu::XcpuConfig;
use nf_testkit::users::{as_user, test_account};
use support::{eventually, read, write, Node};

fn node_with(xcpu: XcpuConfig) -> Node {
    Node::with_xcpu(ServerConfig::default(), xcpu)
}

/// Opens `/xcpu/clone` (the open holds the session) and reads the session's number.
fn clone(root: &Root) -> (File, u64) {
    let mut f = root
        .open("/xcpu/clone", LOpenFlags::RDONLY)
        .expect("open clone");
    let text = String::from_utf8(f.read_to_end().unwrap()).unwrap();
    (f, text.trim().parse().expect("a session number"))
}

fn errno<T: std::fmt::Debug>(r: Result<T, nf_ninep_client::ClientError>) -> u32 {
    r.expect_err("must fail").errno().unwrap_or(0)
}

fn names(root: &Root, path: &str) -> Vec<String> {
    let mut n: Vec<String> = root
        .readdir(path)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n != "." && n != "..")
        .collect();
    n.sort();
    n
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn running_pid(root: &Root, id: u64) -> u32 {
    let state = read(root, &format!("/xcpu/{id}/state"));
    state
        .strip_prefix("running ")
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("not running: {state:?}"))
}

/// A new session running `argv`: its hold, number and directory.
fn started(root: &Root, argv: &str) -> (File, u64, String) {
    let (hold, id) = clone(root);
    let dir = format!("/xcpu/{id}");
    write(root, &format!("{dir}/argv"), argv);
    write(root, &format!("{dir}/ctl"), "exec");
    (hold, id, dir)
}

#[test]
fn the_session_files_one_by_one() {
    let node = node_with(XcpuConfig::default());
    let root = node.root();
    assert_eq!(names(&root, "/xcpu"), ["arch", "clone", "env", "procs"]);
    let arch = read(&root, "/xcpu/arch");
    assert_eq!(arch.trim(), format!("linux/{}", std::env::consts::ARCH));
    assert!(read(&root, "/xcpu/env").contains("PATH="));

    let (_hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    assert_eq!(
        names(&root, &dir),
        [
            "argv", "clones", "ctl", "env", "exec", "fs", "id", "state", "stderr", "stdin",
            "stdout", "tree", "wait"
        ]
    );
    assert_eq!(read(&root, &format!("{dir}/id")).trim(), id.to_string());
    assert_eq!(read(&root, &format!("{dir}/ctl")).trim(), id.to_string());
    assert_eq!(read(&root, &format!("{dir}/state")), "new\n");
    let procs = read(&root, "/xcpu/procs");
    assert!(procs.starts_with(&format!("{id} root new - ")), "{procs}");

    // Upload a script into fs/ with its mode, set argv/env, run it.
    let script = "#!/bin/sh\necho \"out $1 $GREETING\"\necho err >&2\npwd\nexit 3\n";
    let mut f = root
        .create(&format!("{dir}/fs/job.sh"), LOpenFlags::WRONLY, 0o755)
        .unwrap();
    f.write_all(script.as_bytes()).unwrap();
    drop(f);
    assert_eq!(names(&root, &format!("{dir}/fs")), ["job.sh"]);
    write(&root, &format!("{dir}/argv"), "job.sh 'two words'");
    write(&root, &format!("{dir}/env"), "GREETING=hi\n");
    assert_eq!(read(&root, &format!("{dir}/argv")), "job.sh 'two words'");
    let wait = root
        .open(&format!("{dir}/wait"), LOpenFlags::RDONLY)
        .unwrap();
    write(&root, &format!("{dir}/ctl"), "exec");
    let exit = String::from_utf8(wait.read_chunk(0, 64).unwrap()).unwrap();
    assert_eq!(exit, "exit 3\n");
    let out = read(&root, &format!("{dir}/stdout"));
    let host_dir = node.xcpu.dir.as_ref().unwrap().join(id.to_string());
    assert_eq!(
        out,
        format!("out two words hi\n{}\n", host_dir.display()),
        "argv quoting, env and the working directory (fs/)"
    );
    assert_eq!(read(&root, &format!("{dir}/stderr")), "err\n");
    assert_eq!(read(&root, &format!("{dir}/state")), "exit 3\n");
    assert!(read(&root, "/xcpu/procs").contains("exit:3"));
    // Settings are fixed once started.
    assert_eq!(errno(root.write_file(&format!("{dir}/argv"), b"x")), EBUSY);
    assert_eq!(
        errno(root.write_file(&format!("{dir}/ctl"), b"exec")),
        EBUSY
    );
}

#[test]
fn stdin_reaches_the_job_and_its_end_is_the_last_writers_close() {
    let node = node_with(XcpuConfig::default());
    let root = node.root();
    let (_hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    write(
        &root,
        &format!("{dir}/argv"),
        "/bin/sh -c 'tr a-z A-Z; echo done'",
    );
    let mut stdin = root
        .open(&format!("{dir}/stdin"), LOpenFlags::WRONLY)
        .unwrap();
    stdin.write_all(b"written before exec\n").unwrap();
    write(&root, &format!("{dir}/ctl"), "exec");
    stdin.write_all(b"and after\n").unwrap();
    drop(stdin);
    let exit = read(&root, &format!("{dir}/wait"));
    assert_eq!(exit, "exit 0\n");
    assert_eq!(
        read(&root, &format!("{dir}/stdout")),
        "WRITTEN BEFORE EXEC\nAND AFTER\ndone\n"
    );
    // The job is gone: stdin is a broken pipe.
    let late = root
        .open(&format!("{dir}/stdin"), LOpenFlags::WRONLY)
        .unwrap();
    assert_eq!(errno(late.write_at(b"x", 0)), EPIPE);
}

#[test]
fn kill_signals_the_whole_process_group() {
    let node = node_with(XcpuConfig::default());
    let root = node.root();
    // A child that ignores nothing and a grandchild: both must go.
    let (_hold, id, dir) = started(&root, "/bin/sh -c 'sleep 1000 & echo $!; wait'");
    let out = root
        .open(&format!("{dir}/stdout"), LOpenFlags::RDONLY)
        .unwrap();
    let grandchild: u32 = String::from_utf8(out.read_chunk(0, 64).unwrap())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = running_pid(&root, id);
    assert_eq!(
        errno(root.write_file(&format!("{dir}/ctl"), b"kill BOGUS")),
        EINVAL
    );
    assert!(read(&root, &format!("{dir}/state")).contains("error kill: unknown signal"));
    write(&root, &format!("{dir}/ctl"), "kill KILL");
    assert_eq!(read(&root, &format!("{dir}/wait")), "signal 9\n");
    eventually("the job and its grandchild gone", || {
        !pid_alive(pid) && !pid_alive(grandchild)
    });
    assert_eq!(
        errno(root.write_file(&format!("{dir}/ctl"), b"kill")),
        nf_ninep::errno::ESRCH,
        "nothing left to signal"
    );
}

#[test]
fn a_session_nobody_holds_ends_after_the_linger_with_its_job_and_files() {
    let node = node_with(XcpuConfig {
        linger: Duration::from_millis(200),
        ..XcpuConfig::default()
    });
    let client = node.client();
    let root = client.attach("root", "").unwrap();
    let (hold, id, _) = started(&root, "/bin/sleep 1000");
    let pid = running_pid(&root, id);
    let host_dir = node.xcpu.dir.as_ref().unwrap().join(id.to_string());
    assert!(host_dir.is_dir());
    // The client goes away (its connection closes with every fid).
    drop(hold);
    drop(root);
    drop(client);
    eventually("the session's job killed", || !pid_alive(pid));
    eventually("the upload directory removed", || !host_dir.exists());
    let root = node.root();
    eventually("the session gone from /xcpu", || {
        !names(&root, "/xcpu").contains(&id.to_string())
    });
    assert!(!read(&root, "/xcpu/procs").contains("sleep"));
}

#[test]
fn status_counts_the_sessions_present() {
    let node = node_with(XcpuConfig {
        linger: Duration::from_millis(200),
        ..XcpuConfig::default()
    });
    let root = node.root();
    let sessions = || {
        read(&root, "/status")
            .lines()
            .find_map(|l| l.strip_prefix("sessions ").map(str::to_string))
            .expect("a sessions line")
    };
    assert_eq!(sessions(), "0");
    let (a, _) = clone(&root);
    let (b, _) = clone(&root);
    assert_eq!(sessions(), "2");
    drop((a, b));
    eventually("both sessions ended after the linger", || sessions() == "0");
}

#[test]
fn held_again_within_the_linger_it_lives_and_close_ends_it_after_the_job() {
    let node = node_with(XcpuConfig {
        linger: Duration::from_secs(600),
        ..XcpuConfig::default()
    });
    let root = node.root();
    let (hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    drop(hold);
    // Separate commands can script it, as `nf cat` / `nf write` would.
    write(
        &root,
        &format!("{dir}/argv"),
        "/bin/sh -c 'read x; echo $x'",
    );
    write(&root, &format!("{dir}/ctl"), "exec\nclose\n");
    root.write_file(&format!("{dir}/stdin"), b"bye\n").unwrap();
    let host_dir = node.xcpu.dir.as_ref().unwrap().join(id.to_string());
    eventually("close ended the session once the job exited", || {
        !host_dir.exists() && !names(&root, "/xcpu").contains(&id.to_string())
    });
}

#[test]
fn wipe_kills_at_once_and_removes_the_uploads() {
    let node = node_with(XcpuConfig::default());
    let root = node.root();
    let (_hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    root.write_file(&format!("{dir}/fs/data"), b"payload")
        .unwrap();
    write(&root, &format!("{dir}/argv"), "/bin/sleep 1000");
    write(&root, &format!("{dir}/ctl"), "exec");
    let pid = running_pid(&root, id);
    let wait = root
        .open(&format!("{dir}/wait"), LOpenFlags::RDONLY)
        .unwrap();
    write(&root, &format!("{dir}/ctl"), "wipe");
    eventually("the job killed", || !pid_alive(pid));
    assert!(!node
        .xcpu
        .dir
        .as_ref()
        .unwrap()
        .join(id.to_string())
        .exists());
    // A reader blocked on wait is told the session is gone, not left hanging.
    assert_eq!(errno(wait.read_chunk(0, 64)), ENOENT);
    assert_eq!(errno(root.read_file(&format!("{dir}/state"))), ENOENT);
}

#[test]
fn bad_commands_say_why_and_change_nothing() {
    let node = node_with(XcpuConfig::default());
    let root = node.root();
    let (_hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    let ctl = format!("{dir}/ctl");
    assert_eq!(errno(root.write_file(&ctl, b"frobnicate")), EINVAL);
    assert!(read(&root, &format!("{dir}/state")).contains("unknown command \"frobnicate\""));
    assert_eq!(
        errno(root.write_file(&ctl, b"exec")),
        EINVAL,
        "nothing to run yet"
    );
    assert_eq!(
        errno(root.write_file(&ctl, b"clone 2 no-such-scheme")),
        EINVAL
    );
    assert_eq!(errno(root.write_file(&ctl, b"clone two tls:a:1")), EINVAL);
    assert_eq!(
        errno(root.write_file(&ctl, b"clone 65 tls:a:1")),
        EINVAL,
        "one thread per child: bounded"
    );
    write(&root, &format!("{dir}/argv"), "unclosed 'quote");
    assert_eq!(errno(root.write_file(&ctl, b"exec")), EINVAL);
    write(&root, &format!("{dir}/argv"), "/nonexistent/prog");
    assert_eq!(errno(root.write_file(&ctl, b"exec")), ENOENT);
    assert!(read(&root, &format!("{dir}/state")).starts_with("new\nerror exec /nonexistent/prog"));
    write(&root, &format!("{dir}/argv"), "../../../bin/true");
    assert_eq!(
        errno(root.write_file(&ctl, b"exec")),
        EINVAL,
        "fs/ is not left"
    );
    assert_eq!(
        errno(root.write_file(&format!("{dir}/state"), b"x")),
        EACCES
    );
    assert_eq!(
        errno(root.mkdir(&format!("{dir}/fs/sub"), 0o755)),
        nf_ninep::errno::EOPNOTSUPP
    );
    // Still usable after all that.
    write(&root, &format!("{dir}/argv"), "/bin/true");
    write(&root, &ctl, "exec");
    assert_eq!(read(&root, &format!("{dir}/wait")), "exit 0\n");
}

#[test]
fn limits_refuse_with_clear_errors() {
    let node = node_with(XcpuConfig {
        sessions_per_user: 2,
        sessions_total: 2,
        upload_limit: 1000,
        ..XcpuConfig::default()
    });
    let root = node.root();
    let (_a, id) = clone(&root);
    let (_b, _) = clone(&root);
    let err = root.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap_err();
    assert_eq!(
        err.errno(),
        Some(EDQUOT),
        "a third session for the same user"
    );
    let big = root
        .create(&format!("/xcpu/{id}/fs/big"), LOpenFlags::WRONLY, 0o644)
        .unwrap();
    big.write_all_at(&[1u8; 600], 0).unwrap();
    assert_eq!(errno(big.write_at(&[2u8; 600], 600)), EFBIG);
    let host = node.xcpu.dir.as_ref().unwrap().join(format!("{id}/big"));
    assert_eq!(
        std::fs::metadata(host).unwrap().len(),
        600,
        "nothing of the refused write"
    );
    // The job's resource limits: a session may set its own.
    write(&root, &format!("/xcpu/{id}/argv"), "/bin/sh -c 'ulimit -n'");
    write(&root, &format!("/xcpu/{id}/ctl"), "limits nofile=33");
    write(&root, &format!("/xcpu/{id}/ctl"), "exec");
    assert_eq!(read(&root, &format!("/xcpu/{id}/wait")), "exit 0\n");
    assert_eq!(read(&root, &format!("/xcpu/{id}/stdout")), "33\n");
}

#[test]
fn output_nobody_reads_is_kept_in_part_and_a_slow_reader_loses_nothing() {
    let node = node_with(XcpuConfig {
        output_history: 4096,
        ..XcpuConfig::default()
    });
    let root = node.root();
    let (_hold, id) = clone(&root);
    let dir = format!("/xcpu/{id}");
    // 1 MiB of numbered lines, read by one reader opened before exec.
    write(&root, &format!("{dir}/argv"), "/usr/bin/seq 1 150000");
    let mut out = root
        .open(&format!("{dir}/stdout"), LOpenFlags::RDONLY)
        .unwrap();
    write(&root, &format!("{dir}/ctl"), "exec");
    let mut got = Vec::new();
    loop {
        // Small reads: the job must wait for this reader, not drop what it has not read.
        let chunk = out.read_chunk(out.position(), 1000).unwrap();
        if chunk.is_empty() {
            break;
        }
        out.seek_to(out.position() + chunk.len() as u64);
        got.extend(chunk);
    }
    let expected: String = (1..=150000).map(|i| format!("{i}\n")).collect();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected.as_bytes(), "every byte, in order");
    assert_eq!(read(&root, &format!("{dir}/wait")), "exit 0\n");
    // A reader that comes later gets the last 4 KiB.
    let late = read(&root, &format!("{dir}/stdout"));
    assert_eq!(late.len(), 4096);
    assert!(expected.ends_with(&late));
}

#[test]
fn shutdown_kills_every_job() {
    let mut node = node_with(XcpuConfig::default());
    let root = node.root();
    let (_hold, id, _) = started(&root, "/bin/sleep 1000");
    let pid = running_pid(&root, id);
    let base = node.xcpu.dir.clone().unwrap();
    drop(root);
    node.daemon.take().unwrap().shutdown(Duration::from_secs(5));
    eventually("the job killed at shutdown", || !pid_alive(pid));
    assert!(!base.join(id.to_string()).exists());
}

/// Root-run: the test account's jobs run as that account; it cannot touch root's
/// sessions, nor run anything as root.
#[test]
fn a_user_runs_as_themselves_and_cannot_reach_other_sessions() {
    let user = test_account().expect("the test account");
    let node = node_with(XcpuConfig::default());
    for p in [node.dir.path(), node.socket.parent().unwrap()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&node.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let root = node.root();
    let (_root_hold, root_id) = clone(&root);
    root.write_file(&format!("/xcpu/{root_id}/fs/secret"), b"root's")
        .unwrap();

    let client = as_user(&user, || Client::connect_unix(&node.socket)).unwrap();
    let me = client.attach(&user.name, "").unwrap();
    let rd = format!("/xcpu/{root_id}");
    assert_eq!(errno(me.read_file(&format!("{rd}/ctl"))), EACCES);
    assert_eq!(errno(me.write_file(&format!("{rd}/ctl"), b"wipe")), EACCES);
    assert_eq!(errno(me.read_file(&format!("{rd}/fs/secret"))), EACCES);
    assert_eq!(errno(me.readdir(&format!("{rd}/fs"))), EACCES);

    let (_hold, id) = clone(&me);
    let dir = format!("/xcpu/{id}");
    assert!(read(&root, "/xcpu/procs").contains(&format!("{id} {} new", user.name)));
    write(
        &me,
        &format!("{dir}/argv"),
        "/bin/sh -c 'id -u; id -g; cat /etc/shadow'",
    );
    write(&me, &format!("{dir}/ctl"), "exec");
    assert_eq!(read(&me, &format!("{dir}/wait")), "exit 1\n");
    assert_eq!(
        read(&me, &format!("{dir}/stdout")),
        format!("{}\n{}\n", user.uid, user.gid)
    );
    assert!(read(&me, &format!("{dir}/stderr")).contains("Permission denied"));
    let owner = std::fs::metadata(node.xcpu.dir.as_ref().unwrap().join(id.to_string())).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&owner), user.uid);

    // A working directory the user may not enter is refused at exec, as the user.
    let (_h2, id2) = clone(&me);
    write(&me, &format!("/xcpu/{id2}/ctl"), "dir /root");
    write(&me, &format!("/xcpu/{id2}/argv"), "/bin/cat .bashrc");
    assert_eq!(
        errno(me.write_file(&format!("/xcpu/{id2}/ctl"), b"exec")),
        EACCES
    );
}
