//! A real `nf serve` run as root, started the way an administrator would from a
//! terminal — in that terminal's session, with a descriptor of the shell's open
//! (`9<secret`) — and a job of an unprivileged account (made by the tests) that tries
//! to use both:
//!
//! - pushing input into the terminal with `TIOCSTI` (the shell would run it as root);
//! - reading root's file through the inherited descriptor.
//!
//! The terminal is a pseudo-terminal the test owns: the server is made its session
//! leader's controlling terminal (`setsid`, `TIOCSCTTY`), as a login shell's would be.

mod serve_support;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;

use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, Root};
use nf_testkit::users::{as_user, test_account, Account};
use serve_support::{nf, signal, wait_bounded, DEADLINE};

/// A pseudo-terminal: the master the test reads, and the slave the server gets.
struct Pty {
    master: File,
    slave: File,
}

fn openpty() -> Pty {
    // SAFETY: plain libc calls on descriptors this function owns; ptsname_r writes
    // into a buffer of the length it is given.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        let master = OwnedFd::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
            0
        );
        let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_str().unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(name)
            .unwrap();
        Pty {
            master: File::from(master),
            slave,
        }
    }
}

/// `nf serve -f` as root in a session whose controlling terminal is `pty`'s slave
/// (also its stdin), holding `secret` open as descriptor 9 without close-on-exec.
struct Server {
    child: Child,
    socket: std::path::PathBuf,
}

impl Server {
    fn start(dir: &Path, pty: &Pty, secret: &File) -> Server {
        let socket = dir.join("s.sock");
        let tty = pty.slave.as_raw_fd();
        let nine = secret.as_raw_fd();
        let mut cmd = nf();
        cmd.args(["serve", "-f", "--unix"])
            .arg(&socket)
            .arg("--state-dir")
            .arg(dir.join("state"))
            .env("NF_LOG", "warn")
            .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: between fork and exec only async-signal-safe calls on integers:
        // a new session, the terminal made its controlling one, descriptor 9 as a
        // shell's `9<secret` leaves it (dup2 clears close-on-exec).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0
                    || libc::ioctl(tty, libc::TIOCSCTTY, 0) != 0
                    || libc::dup2(nine, 9) != 9
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("start nf serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("nf serve: ready") {
                    let _ = tx.send(());
                }
            }
        });
        if rx.recv_timeout(DEADLINE).is_err() {
            let _ = child.kill();
            panic!("nf serve did not become ready");
        }
        // Let the test user reach the socket (the attach check decides who may attach).
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        Server { child, socket }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        signal(self.child.id(), "TERM");
        wait_bounded(&mut self.child);
    }
}

/// Runs `argv` as a session of `user` on the server; its exit line and stdout.
fn run_job(socket: &Path, user: &Account, argv: &str) -> (String, String) {
    let client = as_user(user, || Client::connect_unix(socket)).expect("connect");
    let me: Root = client.attach(&user.name, "").expect("attach as oneself");
    let mut clone = me.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap();
    let id = String::from_utf8(clone.read_to_end().unwrap()).unwrap();
    let dir = format!("/xcpu/{}", id.trim());
    me.write_file(&format!("{dir}/argv"), argv.as_bytes())
        .unwrap();
    me.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    let read = |f: &str| String::from_utf8(me.read_file(&format!("{dir}/{f}")).unwrap()).unwrap();
    let exit = read("wait");
    (exit, read("stdout"))
}

/// The job: its session and pid, then what opening `/dev/tty` and `TIOCSTI` give.
const TIOCSTI_JOB: &str = r#"/usr/bin/python3 -c '
import errno, fcntl, os, termios
words = ["own-session" if os.getsid(0) == os.getpid() else "in-the-servers-session"]
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"X")
        words.append("TIOCSTI-worked")
    except OSError as e:
        words.append("TIOCSTI-" + errno.errorcode[e.errno])
except OSError as e:
    words.append("tty-" + errno.errorcode[e.errno])
print(" ".join(words))
'"#;

#[test]
fn a_job_cannot_push_input_into_the_terminal_the_server_was_started_from() {
    let user = test_account().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pty = openpty();
    let secret = File::open("/dev/null").unwrap();
    let server = Server::start(dir.path(), &pty, &secret);
    let (exit, out) = run_job(&server.socket, &user, TIOCSTI_JOB);
    assert_eq!(exit, "exit 0\n", "{out}");
    assert_eq!(
        out, "own-session tty-ENXIO\n",
        "the job leads a session of its own, with no controlling terminal"
    );
    // Nothing reached the terminal (an injected byte would be echoed to the master).
    // SAFETY: fcntl on a descriptor the test owns.
    unsafe {
        let fd = pty.master.as_raw_fd();
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        );
    }
    let mut buf = [0u8; 64];
    let read = std::io::Read::read(&mut &pty.master, &mut buf);
    assert!(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the terminal got {read:?}"
    );
    drop(server);
}

#[test]
fn a_job_does_not_inherit_descriptors_the_server_was_started_with() {
    let user = test_account().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pty = openpty();
    let path = dir.path().join("secret");
    std::fs::write(&path, "root's secret\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let secret = File::open(&path).unwrap();
    let server = Server::start(dir.path(), &pty, &secret);
    let (exit, out) = run_job(
        &server.socket,
        &user,
        "/bin/sh -c 'echo $(ls /proc/self/fd); cat <&9 2>/dev/null || echo no-fd-9'",
    );
    assert_eq!(exit, "exit 0\n", "{out}");
    assert_eq!(
        out, "0 1 2 3\nno-fd-9\n",
        "the job has its three pipes (and the listing's own descriptor), nothing else"
    );
    drop(server);
}

/// `--state-dir` reaches the server: one others may write (where a user could swap
/// what the server makes for a link) stops it, naming the flag.
#[test]
fn nf_serve_refuses_a_state_dir_others_may_write() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = serve_support::run_bounded(
        nf().args(["serve", "-f", "--unix"])
            .arg(dir.path().join("s.sock"))
            .arg("--state-dir")
            .arg(&state)
            .env("NF_LOG", "warn"),
    );
    assert!(!out.status.success());
    let err = serve_support::text(&out.stderr);
    assert!(
        err.contains("others may write") && err.contains("--state-dir"),
        "{err}"
    );
}
