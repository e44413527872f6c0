//! [`Netns`]: K network namespaces joined by a bridge, standing for K hosts.
//!
//! Fixture `N` of test process `P` with K hosts looks like this:
//!
//! ```text
//!  nfP-N-h0                     nfP-N-br                      nfP-N-h1
//!  lo                                                         lo
//!  eth0 10.251.X.1/24 ══ veth ══ v0 ─┐            ┌─ v1 ══ veth ══ eth0 10.251.X.2/24
//!                                    └─ br0 (up) ─┘
//!                                    (no address)      … and so on to h{K-1}
//! ```
//!
//! The bridge lives in a namespace of its own, so the root namespace gets no interface
//! and no address, and the hosts can reach each other and nothing else. `X` differs
//! between the fixtures of one process; fixtures never see each other anyway.
//!
//! Since the root namespace has no address on the fixture's network, a launcher whose
//! ranks run in the hosts must itself run inside one of them, with its PMI server on
//! that host's address: in-process on a thread that entered it
//! (`net.within(0, || nf_launch::run_on_hosts(…))`), or as
//! `ip netns exec <host 0> nf run --hosts … --remote 'ip netns exec {host}' --pmi-bind <addr 0>`.
//!
//! [`Netns::create`], in order, recording each namespace as soon as it exists so that a
//! failure part-way removes what was made:
//! 1. check that we are root and that `ip` runs;
//! 2. add the bridge namespace and `br0` in it, up;
//! 3. for each host i: add namespace `h{i}` with `lo` up; add the veth pair `v{i}`
//!    (bridge side, enslaved to `br0`, up) / `eth0` (host side); give `eth0` its
//!    address and bring it up.
//!
//! Drop, for every namespace made (hosts first, then the bridge):
//! 1. SIGKILL the processes still inside it (a rank a failed test left running), by pid
//!    from `ip netns pids`;
//! 2. `ip netns del` it; its interfaces go with it, and a veth pair dies with either end.
//!
//! Every `ip` call is bounded by [`COMMAND_TIMEOUT`].

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Every namespace name starts with this, then `<pid>-<n>-`.
pub const NAME_PREFIX: &str = "nf";
/// Most hosts in one fixture (one /24 less the network and broadcast addresses).
pub const MAX_HOSTS: usize = 253;
/// Longest an `ip` command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Where `ip netns` keeps its namespace handles.
const NETNS_DIR: &str = "/var/run/netns";
/// The bridge inside the bridge namespace.
const BRIDGE: &str = "br0";
/// The host side of each veth pair, inside the host's namespace.
const HOST_IF: &str = "eth0";

