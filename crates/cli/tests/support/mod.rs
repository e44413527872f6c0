//! Namespace hosts ([`nf_testkit::Netns`]) running the real `nf serve` and `nf gateway`
//! over TLS with certificates made by `nf cert`, and clients that reach them as the
//! unprivileged test account: the fixtures of the multi-host tests.
//!
//! [`Hosts`] owns the namespaces, a directory holding every certificate, config, export
//! and log, and the servers it started (one per host at most). Servers are killed when
//! it is dropped, also when a test panics; the namespaces go with the `Netns`.
//! Every command run here is bounded ([`BOUND`]), and so is every wait.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nf_link::addr::parse_addr;
use nf_link::tls::TlsFiles;
use nf_ninep_client::connect::{connect, ConnectError, ConnectOptions};
use nf_ninep_client::Root;
use nf_testkit::users::{test_account, Account};
use nf_testkit::Netns;

/// The `nf` binary under test.
pub const NF: &str = env!("CARGO_BIN_EXE_nf");
/// Every command and wait here ends in seconds; this only keeps a broken one from
/// hanging the suite.
pub const BOUND: Duration = Duration::from_secs(60);
/// The port every server listens on, at its host's address.
pub const PORT: u16 = 564;

/// Runs `cmd` to completion within [`BOUND`] (stdin closed, output captured).
pub fn run(cmd: &mut Command) -> Output {
    nf_testkit::output_within(cmd, BOUND)
}

/// Bytes as text, for messages and comparisons.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub use nf_testkit::wait_for;

