//! Local peer credentials: over the unix socket and the shared-memory channel a process
//! may attach only as its own user (the kernel's `SO_PEERCRED`), and root as anyone
//! with an account on the host.
//! Real `nf` processes of two users against a real `nf serve`.

mod serve_support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serve_support::{run_bounded, text, Served};

/// The unprivileged user the test runs clients as (Debian's `nobody`).
const NOBODY: u32 = 65534;

/// True if other users may execute `file`: it and every directory above it allow it.
fn runnable_by_others(file: &Path) -> bool {
    let mode = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.permissions().mode());
    mode(file) & 0o005 == 0o005 && file.ancestors().skip(1).all(|d| mode(d) & 0o001 != 0)
}

/// The `nf` binary where `nobody` can run it: in place, or copied into `dir`.
fn nf_for_others(dir: &Path) -> PathBuf {
    let nf = PathBuf::from(env!("CARGO_BIN_EXE_nf"));
    if runnable_by_others(&nf) {
        return nf;
    }
    let copy = dir.join("nf");
    std::fs::copy(&nf, &copy).expect("copy nf where nobody can run it");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// Lets every user reach the server's sockets (the test's directory is private).
fn open_up(s: &Served) {
    let chmod = |p: &Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(s.dir.path(), 0o755);
    chmod(&s.socket, 0o777);
    chmod(&shm_socket(s), 0o777);
}

fn shm_socket(s: &Served) -> PathBuf {
    let mut p = s.socket.clone().into_os_string();
    p.push(".shm");
    PathBuf::from(p)
}

/// `nf ARGS…` as `uid` (root when `None`).
fn nf_as(nf: &Path, uid: Option<u32>, args: &[&str]) -> Output {
    let mut cmd = Command::new(nf);
    cmd.args(args).current_dir("/").env_remove("NF_ADDR");
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    run_bounded(&mut cmd)
}

#[test]
fn a_local_process_attaches_only_as_its_own_user_and_root_as_anyone() {
    let s = Served::start(&[]);
    open_up(&s);
    let nf = nf_for_others(s.dir.path());
    let unix = s.at("/status");
    let shm = format!("shm:{}:/status", shm_socket(&s).display());

    for target in [&unix, &shm] {
        // nobody as itself (the default user is the account of the process's uid).
        let out = nf_as(&nf, Some(NOBODY), &["cat", target]);
        assert!(
            out.status.success() && text(&out.stdout).contains("cores "),
            "nobody as itself over {target}: {}",
            text(&out.stderr)
        );
        // nobody claiming to be root, or someone else.
        for claim in ["root", "daemon"] {
            let out = nf_as(&nf, Some(NOBODY), &["cat", "--user", claim, target]);
            let err = text(&out.stderr);
            assert!(
                !out.status.success(),
                "nobody attached as {claim} over {target}"
            );
            assert!(
                err.contains("refused") && err.contains("own user") && err.contains(claim),
                "{err}"
            );
        }
        // root as anyone with an account here (the server must know the user's
        // groups to act as them), and not as a name without one.
        for claim in ["daemon", ""] {
            let out = nf_as(&nf, None, &["cat", "--user", claim, target]);
            assert!(
                out.status.success(),
                "root as {claim:?} over {target}: {}",
                text(&out.stderr)
            );
        }
        let out = nf_as(&nf, None, &["cat", "--user", "no-such-account", target]);
        assert!(
            !out.status.success() && text(&out.stderr).contains("refused"),
            "root as an account that does not exist over {target}"
        );
    }
}