/// Why a fixture could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not running as root.
    #[error(
        "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) but this test runs as \
         uid {uid}; run the tests as root (e.g. `sudo -E cargo test`) or in a container \
         with those capabilities"
    )]
    NotRoot {
        /// The effective user id.
        uid: u32,
    },
    /// `ip` is not installed.
    #[error("the `ip` command was not found; install iproute2 (`apt-get install iproute2`)")]
    IpMissing,
    /// A fixture of this size cannot be made.
    #[error("a fixture has 1 to {max} hosts; asked for {k}")]
    BadCount {
        /// Hosts asked for.
        k: usize,
        /// The limit.
        max: usize,
    },
    /// A command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A command failed.
    #[error(
        "`{command}` failed ({status}): {stderr}; the kernel needs network namespace, veth \
         and bridge support; leftovers of crashed runs: tests/netns/cleanup.sh"
    )]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it said on stderr.
        stderr: String,
    },
    /// A command did not finish in time and was killed.
    #[error("`{command}` did not finish within {after:?} and was killed")]
    Timeout {
        /// The command line.
        command: String,
        /// The limit.
        after: Duration,
    },
    /// A thread could not join a namespace.
    #[error("cannot enter network namespace {name}: {source}")]
    Enter {
        /// The namespace.
        name: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// K network namespaces that stand for K hosts, joined by a bridge in a namespace of
/// its own; everything is removed on drop.
#[derive(Debug)]
pub struct Netns {
    bridge: String,
    hosts: Vec<String>,
    addrs: Vec<IpAddr>,
    /// Namespaces that exist, in creation order: Drop removes exactly these.
    made: Vec<String>,
}

impl Netns {
    /// Makes `k` host namespaces (see the module documentation), named uniquely for this
    /// process and fixture, with addresses in a private /24.
    pub fn create(k: usize) -> Result<Netns, NetnsError> {
        if k == 0 || k > MAX_HOSTS {
            return Err(NetnsError::BadCount { k, max: MAX_HOSTS });
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            return Err(NetnsError::NotRoot { uid });
        }
        match Command::new("ip")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(NetnsError::IpMissing),
            _ => {}
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let prefix = format!("{NAME_PREFIX}{pid}-{n}");
        // Third octet 1..=254, different for 254 fixtures in a row of one process.
        let octet = u8::try_from((pid.wrapping_add(n)) % 254 + 1).unwrap_or(1);
        let mut net = Netns {
            bridge: format!("{prefix}-br"),
            hosts: (0..k).map(|i| format!("{prefix}-h{i}")).collect(),
            addrs: (0..k)
                .map(|i| IpAddr::V4(Ipv4Addr::new(10, 251, octet, (i + 1) as u8)))
                .collect(),
            made: Vec::new(),
        };
        // On error, `net` is dropped here and removes what was made.
        net.build()?;
        Ok(net)
    }

    fn build(&mut self) -> Result<(), NetnsError> {
        let br = self.bridge.clone();
        ip(&["netns", "add", &br])?;
        self.made.push(br.clone());
        ip(&["-n", &br, "link", "add", BRIDGE, "type", "bridge"])?;
        ip(&["-n", &br, "link", "set", BRIDGE, "up"])?;
        for i in 0..self.hosts.len() {
            let h = self.hosts[i].clone();
            let veth = format!("v{i}");
            let cidr = format!("{}/24", self.addrs[i]);
            ip(&["netns", "add", &h])?;
            self.made.push(h.clone());
            ip(&["-n", &h, "link", "set", "lo", "up"])?;
            ip(&[
                "-n", &br, "link", "add", &veth, "type", "veth", "peer", "name", HOST_IF, "netns",
                &h,
            ])?;
            ip(&["-n", &br, "link", "set", &veth, "master", BRIDGE, "up"])?;
            ip(&["-n", &h, "addr", "add", &cidr, "dev", HOST_IF])?;
            ip(&["-n", &h, "link", "set", HOST_IF, "up"])?;
        }
        Ok(())
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// Whether there are no hosts (never, for a fixture that was created).
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Host i's namespace name, for `ip netns exec` (and as its host name in a job).
    pub fn host(&self, i: usize) -> &str {
        &self.hosts[i]
    }

    /// Host i's address on the fixture's network.
    pub fn addr(&self, i: usize) -> IpAddr {
        self.addrs[i]
    }

    /// The hosts' network, as `A.B.C.0/24`.
    pub fn subnet(&self) -> String {
        match self.addrs[0] {
            IpAddr::V4(a) => {
                let [a, b, c, _] = a.octets();
                format!("{a}.{b}.{c}.0/24")
            }
            IpAddr::V6(a) => format!("{a}/64"),
        }
    }

    /// The name of the namespace that holds the bridge.
    pub fn bridge(&self) -> &str {
        &self.bridge
    }

    /// The namespace handle of host i (`/var/run/netns/<name>`); its inode number is the
    /// namespace's, as in `/proc/<pid>/ns/net` of the processes inside.
    pub fn path(&self, i: usize) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(&self.hosts[i])
    }

    /// `ip netns exec <host i> <program>`, to add arguments to and run.
    pub fn exec(&self, i: usize, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.hosts[i]]).arg(program);
        cmd
    }

    /// Runs `f` on a thread inside host i's network namespace and returns its result.
    /// Sockets it opens and processes it starts belong to that host; a panic in `f`
    /// is passed on.
    pub fn within<T: Send>(&self, i: usize, f: impl FnOnce() -> T + Send) -> Result<T, NetnsError> {
        let name = self.hosts[i].clone();
        let enter_err = |source| NetnsError::Enter {
            name: name.clone(),
            source,
        };
        let handle = File::open(self.path(i)).map_err(enter_err)?;
        thread::scope(|s| {
            let worker = s.spawn(move || {
                // SAFETY: `handle` is an open namespace file for the duration of the call;
                // setns with CLONE_NEWNET only changes this thread's network namespace.
                if unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(f())
            });
            match worker.join() {
                Ok(result) => result.map_err(enter_err),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// SIGKILLs every process inside host i at once, as if the host crashed.
    pub fn kill_all(&self, i: usize) {
        kill_inside(&self.hosts[i]);
    }

    /// Takes host i's link down at the bridge end of its veth pair, as if its cable were
    /// pulled: host i keeps its address, and packets to and from it are lost silently.
    pub fn link_down(&self, i: usize) -> Result<(), NetnsError> {
        ip(&["-n", &self.bridge, "link", "set", &format!("v{i}"), "down"])
    }

    /// Brings host i's link back up after [`Netns::link_down`].
    pub fn link_up(&self, i: usize) -> Result<(), NetnsError> {
        ip(&["-n", &self.bridge, "link", "set", &format!("v{i}"), "up"])
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Hosts first: their veths take the bridge ports with them.
        for name in self.made.drain(..).rev() {
            kill_inside(&name);
            if let Err(e) = ip(&["netns", "del", &name]) {
                eprintln!("nf-testkit: cannot remove network namespace {name}: {e}");
            }
        }
    }
}

/// SIGKILLs every process in namespace `name` (strays of a failed test).
fn kill_inside(name: &str) {
    let Ok(pids) = ip_output(&["netns", "pids", name]) else {
        return;
    };
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<libc::pid_t>().ok())
    {
        // SAFETY: kill has no memory preconditions; the pid is a process inside a
        // namespace this fixture made, so it was started by this test.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Runs `ip ARGS`, bounded by [`COMMAND_TIMEOUT`].
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    ip_output(args).map(drop)
}

/// Runs `ip ARGS`, bounded by [`COMMAND_TIMEOUT`], and returns its stdout.
fn ip_output(args: &[&str]) -> Result<String, NetnsError> {
    let command = format!("ip {}", args.join(" "));
    let mut child = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => NetnsError::IpMissing,
            _ => NetnsError::Spawn {
                command: command.clone(),
                source,
            },
        })?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < COMMAND_TIMEOUT => {
                thread::sleep(Duration::from_millis(2));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NetnsError::Timeout {
                    command,
                    after: COMMAND_TIMEOUT,
                });
            }
        }
    }
    // `ip`'s answers here are a few lines, far below a pipe's buffer, so it never
    // blocked on them; it has exited, and its pipes reach their end.
    let out = child
        .wait_with_output()
        .map_err(|source| NetnsError::Spawn {
            command: command.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(NetnsError::Failed {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Names of the network namespaces `ip netns list` shows: how tests check that hosts
/// are gone. Panics if `ip` cannot run (an empty list would pass such checks).
pub fn listed() -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}