/// A pseudo-random byte string of `len` bytes from `seed` (xorshift: cheap, and
/// distinct seeds give distinct contents).
pub fn pseudo_random(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A server this fixture started: the process and how to start it again.
struct Server {
    child: Child,
    args: Vec<String>,
    /// The line it prints once it listens (`nf serve: ready`, `nf gateway: ready`).
    ready: &'static str,
}

/// K namespace hosts, their certificates, and the servers started on them.
pub struct Hosts {
    /// The hosts.
    pub net: Netns,
    /// The unprivileged account the clients act as (certificate `USER.pem`).
    pub user: Account,
    dir: tempfile::TempDir,
    servers: BTreeMap<usize, Server>,
}

impl Hosts {
    /// `k` hosts, a CA and the test account's user certificate.
    pub fn new(k: usize) -> Hosts {
        let user = test_account().expect("the test account");
        let net = Netns::create(k).expect("namespace hosts");
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let hosts = Hosts {
            net,
            user,
            dir,
            servers: BTreeMap::new(),
        };
        hosts.cert(&["ca"]);
        hosts.user_cert(&hosts.user.name.clone());
        hosts
    }

    /// `DIR/name`, the fixture's directory (readable by everyone).
    pub fn file(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    /// Runs `nf cert ARGS --dir DIR`, unless `made` (a file it makes) exists already.
    fn cert_once(&self, made: &str, args: &[&str]) {
        if !Path::new(&self.file(made)).exists() {
            self.cert(args);
        }
    }

    /// Runs `nf cert ARGS --dir DIR`.
    pub fn cert(&self, args: &[&str]) {
        let out = run(Command::new(NF)
            .arg("cert")
            .args(args)
            .args(["--dir", &self.file("")]));
        assert!(
            out.status.success(),
            "nf cert {args:?}: {}",
            text(&out.stderr)
        );
    }

    /// A user certificate for `name` (DIR/NAME.pem, DIR/NAME.key).
    pub fn user_cert(&self, name: &str) {
        self.cert_once(&format!("{name}.pem"), &["user", name]);
    }

    /// Host i's address.
    pub fn ip(&self, i: usize) -> IpAddr {
        self.net.addr(i)
    }

    /// `tls:IP:PORT` of host i's server.
    pub fn addr(&self, i: usize) -> String {
        format!("tls:{}:{PORT}", self.ip(i))
    }

    /// Host i's export directory (made on first use, writable by everyone, sticky).
    pub fn export(&self, i: usize) -> PathBuf {
        self.shared_dir(&format!("export{i}"))
    }

    /// `DIR/name` as a directory everyone may write to (sticky, as /tmp).
    fn shared_dir(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        if !p.exists() {
            std::fs::create_dir(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1777)).unwrap();
        }
        p
    }

    /// Starts `nf serve -f` on host i over TLS at [`Hosts::addr`] with its node
    /// certificate, its own export, xcpu directory, memory registry and unix socket,
    /// and `extra` flags; returns once it says it is ready.
    pub fn start_node(&mut self, i: usize, extra: &[&str]) {
        let ip = self.ip(i).to_string();
        self.cert_once(&format!("{ip}.pem"), &["node", &ip]);
        let mut args: Vec<String> = vec!["serve".into(), "-f".into()];
        args.extend(self.tls_args(&format!("{ip}:{PORT}"), &ip));
        args.push("--export".into());
        args.push(self.export(i).to_str().unwrap().into());
        args.push("--mem-registry".into());
        args.push(self.shared_dir(&format!("mem{i}")).to_str().unwrap().into());
        args.push("--xcpu-dir".into());
        args.push(self.file(&format!("xcpu{i}")));
        args.push("--unix".into());
        args.push(self.file(&format!("run{i}/nf.sock")));
        args.extend(extra.iter().map(|s| s.to_string()));
        self.spawn(i, args, "nf serve: ready");
    }

    /// Starts `nf gateway -f` named `name` on host i over TLS at [`Hosts::addr`]
    /// with the config `toml` (written to DIR/NAME.toml) and a gateway certificate
    /// for NAME valid for host i's address; returns once it says it is ready.
    pub fn start_gateway(&mut self, i: usize, name: &str, toml: &str) {
        let ip = self.ip(i).to_string();
        self.cert_once(&format!("{name}.pem"), &["gateway", name, "--host", &ip]);
        let config = self.file(&format!("{name}.toml"));
        std::fs::write(&config, toml).unwrap();
        let mut args: Vec<String> = vec!["gateway".into(), "-f".into()];
        args.extend(["--config".into(), config]);
        args.extend(self.tls_args(&format!("{ip}:{PORT}"), name));
        self.spawn(i, args, "nf gateway: ready");
    }

    /// `--tcp LISTEN --tls-cert DIR/CERT.pem --tls-key DIR/CERT.key --tls-client-ca`.
    fn tls_args(&self, listen: &str, cert: &str) -> Vec<String> {
        vec![
            "--tcp".into(),
            listen.into(),
            "--tls-cert".into(),
            self.file(&format!("{cert}.pem")),
            "--tls-key".into(),
            self.file(&format!("{cert}.key")),
            "--tls-client-ca".into(),
            self.file("ca.pem"),
        ]
    }

    /// Starts `nf ARGS` inside host i (its log in DIR/logI) and waits for the line
    /// `ready (pid N)`, N being the process started.
    fn spawn(&mut self, i: usize, args: Vec<String>, ready: &'static str) {
        assert!(
            !self.servers.contains_key(&i),
            "host {i} runs a server already"
        );
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.file(&format!("log{i}")))
            .unwrap();
        let mut child = self
            .net
            .exec(i, NF)
            .args(&args)
            .env("NF_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start the server");
        // `ip netns exec` execs the program: the child is the server itself.
        let want = format!("{ready} (pid {})", child.id());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with(ready) {
                    let _ = tx.send(line);
                }
            }
        });
        let server = Server {
            child,
            args: args.clone(),
            ready,
        };
        self.servers.insert(i, server);
        match rx.recv_timeout(BOUND) {
            Ok(line) => assert_eq!(line, want, "host {i}: {}", self.log(i)),
            Err(_) => panic!(
                "nf {} on host {i} never said it was ready; its log:\n{}",
                args[0],
                self.log(i)
            ),
        }
    }

    /// What host i's servers logged so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.file(&format!("log{i}"))).unwrap_or_default()
    }

    /// The pid of host i's server.
    pub fn pid(&self, i: usize) -> u32 {
        self.servers[&i].child.id()
    }

    /// SIGKILLs host i's server and reaps it (it may be started again: [`Hosts::restart`]).
    pub fn kill(&mut self, i: usize) {
        let s = self.servers.get_mut(&i).expect("a server on the host");
        let _ = s.child.kill();
        let _ = s.child.wait();
    }

    /// Waits for host i's server to exit (after a signal), for at most `bound`.
    pub fn wait_exit(&mut self, i: usize, bound: Duration) -> std::process::ExitStatus {
        let s = self.servers.get_mut(&i).expect("a server on the host");
        let deadline = Instant::now() + bound;
        loop {
            if let Some(status) = s.child.try_wait().expect("waiting for the server") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server on host {i} still runs after {bound:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts host i's server again, as it was started, after [`Hosts::kill`].
    pub fn restart(&mut self, i: usize) {
        let s = self.servers.remove(&i).expect("a server on the host");
        self.spawn(i, s.args, s.ready);
    }

    /// Sends `kill -SIG` (e.g. `STOP`, `CONT`) to host i's server.
    pub fn signal(&self, i: usize, sig: &str) {
        let out = run(Command::new("kill").args([&format!("-{sig}"), &self.pid(i).to_string()]));
        assert!(out.status.success(), "kill -{sig}: {}", text(&out.stderr));
    }

    /// `nf ARGS` run inside host `from` with the test account's certificate.
    pub fn nf(&self, from: usize, args: &[&str]) -> Output {
        self.nf_as(from, &self.user.name.clone(), args)
    }

    /// `nf ARGS` run inside host `from` with `user`'s certificate.
    pub fn nf_as(&self, from: usize, user: &str, args: &[&str]) -> Output {
        run(&mut self.nf_command(from, user, args))
    }

    /// The command `nf ARGS` inside host `from` with `user`'s certificate (its flags
    /// right after the subcommand, ahead of any `--`), to run or spawn.
    pub fn nf_command(&self, from: usize, user: &str, args: &[&str]) -> Command {
        let (sub, rest) = args.split_first().expect("a subcommand");
        let mut c = self.net.exec(from, NF);
        c.arg(sub)
            .args(["--cert", &self.file(&format!("{user}.pem"))])
            .args(["--key", &self.file(&format!("{user}.key"))])
            .args(["--ca", &self.file("ca.pem")])
            .args(rest)
            .stdin(Stdio::null());
        c
    }

    /// `nf ARGS` inside host `from` as the test account; panics unless it succeeds,
    /// and gives its standard output.
    pub fn nf_ok(&self, from: usize, args: &[&str]) -> String {
        let out = self.nf(from, args);
        assert!(
            out.status.success(),
            "nf {args:?} failed ({}): {}",
            out.status,
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// A 9P connection made from inside host `from` to `addr` (`tls:…`), presenting
    /// the certificate DIR/CERT.pem, attached as `uname` to `aname`. The socket stays
    /// in host `from`'s network, whichever thread uses it.
    pub fn attach_with(
        &self,
        from: usize,
        addr: &str,
        cert: &str,
        uname: &str,
        aname: &str,
    ) -> Result<Root, ConnectError> {
        let addr = parse_addr(addr).expect("an address");
        let opts = ConnectOptions {
            user: uname.to_string(),
            tls: Some(TlsFiles {
                cert: self.file(&format!("{cert}.pem")).into(),
                key: self.file(&format!("{cert}.key")).into(),
                ca: self.file("ca.pem").into(),
            }),
            timeout: Some(Duration::from_secs(20)),
            ..ConnectOptions::default()
        };
        self.net
            .within(from, || {
                let client = connect(&addr, &opts)?;
                Ok(client.attach(&opts.user, aname)?)
            })
            .expect("entering the host")
    }

    /// The test account's connection from host `from` to `addr`, attached as its
    /// certificate says.
    pub fn attach(&self, from: usize, addr: &str) -> Root {
        let user = self.user.name.clone();
        self.attach_with(from, addr, &user, "", "")
            .unwrap_or_else(|e| panic!("attaching to {addr} as {user}: {e}"))
    }

    /// Waits until the text of `path` read through `root` satisfies `ok`, and gives it.
    pub fn wait_text(&self, root: &Root, path: &str, ok: impl Fn(&str) -> bool) -> String {
        wait_for(&format!("{path} as wanted"), BOUND, || {
            let t = root
                .read_file(path)
                .map(|b| text(&b))
                .map_err(|e| e.to_string())?;
            if ok(&t) {
                Ok(t)
            } else {
                Err(t)
            }
        })
    }

    /// Host i's network namespace as `readlink /proc/self/ns/net` shows it there.
    pub fn ns_of(&self, i: usize) -> String {
        let ino = std::fs::metadata(self.net.path(i)).unwrap().ino();
        format!("net:[{ino}]")
    }

    /// The host whose namespace `readlink /proc/self/ns/net` printed as `ns`.
    pub fn host_of_ns(&self, ns: &str) -> Option<usize> {
        (0..self.net.len()).find(|&i| self.ns_of(i) == ns)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // What the servers said last, to tell why the test failed.
            for i in self.servers.keys() {
                let log = self.log(*i);
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                eprintln!("--- the end of host {i}'s server log:\n{tail}");
            }
        }
        for s in self.servers.values_mut() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
    }
}

/// A gateway config: `trust_gateways`, then one `[[member]]` per (name, address), then
/// `extra` (views, access lists) as is.
pub fn gateway_config(trust: &[&str], members: &[(String, String)], extra: &str) -> String {
    let mut t = format!("trust_gateways = {trust:?}\n");
    for (name, addr) in members {
        t.push_str(&format!("[[member]]\nname = {name:?}\naddr = {addr:?}\n"));
    }
    t.push_str(extra);
    t
}
