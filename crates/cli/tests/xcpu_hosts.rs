//! `nf exec` and `nf run --hosts` through the nodes' `/xcpu`, on 8 namespace hosts
//! each running the real `nf serve` over TLS with node certificates made by `nf cert`.
//! The client presents the test account's certificate, so every job must run as that
//! account. Needs root and iproute2 (as every namespace test).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nf_testkit::users::test_account;
use nf_testkit::Netns;

const NF: &str = env!("CARGO_BIN_EXE_nf");
/// Every command here ends in seconds; this only keeps a broken one from hanging.
const BOUND: Duration = Duration::from_secs(60);
const PORT: u16 = 564;

struct Cluster {
    net: Netns,
    dir: tempfile::TempDir,
    servers: Vec<Child>,
    user: String,
}

fn nf_in(net: &Netns, host: usize) -> Command {
    let mut c = net.exec(host, NF);
    c.stdin(Stdio::null());
    c
}

fn run(cmd: &mut Command) -> Output {
    nf_testkit::output_within(cmd, BOUND)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Cluster {
    /// `k` hosts, each serving over TLS on its address, with `extra` serve flags.
    fn start(k: usize, extra: &[&str]) -> Cluster {
        let user = test_account().expect("the test account").name;
        let net = Netns::create(k).expect("namespace hosts");
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        let cert = |args: &[&str]| {
            let out = run(Command::new(NF).arg("cert").args(args).args(["--dir", &d]));
            assert!(
                out.status.success(),
                "nf cert {args:?}: {}",
                text(&out.stderr)
            );
        };
        cert(&["ca"]);
        cert(&["user", &user]);
        let mut servers = Vec::new();
        for i in 0..k {
            let addr = net.addr(i).to_string();
            cert(&["node", &addr]);
            let child = nf_in(&net, i)
                .args(["serve", "-f", "--tcp", &format!("{addr}:{PORT}")])
                .args(["--tls-cert", &format!("{d}/{addr}.pem")])
                .args(["--tls-key", &format!("{d}/{addr}.key")])
                .args(["--tls-client-ca", &format!("{d}/ca.pem")])
                .args(["--unix", &format!("{d}/run{i}/nf.sock")])
                .args(["--xcpu-dir", &format!("{d}/xcpu{i}")])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start nf serve");
            servers.push(child);
        }
        let c = Cluster {
            net,
            dir,
            servers,
            user,
        };
        for i in 0..k {
            c.wait_listening(i);
        }
        c
    }

    fn wait_listening(&self, i: usize) {
        let deadline = Instant::now() + BOUND;
        let addr = std::net::SocketAddr::new(self.net.addr(i), PORT);
        loop {
            let up = self
                .net
                .within(i, || std::net::TcpStream::connect(addr).is_ok())
                .unwrap();
            if up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nf serve on host {i} never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn node(&self, i: usize) -> String {
        format!("tls:{}:{PORT}", self.net.addr(i))
    }

    fn nodes(&self) -> String {
        (0..self.net.len())
            .map(|i| self.node(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    /// `nf exec` (with the user's certificate) from host 0.
    fn exec(&self, args: &[&str]) -> Output {
        let u = &self.user;
        run(nf_in(&self.net, 0)
            .arg("exec")
            .args(["--cert", &self.file(&format!("{u}.pem"))])
            .args(["--key", &self.file(&format!("{u}.key"))])
            .args(["--ca", &self.file("ca.pem")])
            .args(args))
    }

    /// A script in the test's directory, readable by everyone.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.file(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

/// The network namespace inode of host `i`, as `readlink /proc/self/ns/net` shows it.
fn ns_of(net: &Netns, i: usize) -> String {
    let ino = std::fs::metadata(net.path(i)).unwrap().ino();
    format!("net:[{ino}]")
}

fn check_every_node_ran_it_as_the_user(c: &Cluster, out: &Output) {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    for i in 0..c.net.len() {
        let want = format!(
            "{}: rank {i} {} {}",
            c.net.addr(i),
            c.user,
            ns_of(&c.net, i)
        );
        assert!(
            stdout.lines().any(|l| l == want),
            "want {want:?} in\n{stdout}"
        );
    }
    assert_eq!(stdout.lines().count(), c.net.len(), "{stdout}");
}

#[test]
fn nf_exec_runs_on_eight_hosts_as_the_user_flat_and_through_the_tree() {
    let c = Cluster::start(8, &[]);
    let job = c.script(
        "whoami.sh",
        "echo \"rank $NF_EXEC_RANK $(id -un) $(readlink /proc/self/ns/net)\"\n",
    );
    let flat = c.exec(&["--fanout", "0", &c.nodes(), "--", &job]);
    check_every_node_ran_it_as_the_user(&c, &flat);
    let tree = c.exec(&["--fanout", "2", &c.nodes(), "--", &job]);
    check_every_node_ran_it_as_the_user(&c, &tree);

    // The first non-zero status, named with its node.
    let fail = c.script("fail.sh", "[ \"$NF_EXEC_RANK\" = 5 ] && exit 3\nexit 0\n");
    let out = c.exec(&["--fanout", "2", &c.nodes(), "--", &fail]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{} (rank 5): exit 3", c.net.addr(5))),
        "{stderr}"
    );
}

/// What a traced `nf exec` did at the client: connections made to the nodes' port,
/// and bytes written (to every descriptor: sockets, and its own small output).
struct Traced {
    connects: usize,
    written: u64,
    out: Output,
}

impl Cluster {
    /// `nf exec` from host 0 under `strace`, which counts its system calls.
    fn exec_traced(&self, log: &str, args: &[&str]) -> Traced {
        let u = &self.user;
        let out = run(self
            .net
            .exec(0, "strace")
            .args(["-f", "-qq", "-o", log])
            .args(["-e", "trace=connect,write,writev,sendto,sendmsg"])
            .args([NF, "exec"])
            .args(["--cert", &self.file(&format!("{u}.pem"))])
            .args(["--key", &self.file(&format!("{u}.key"))])
            .args(["--ca", &self.file("ca.pem")])
            .args(args)
            .stdin(Stdio::null()));
        let trace = std::fs::read_to_string(log).unwrap();
        let port = format!("htons({PORT})");
        let connects = trace
            .lines()
            .filter(|l| l.contains("connect(") && l.contains(&port))
            .count();
        let writes = ["write", "writev", "sendto", "sendmsg"];
        let written = trace
            .lines()
            .filter(|l| {
                writes.iter().any(|w| {
                    l.contains(&format!(" {w}(")) || l.contains(&format!("<... {w} resumed>"))
                })
            })
            .filter_map(|l| {
                l.rsplit_once("= ")?
                    .1
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        Traced {
            connects,
            written,
            out,
        }
    }
}

/// The tree's structural promise: however many nodes, the client connects to the first
/// one only and sends each file's bytes once; output and exits come back up the tree.
/// Flat (`--fanout 0`) is the control that shows the counting sees every connection
/// and every copy.
#[test]
fn through_the_tree_the_client_connects_once_and_sends_each_byte_once() {
    let c = Cluster::start(8, &[]);
    let data = c.file("data.bin");
    let size = 2u64 << 20;
    std::fs::write(&data, vec![0x5au8; size as usize]).unwrap();
    let job = c.script(
        "size.sh",
        "echo \"rank $NF_EXEC_RANK of $NF_EXEC_SIZE $(wc -c < data.bin)\"\nexit $((NF_EXEC_RANK % 3))\n",
    );
    let args = |fanout: &'static str| vec!["--fanout", fanout, "--file", data.as_str(), "--no-tag"];
    let nodes = c.nodes();
    let mut tree_args = args("2");
    tree_args.extend([nodes.as_str(), "--", job.as_str()]);
    let tree = c.exec_traced(&c.file("tree.trace"), &tree_args);
    let stdout = text(&tree.out.stdout);
    // Rank 1 is the first in rank order to exit non-zero (1 % 3 = 1).
    assert_eq!(
        tree.out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&tree.out.stderr)
    );
    for rank in 0..8 {
        let want = format!("rank {rank} of 8 {size}");
        assert!(
            stdout.lines().any(|l| l == want),
            "want {want:?} in\n{stdout}"
        );
    }
    assert_eq!(
        tree.connects, 1,
        "the client connects to the first node only"
    );
    assert!(
        tree.written < size + size / 2,
        "the client sent {} bytes for a {size}-byte file: more than once",
        tree.written
    );

    let mut flat_args = args("0");
    flat_args.extend([nodes.as_str(), "--", job.as_str()]);
    let flat = c.exec_traced(&c.file("flat.trace"), &flat_args);
    assert_eq!(
        flat.out.status.code(),
        Some(1),
        "{}",
        text(&flat.out.stderr)
    );
    assert!(flat.connects >= 8, "flat: {} connections", flat.connects);
    assert!(flat.written >= 8 * size, "flat: {} bytes", flat.written);
}

#[test]
fn an_upload_past_the_limit_is_refused_and_nothing_runs() {
    let c = Cluster::start(2, &["--xcpu-upload-limit", "100000"]);
    let big = c.file("big.bin");
    std::fs::write(&big, vec![0u8; 200_000]).unwrap();
    let marker = c.file("ran");
    let job = c.script("touch.sh", &format!("touch {marker}\n"));
    let out = c.exec(&["--fanout", "0", "--file", &big, &c.nodes(), "--", &job]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(!Path::new(&marker).exists(), "the job must not have run");
}

#[test]
fn a_node_that_is_down_is_named_and_keep_going_runs_on_the_rest() {
    let mut c = Cluster::start(4, &[]);
    let _ = c.servers[2].kill();
    let _ = c.servers[2].wait();
    let job = c.script("hi.sh", "echo hi\n");
    let out = c.exec(&["--fanout", "2", &c.nodes(), "--", &job]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{} - failed", c.node(2))),
        "{stderr}"
    );
    let out = c.exec(&["--fanout", "2", "--keep-going", &c.nodes(), "--", &job]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(": hi")).count(),
        3,
        "{stdout}"
    );
}

#[test]
fn nf_run_starts_ranks_through_the_hosts_xcpu_and_they_pass_the_collectives() {
    let c = Cluster::start(4, &[]);
    let check = PathBuf::from(NF).with_file_name("nf-core-check");
    assert!(
        check.exists(),
        "{} is missing: build the workspace's binaries (cargo test --workspace, or cargo build -p nf-checks)",
        check.display()
    );
    // The ranks run as the test account: give them a copy it may execute.
    let prog = c.file("nf-core-check");
    std::fs::copy(&check, &prog).unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hosts: Vec<String> = (0..4).map(|i| format!("{}:2", c.net.addr(i))).collect();
    let u = &c.user;
    let out = run(nf_in(&c.net, 0)
        .args(["run", "--hosts", &hosts.join(",")])
        .args(["--pmi-bind", &c.net.addr(0).to_string()])
        .args(["--cert", &c.file(&format!("{u}.pem"))])
        .args(["--key", &c.file(&format!("{u}.key"))])
        .args(["--ca", &c.file("ca.pem")])
        .args(["--timeout", "40", "--", &prog, "collectives"]));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    for r in 0..8 {
        let want = format!("rank {r}: collectives ok on 8 ranks");
        assert!(
            stdout.lines().any(|l| l.contains(&want)),
            "want {want:?} in\n{stdout}"
        );
    }
    // Without certificates the default path says what it needs.
    let out = run(nf_in(&c.net, 0)
        .args(["run", "--hosts", &hosts.join(",")])
        .args(["--pmi-bind", &c.net.addr(0).to_string(), "--", &prog]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("needs --cert"),
        "{}",
        text(&out.stderr)
    );
}

/// `nf run --hosts` starts its ranks in `/xcpu` sessions itself (`nf_launch::XcpuStart`),
/// not by re-running `nf exec` through a whitespace-split template: certificate paths
/// holding a space reach the hosts (the template refused them), the ranks' output
/// comes back tagged with rank and host, and a rank's failure stops the rest through
/// their sessions' `ctl` and names the rank and its host.
#[test]
fn nf_run_through_xcpu_takes_spaced_paths_forwards_output_and_stops_the_rest() {
    let c = Cluster::start(2, &[]);
    let u = &c.user;
    let spaced = c.dir.path().join("tls files");
    std::fs::create_dir(&spaced).unwrap();
    let names = [format!("{u}.pem"), format!("{u}.key"), "ca.pem".into()];
    for f in &names {
        std::fs::copy(c.file(f), spaced.join(f)).unwrap();
    }
    let at = |f: &str| spaced.join(f).to_str().unwrap().to_string();
    // Rank 1 fails at once; rank 0 would sleep 30 s unless the launcher's kill reaches it.
    let prog = c.script(
        "rank.sh",
        "echo \"hello from $NF_RANK of $NF_SIZE on $NF_HOST\"\n\
         [ \"$NF_RANK\" = 1 ] && exit 3\n\
         exec sleep 30\n",
    );
    let (h0, h1) = (c.net.addr(0).to_string(), c.net.addr(1).to_string());
    let started = Instant::now();
    let out = run(nf_in(&c.net, 0)
        .args(["run", "--tag-output", "--hosts", &format!("{h0}:1,{h1}:1")])
        .args(["--pmi-bind", &h0])
        .args(["--cert", &at(&names[0])])
        .args(["--key", &at(&names[1])])
        .args(["--ca", &at(&names[2])])
        .args(["--", &prog]));
    let took = started.elapsed();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for (r, h) in [(0, &h0), (1, &h1)] {
        let want = format!("[{r}@{h}] hello from {r} of 2 on {h}");
        assert!(
            stdout.contains(&want),
            "want {want:?} in\n{stdout}\n{stderr}"
        );
    }
    assert!(
        stderr.contains("rank 1") && stderr.contains(&h1),
        "the failure names rank 1 and its host:\n{stderr}"
    );
    // Generous (the sleep is 30 s): only a kill through the session ends rank 0 sooner.
    assert!(
        took < Duration::from_secs(25),
        "rank 0 was not stopped: {took:?}"
    );
}

/// Heterogeneous nodes (faked with `--xcpu-arch`, since this machine has one): each
/// gets the binary for its architecture, and a node with none is named.
#[test]
fn each_node_gets_the_binary_for_its_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut servers = Vec::new();
    for (i, arch) in ["linux/x86_64", "linux/riscv64"].iter().enumerate() {
        let child = Command::new(NF)
            .args(["serve", "-f", "--unix"])
            .arg(d.join(format!("n{i}.sock")))
            .arg("--xcpu-dir")
            .arg(d.join(format!("x{i}")))
            .args(["--xcpu-arch", arch])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        servers.push(child);
    }
    let socks: Vec<PathBuf> = (0..2).map(|i| d.join(format!("n{i}.sock"))).collect();
    let deadline = Instant::now() + BOUND;
    while !socks.iter().all(|s| s.exists()) {
        assert!(Instant::now() < deadline, "the servers never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let script = |name: &str, says: &str| {
        let p = d.join(name);
        std::fs::write(&p, format!("#!/bin/sh\necho {says}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.to_str().unwrap().to_string()
    };
    let x86 = script("prog.x86", "x86 build");
    let rv = script("prog.rv", "riscv build");
    let nodes = socks
        .iter()
        .map(|s| format!("unix:{}", s.display()))
        .collect::<Vec<_>>()
        .join(",");
    let out = run(Command::new(NF)
        .args(["exec", "--binary", &format!("linux/x86_64={x86}")])
        .args([
            "--binary",
            &format!("linux/riscv64={rv}"),
            &nodes,
            "--",
            "prog",
        ])
        .stdin(Stdio::null()));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("unix:{}: x86 build", socks[0].display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("unix:{}: riscv build", socks[1].display())),
        "{stdout}"
    );
    let out = run(Command::new(NF)
        .args([
            "exec",
            "--binary",
            &format!("linux/x86_64={x86}"),
            &nodes,
            "--",
            "prog",
        ])
        .stdin(Stdio::null()));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no --binary for its architecture linux/riscv64"),
        "{}",
        text(&out.stderr)
    );
    for mut s in servers {
        let _ = s.kill();
        let _ = s.wait();
    }
}

/// A local `nf serve` on a unix socket in `dir` (the caller kills it).
fn local_server(dir: &Path, extra: &[&str]) -> (Child, PathBuf) {
    let sock = dir.join("nf.sock");
    let child = Command::new(NF)
        .args(["serve", "-f", "--unix"])
        .arg(&sock)
        .arg("--xcpu-dir")
        .arg(dir.join("xcpu"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + BOUND;
    while !sock.exists() {
        assert!(Instant::now() < deadline, "nf serve never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, sock)
}

/// A session driven with nothing but `nf cat` and `nf write`, one command per step
/// (the session lingers between them).
#[test]
fn a_session_scripted_with_nf_cat_and_nf_write() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, sock) = local_server(dir.path(), &[]);
    let at = |p: &str| format!("unix:{}:{p}", sock.display());
    let nf = |args: &[&str]| {
        let out = run(Command::new(NF).args(args).stdin(Stdio::null()));
        assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let id = nf(&["cat", &at("/xcpu/clone")]).trim().to_string();
    let s = |f: &str| at(&format!("/xcpu/{id}/{f}"));
    assert_eq!(nf(&["cat", &s("state")]), "new\n");
    nf(&[
        "write",
        &s("argv"),
        "/bin/sh -c 'echo $GREETING from $NF_XCPU_SESSION; exit 5'",
    ]);
    nf(&["write", &s("env"), "GREETING=hello"]);
    nf(&["write", &s("ctl"), "exec"]);
    assert_eq!(nf(&["cat", &s("wait")]), "exit 5\n");
    assert_eq!(nf(&["cat", &s("stdout")]), format!("hello from {id}\n"));
    assert!(nf(&["cat", &at("/xcpu/procs")]).contains(&format!("{id} root exit:5")));
    let out = run(Command::new(NF)
        .args(["write", &s("ctl"), "bogus"])
        .stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(3), "a server error");
    assert!(nf(&["cat", &s("state")]).contains("error unknown command \"bogus\""));
    nf(&["write", &s("ctl"), "wipe"]);
    assert!(!nf(&["ls", &at("/xcpu")]).contains(&id));
    let _ = server.kill();
    let _ = server.wait();
}

/// Ctrl-C on `nf exec` becomes `kill INT` on the node: the job ends, nothing of it is
/// left, and nf exec exits 130 naming the node.
#[test]
fn ctrl_c_on_nf_exec_kills_the_remote_job() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, sock) = local_server(dir.path(), &[]);
    let node = format!("unix:{}", sock.display());
    let mut exec = Command::new(NF)
        .args([
            "exec",
            &node,
            "--",
            "/bin/sh",
            "-c",
            "echo started $$; exec sleep 1000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(exec.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    let pid: u32 = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .expect(&line);
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    let _ = Command::new("kill")
        .args(["-INT", &exec.id().to_string()])
        .status();
    let out = nf_testkit::finish_within(exec, BOUND, "nf exec after Ctrl-C");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("signal 2"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        nf_testkit::exited_within(pid, BOUND),
        "the remote job is gone"
    );
    let _ = server.kill();
    let _ = server.wait();
}

impl Cluster {
    /// `nf run --hosts` from host 0 with the user's certificate, the PMI server on
    /// host 0's address; `strace_log` traces its connections when given.
    fn nf_run(&self, strace_log: Option<&str>, hosts: &str, args: &[&str]) -> Command {
        let u = &self.user;
        let mut cmd = match strace_log {
            Some(log) => {
                let mut c = self.net.exec(0, "strace");
                c.args(["-f", "-qq", "-o", log, "-e", "trace=connect", NF]);
                c
            }
            None => nf_in(&self.net, 0),
        };
        cmd.args(["run", "--hosts", hosts])
            .args(["--pmi-bind", &self.net.addr(0).to_string()])
            .args(["--cert", &self.file(&format!("{u}.pem"))])
            .args(["--key", &self.file(&format!("{u}.key"))])
            .args(["--ca", &self.file("ca.pem")])
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// `h0:per,h1:per,…` for every host.
    fn host_list(&self, per: usize) -> String {
        (0..self.net.len())
            .map(|i| format!("{}:{per}", self.net.addr(i)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Connections to the nodes' port in an strace log of `connect` calls.
fn node_connects(log: &str) -> usize {
    let port = format!("htons({PORT})");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("connect(") && l.contains(&port))
        .count()
}

/// `nf run --hosts` down the tree (issue 29): a 12-rank job on 6 hosts runs a
/// collective that needs the PMI wire-up; every rank runs on its own host (its network
/// namespace) with the right rank, size, local rank and host; the launcher connects to
/// the first host only (≤ K + 1) and each host runs its ranks in one session. One
/// session per rank (`--fanout 0`, the way before) is the control that shows the
/// counting sees every connection and every session.
#[test]
fn nf_run_through_the_tree_connects_once_and_holds_one_session_per_host() {
    let c = Cluster::start(6, &[]);
    let check = PathBuf::from(NF).with_file_name("nf-core-check");
    assert!(
        check.exists(),
        "{} is missing: cargo build -p nf-checks",
        check.display()
    );
    let prog = c.file("nf-core-check");
    std::fs::copy(&check, &prog).unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hosts = c.host_list(2);
    let log = c.file("run.trace");
    let out = run(c
        .nf_run(Some(&log), &hosts, &["--fanout", "2", "--timeout", "50"])
        .args(["--", &prog, "collectives"]));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    for r in 0..12 {
        let want = format!("rank {r}: collectives ok on 12 ranks");
        assert!(
            stdout.lines().any(|l| l.contains(&want)),
            "want {want:?} in\n{stdout}"
        );
    }
    let connects = node_connects(&log);
    assert!(
        connects <= 3,
        "the launcher made {connects} connections to nodes, more than K + 1 = 3"
    );

    let who = c.script(
        "who.sh",
        "echo \"$NF_RANK $NF_SIZE $NF_LOCAL_RANK $NF_LOCAL_SIZE $NF_HOST $NF_XCPU_SESSION $(readlink /proc/self/ns/net) ${NF_EXEC_RANK:-none}\"\n",
    );
    // Each host's ranks: (rank, its line's words), and the sessions they ran in.
    let places = |fanout: &str, log: &str| -> (Vec<Vec<String>>, usize) {
        let out = run(&mut c.nf_run(Some(log), &hosts, &["--fanout", fanout, "--", &who]));
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "--fanout {fanout}:\n{stdout}\n{}",
            text(&out.stderr)
        );
        let mut lines: Vec<Vec<String>> = stdout
            .lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect();
        lines.sort_by_key(|w| w[0].parse::<usize>().unwrap());
        assert_eq!(lines.len(), 12, "{stdout}");
        (lines, node_connects(log))
    };
    let (lines, connects) = places("2", &c.file("who.trace"));
    for (r, w) in lines.iter().enumerate() {
        let host = r / 2;
        let want = [
            r.to_string(),
            "12".into(),
            (r % 2).to_string(),
            "2".into(),
            c.net.addr(host).to_string(),
        ];
        assert_eq!(w[..5], want, "rank {r}: {w:?}");
        assert_eq!(w[6], ns_of(&c.net, host), "rank {r} runs on host {host}");
        assert_eq!(w[7], "none", "the tree's variables do not reach the ranks");
    }
    assert!(connects <= 3, "{connects} connections");
    for h in 0..6 {
        assert_eq!(
            lines[2 * h][5],
            lines[2 * h + 1][5],
            "host {h}'s ranks share one session"
        );
    }

    let (flat, flat_connects) = places("0", &c.file("flat.trace"));
    assert!(flat_connects >= 12, "per rank: {flat_connects} connections");
    assert_ne!(flat[0][5], flat[1][5], "per rank: a session each");
}

/// A rank on a far host (two hops down a fan-out-2 tree) that fails ends the job with
/// its rank and host named, and every other rank on every host is stopped; SIGTERM to
/// nf run stops every rank on every host; an unreachable host is named.
#[test]
fn nf_run_through_the_tree_stops_every_host_and_names_failures() {
    let mut c = Cluster::start(5, &[]);
    let pids = c.file("pids");
    std::fs::create_dir(&pids).unwrap();
    std::fs::set_permissions(&pids, std::fs::Permissions::from_mode(0o777)).unwrap();
    let prog = c.script(
        "rank.sh",
        &format!(
            "echo $$ > {pids}/$NF_RANK.tmp && mv {pids}/$NF_RANK.tmp {pids}/$NF_RANK\n\
             [ \"$NF_RANK\" = \"$NF_FAIL\" ] && {{ while [ $(ls {pids} | wc -l) -lt $NF_SIZE ]; do sleep 0.05; done; exit 3; }}\n\
             exec sleep 30\n"
        ),
    );
    let all_gone = |what: &str| {
        for r in 0..10 {
            let pid: u32 = std::fs::read_to_string(format!("{pids}/{r}"))
                .unwrap_or_else(|e| panic!("{what}: rank {r} never started: {e}"))
                .trim()
                .parse()
                .unwrap();
            // The starter reaps a rank before it reports its end, and nf run returns
            // once every rank's end is in: a rank still there was not stopped.
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "{what}: rank {r} (pid {pid}) is left"
            );
        }
        for e in std::fs::read_dir(&pids).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
    };
    let hosts = c.host_list(2);
    // Rank 8 is on host 4: host 0 hands on to 1 and 3, host 3 to 4.
    let started = Instant::now();
    let out = run(c
        .nf_run(None, &hosts, &["--fanout", "2", "--", &prog])
        .env("NF_FAIL", "8"));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("rank 8") && stderr.contains(&c.net.addr(4).to_string()),
        "the failure names rank 8 and its host:\n{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the others were not stopped"
    );
    all_gone("after rank 8 failed");

    let job = c
        .nf_run(None, &hosts, &["--fanout", "2", "--", &prog])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + BOUND;
    while std::fs::read_dir(&pids)
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
        < 10
    {
        assert!(Instant::now() < deadline, "the ranks never all started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &job.id().to_string()])
        .status();
    let out = nf_testkit::finish_within(job, BOUND, "nf run after SIGTERM");
    assert_eq!(out.status.code(), Some(128 + 15), "{}", text(&out.stderr));
    all_gone("after SIGTERM");

    let _ = c.servers[3].kill();
    let _ = c.servers[3].wait();
    let out = run(&mut c.nf_run(None, &hosts, &["--fanout", "2", "--", &prog]));
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&c.net.addr(3).to_string()),
        "the unreachable host is named:\n{stderr}"
    );
    assert!(
        std::fs::read_dir(&pids).unwrap().next().is_none(),
        "nothing ran:\n{stderr}"
    );
}
