//! `/mem` of `nf serve` against real jobs: `nf run -n 2 nf-mem-check` allocates rma
//! segments and publishes them in a registry that `nf serve -f --mem-registry DIR`
//! reads; the test reads and writes them through the Rust 9P client and compares with
//! what the ranks' own RMA gets return.

mod serve_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nf_ninep::errno::{EFBIG, ENOENT, ESRCH};
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, Root};
use serve_support::{run_bounded, signal, text, wait_bounded, Served};

/// `nf-mem-check`'s segment length (`LEN` there).
const LEN: usize = 3 * 4096 + 100;

/// Waits for `what` (a deadline against hangs only).
fn eventually(what: &str, cond: impl FnMut() -> bool) {
    nf_testkit::eventually(what, Duration::from_secs(20), cond);
}

/// A job of `nf-mem-check` ranks, with its server and shared directories.
struct MemJob {
    served: Served,
    registry: tempfile::TempDir,
    out: tempfile::TempDir,
    job: Option<Child>,
}

impl MemJob {
    /// Starts `nf serve` on a fresh registry, then `nf run -n 2 nf-mem-check OUT MODE`,
    /// and waits until both ranks are ready.
    fn start(mode: &str) -> MemJob {
        let registry = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let served = Served::start(&["--mem-registry", registry.path().to_str().unwrap()]);
        let job = Command::new(env!("CARGO_BIN_EXE_nf"))
            .args(["run", "-n", "2", "--timeout", "60", "--"])
            .arg(env!("CARGO_BIN_EXE_nf-mem-check"))
            .arg(out.path())
            .arg(mode)
            .env("NF_MEM_REGISTRY", registry.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nf run");
        let mut job = MemJob {
            served,
            registry,
            out,
            job: Some(job),
        };
        eventually("both ranks to be ready", || {
            if let Ok(Some(status)) = job.child().try_wait() {
                let out = job.job.take().unwrap().wait_with_output().unwrap();
                panic!("the job ended early ({status}): {}", text(&out.stderr));
            }
            (0..2).all(|r| job.out(&format!("ready.{r}")).exists())
        });
        job
    }

    fn child(&mut self) -> &mut Child {
        self.job.as_mut().expect("the job was started")
    }

    fn out(&self, name: &str) -> PathBuf {
        self.out.path().join(name)
    }

    /// A client attached as this process's own user over the unix socket.
    fn root(&self) -> Root {
        Client::connect_unix(&self.served.socket)
            .unwrap()
            .attach("", "")
            .unwrap()
    }

    /// The job's id: the one directory in `/mem`.
    fn job_id(&self, root: &Root) -> String {
        let jobs = names(root, "/mem");
        assert_eq!(jobs.len(), 1, "one job in a fresh registry: {jobs:?}");
        jobs[0].clone()
    }

    /// Waits for `nf run` to end; its exit status and stderr.
    fn wait(&mut self) -> (std::process::ExitStatus, String) {
        let mut job = self.job.take().expect("the job was started");
        let status = wait_bounded(&mut job);
        let mut err = String::new();
        if let Some(mut e) = job.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        (status, err)
    }
}

impl Drop for MemJob {
    fn drop(&mut self) {
        if let Some(mut job) = self.job.take() {
            let _ = job.kill();
            let _ = job.wait();
        }
    }
}

/// The names in directory `path`, sorted.
fn names(root: &Root, path: &str) -> Vec<String> {
    let mut v: Vec<String> = root
        .readdir(path)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    v.sort();
    v
}

/// The one segment of `/mem/JOB/RANK`, once listed: a rank's registry file is
/// rewritten by its writer thread within a batching window after the allocation, so
/// a rank that says it is ready may not list its segment yet.
fn segment(root: &Root, job: &str, rank: usize) -> String {
    let dir = format!("/mem/{job}/{rank}");
    let mut segs = Vec::new();
    eventually("the rank's segment in /mem", || {
        segs = names(root, &dir);
        !segs.is_empty()
    });
    assert_eq!(segs.len(), 1, "one segment per rank: {segs:?}");
    format!("/mem/{job}/{rank}/{}", segs[0])
}

#[test]
fn mem_reads_equal_rma_gets_and_writes_reach_rma_gets() {
    let mut j = MemJob::start("check");
    let root = j.root();
    let job = j.job_id(&root);
    assert_eq!(names(&root, &format!("/mem/{job}")), ["0", "1"]);

    let mut expect = Vec::new();
    for rank in 0..2 {
        let path = segment(&root, &job, rank);
        assert_eq!(root.stat(&path).unwrap().size(), LEN as u64, "{path}");
        // The whole file equals what the neighbour's Rma::get returned.
        let got = std::fs::read(j.out(&format!("get.{rank}"))).unwrap();
        assert_eq!(got.len(), LEN);
        assert!(
            root.read_file(&path).unwrap() == got,
            "{path} differs from Rma::get"
        );

        let f = root.open(&path, LOpenFlags::RDWR).unwrap();
        let mut buf = vec![0u8; 100];
        // At an offset; short at the end; nothing past it.
        assert_eq!(f.read_at(&mut buf, 5000).unwrap(), 100);
        assert_eq!(buf, got[5000..5100]);
        assert_eq!(f.read_at(&mut buf, LEN as u64 - 10).unwrap(), 10);
        assert_eq!(buf[..10], got[LEN - 10..]);
        assert_eq!(f.read_at(&mut buf, LEN as u64).unwrap(), 0);
        assert_eq!(f.read_at(&mut buf, 1 << 40).unwrap(), 0);

        // Writes: one inside (across a page boundary), one crossing the end (short),
        // one past the end (EFBIG).
        let mut now = got.clone();
        let patch = format!("written over 9P into rank {rank}");
        let at = 4096 - 7;
        assert_eq!(
            f.write_at(patch.as_bytes(), at as u64).unwrap(),
            patch.len()
        );
        now[at..at + patch.len()].copy_from_slice(patch.as_bytes());
        assert_eq!(f.write_at(b"ENDENDEN", LEN as u64 - 4).unwrap(), 4);
        now[LEN - 4..].copy_from_slice(b"ENDE");
        let err = f.write_at(b"x", LEN as u64).unwrap_err();
        assert_eq!(err.errno(), Some(EFBIG), "{err}");
        assert!(root.read_file(&path).unwrap() == now, "{path} after writes");
        std::fs::write(j.out(&format!("expect.{rank}")), &now).unwrap();
        expect.push(now);
    }

    // Another user sees none of root's job (the socket is opened up for it).
    let dir = j.served.socket.parent().unwrap();
    chmod(dir, 0o755);
    chmod(&j.served.socket, 0o777);
    let seg0 = segment(&root, &job, 0);
    let as_nobody = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nf"));
        std::os::unix::process::CommandExt::uid(&mut cmd, 65534);
        std::os::unix::process::CommandExt::gid(&mut cmd, 65534);
        run_bounded(cmd.args(args))
    };
    let ls = as_nobody(&["ls", &j.served.at("/mem")]);
    assert!(ls.status.success(), "{}", text(&ls.stderr));
    assert_eq!(text(&ls.stdout), "", "nobody sees no job");
    let cat = as_nobody(&["cat", &j.served.at(&seg0)]);
    assert!(
        !cat.status.success() && text(&cat.stderr).contains("No such file"),
        "{}",
        text(&cat.stderr)
    );

    // The ranks check with Rma::get that they see what was written over 9P.
    std::fs::write(j.out("go"), b"").unwrap();
    let (status, err) = j.wait();
    assert!(status.success(), "the job's own gets disagree: {err}");
    // Entries leave with their ranks.
    assert!(names(&root, "/mem").is_empty());
    assert_eq!(std::fs::read_dir(j.registry.path()).unwrap().count(), 0);
}

#[test]
fn a_killed_rank_disappears_and_its_open_fids_fail() {
    let mut j = MemJob::start("hold");
    let root = j.root();
    let job = j.job_id(&root);
    let path = segment(&root, &job, 1);
    let f = root.open(&path, LOpenFlags::RDONLY).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(f.read_at(&mut buf, 0).unwrap(), 64);

    let (entry, _) = nf_memreg::read_entry(&j.registry.path().join(format!("{job}.1"))).unwrap();
    signal(entry.pid, "KILL");
    // The launcher then stops the other rank; every trace goes, though the killed
    // ranks' registry files stay behind.
    eventually("rank 1 to vanish", || {
        root.stat(&format!("/mem/{job}/1"))
            .is_err_and(|e| e.errno() == Some(ENOENT))
    });
    let err = f.read_at(&mut buf, 0).unwrap_err();
    assert_eq!(err.errno(), Some(ESRCH), "{err}");
    let (status, _) = j.wait();
    assert!(!status.success(), "a killed rank fails the job");
    assert!(names(&root, "/mem").is_empty());
    assert!(j.registry.path().join(format!("{job}.1")).exists());
    let err = root.stat(&format!("/mem/{job}")).unwrap_err();
    assert_eq!(err.errno(), Some(ENOENT), "{err}");
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
