//! `nf serve`: the node daemon — this node's file tree over 9P2000.L.
//!
//! Without `--foreground` it starts itself again with `--foreground` in a session of
//! its own (`setsid`: no controlling terminal, so nothing it starts can reach the
//! terminal it was started from), passes on what that child prints until the child
//! says it is ready (or fails), then exits, leaving the child serving: so
//! `nf serve && nf ls :/` never races. Whatever it inherited beyond 0–2 is marked
//! close-on-exec first ([`nf_sys::fds`]).
//! The log goes to stderr (a detached server's only until it is ready) and to `/log`.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use nf_link::addr::{default_socket, parse_addr, Addr};
use nf_link::tls::TlsFiles;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::synthetic::Stream;
use nf_node::join::JoinConfig;
use nf_node::pipe::PipeLimits;
use nf_node::status::{check_label, check_labels};
use nf_node::xcpu::XcpuConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_sys::spawn::Rlimit;

/// The line a foreground server prints once it is listening.
const READY: &str = "nf serve: ready";
/// Set by [`detach`] for the child: stop writing to stderr once ready.
const DETACHED_ENV: &str = "NF_SERVE_DETACHED";

/// Arguments of `nf serve`.
#[derive(Args, Debug)]
#[command(after_help = "\
Tree served: /status (node facts, snapshot per open), /log (append by writing; \
readers follow it like tail -f), /pipe/NAME (named pipes: create a file in /pipe), \
/fs and /ro (the --export directory, read-write and read-only with private writes), \
/mem/JOB/RANK/SEGMENT (running procs' rma segments: reading is a get, writing a put; \
found through the memory registry, --mem-registry).

Who may attach, and as whom: a local client (unix socket, shm, loopback tcp) is known \
by the kernel (its uid) and may attach only as its own user, root as anyone; a TLS \
client only as its certificate's name. Another node (a certificate from nf cert node) \
and a gateway trusted with --trust-gateway (nf cert gateway) may attach for any user \
with an account here, never root. Every operation then runs with that user's \
rights (fsuid, fsgid, groups): run as root, nf serve serves every user; run as a \
user, only that user.

/status also shows the node's labels (--label; `labels gpu,rack3`, or `labels -` \
without any) and its /xcpu sessions (`sessions N`). With --join the node registers \
with a gateway: it connects as itself (its node certificate), writes the address to \
dial it at to the gateway's /join, and does so again every 10 s.

Local clients may also talk 9P through shared memory: they connect to the shm socket \
(shm:PATH.shm) and get a memfd ring pair. Listens on the unix sockets only, unless --tcp \
is given. Tcp on an address that is not \
loopback is refused unless TLS is configured (--tls-cert, --tls-key, --tls-client-ca): \
then every tcp listener speaks TLS, clients must present a certificate signed by the \
client CA, and its common name is the only 9P user they may attach as (it must be an \
account on this host). Log level: NF_LOG (default info). Stop with SIGINT or SIGTERM.

Examples:
  nf serve --export /srv/data                       # detach once listening
  nf serve -f --unix /tmp/nf/nf.sock --export /tmp/x   # stay in the foreground
  nf ls unix:/tmp/nf/nf.sock:/
  nf serve --tcp 0.0.0.0:5640 --tls-cert node.pem --tls-key node.key --tls-client-ca ca.pem
  nf serve --tcp 0.0.0.0:5640 --tls-cert n7.pem --tls-key n7.key --tls-client-ca ca.pem \\
    --label gpu --trust-gateway gw1 --join tls:gw1:5640")]
pub struct ServeArgs {
    /// Read options from this TOML file first (a system service's
    /// /etc/ninefold/serve.toml): each key a long option without dashes, e.g.
    /// `export = "/srv"`, `tcp = ["0.0.0.0:5640"]`; the command line wins.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Unix socket to listen on [default: $XDG_RUNTIME_DIR/ninefold/nf.sock, or
    /// /run/ninefold/nf.sock without XDG_RUNTIME_DIR]. A missing directory is made
    /// with mode 0755 and the socket is 0666 (the attach check decides who may do
    /// what); a directory others may write to is refused.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Listen on no unix socket (then give --tcp).
    #[arg(long, conflicts_with = "unix")]
    pub no_unix: bool,
    /// Unix socket where local clients set up shared-memory channels (9P through
    /// memfd rings; address shm:PATH) [default: the unix socket's path + ".shm"].
    #[arg(long, value_name = "PATH")]
    pub shm: Option<PathBuf>,
    /// Also listen on tcp ADDR:PORT (repeatable; port 0 picks one). Loopback only,
    /// unless TLS is configured.
    #[arg(long, value_name = "ADDR:PORT")]
    pub tcp: Vec<SocketAddr>,
    /// TLS for the tcp listeners.
    #[command(flatten)]
    pub tls: ListenTlsArgs,
    /// Directory served as /fs (read-write) and /ro (read-only, writes kept in memory).
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Largest 9P message offered to clients, in bytes (at least 4096).
    #[arg(long, default_value_t = 1 << 20)]
    pub msize: u32,
    /// Most fids one connection may hold (more: EMFILE).
    #[arg(long, default_value_t = 16384)]
    pub max_fids: usize,
    /// Most requests one connection may have in flight (more: EAGAIN).
    #[arg(long, default_value_t = 256)]
    pub max_in_flight: usize,
    /// Most connections served at once; the last eighth only for users holding fewer
    /// than 4. When full, an idle connection of the user holding the most gives way;
    /// if none can, the new one is answered EAGAIN and closed.
    #[arg(long, default_value_t = ServerConfig::default().max_clients)]
    pub max_clients: usize,
    /// Most connections served at once for one user (the kernel's uid of a local peer,
    /// the account of a TLS name: one user over every transport); the user's own idle
    /// connection gives way, else EAGAIN.
    #[arg(long, default_value_t = ServerConfig::default().max_clients_per_user)]
    pub max_clients_per_user: usize,
    /// Bytes one connection may hold in buffers and requests in flight (more: ENOMEM).
    #[arg(long, value_name = "BYTES", default_value_t = ServerConfig::default().max_conn_memory)]
    pub conn_memory: usize,
    /// Bytes all of one user's connections may hold (more: ENOMEM); the whole server
    /// may hold 16× this.
    #[arg(long, value_name = "BYTES", default_value_t = ServerConfig::default().max_user_memory)]
    pub user_memory: usize,
    /// Descriptors one connection's open files and directories may keep (more: EMFILE)
    /// [default: a quarter of --user-fds].
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub conn_fds: Option<usize>,
    /// Descriptors all of one user's open files and directories may keep (more:
    /// EMFILE); the whole server keeps three quarters of its descriptor limit, which it
    /// raises to the hard limit (RLIMIT_NOFILE) at start [default: an eighth of it].
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub user_fds: Option<usize>,
    /// Most threads running requests at once; one user's requests hold at most a
    /// quarter of them (the rest wait in that user's queue), and the last eighth are
    /// kept for users running few.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_workers, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4..))]
    pub max_workers: usize,
    /// Seconds a connection may take to attach once it starts talking, and a started
    /// frame to arrive;
    /// a connection holding no fid is closed after 6× this of silence.
    #[arg(long, default_value_t = 10, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub handshake_timeout: u64,
    /// Pipes one user may own in /pipe (more: EDQUOT).
    #[arg(long, default_value_t = PipeLimits::default().pipes_per_user)]
    pub max_pipes_per_user: usize,
    /// Bytes buffered in one user's pipes (more: EDQUOT); all pipes together may
    /// buffer 16× this.
    #[arg(long, default_value_t = PipeLimits::default().bytes_per_user)]
    pub pipe_bytes_per_user: usize,
    /// Bytes /ro may hold for what clients write, create and remove there (contents
    /// and entries; more: ENOSPC).
    #[arg(long, default_value_t = nf_ninep_trees::readonly::DEFAULT_MEMORY_LIMIT)]
    pub ro_memory: u64,
    /// Bytes of /log kept for readers that open later.
    #[arg(long, default_value_t = 256 * 1024)]
    pub log_history: usize,
    /// Buffer of each pipe in /pipe, in bytes (writers block when it is full).
    #[arg(long, default_value_t = nf_node::pipe::DEFAULT_PIPE_CAPACITY)]
    pub pipe_buffer: usize,
    /// The memory registry where procs publish their segments, served as /mem: give
    /// the jobs the same directory in NF_MEM_REGISTRY [default: $NF_MEM_REGISTRY, else
    /// $XDG_RUNTIME_DIR/ninefold/mem, else /dev/shm/ninefold-UID/mem, else
    /// /tmp/ninefold-UID/mem].
    #[arg(long, value_name = "DIR")]
    pub mem_registry: Option<PathBuf>,
    /// Let gateway NAME (its certificate made by `nf cert gateway NAME`) attach for any
    /// user with an account here, never root (repeatable).
    #[arg(long = "trust-gateway", value_name = "NAME")]
    pub trust_gateways: Vec<String>,
    /// A label of this node, shown in /status (repeatable, at most 32; letters,
    /// digits, `_`, `.`, `-`).
    #[arg(long = "label", value_name = "NAME", value_parser = parse_label)]
    pub labels: Vec<String>,
    /// Register with the gateway at ADDR (tls:HOST:PORT) at once and every 10 s, as
    /// this node (needs --tls-cert from `nf cert node`).
    #[arg(long, value_name = "ADDR", requires = "tls_cert", value_parser = parse_tls_addr)]
    pub join: Option<Addr>,
    /// The address the gateway should dial this node at [default: tls:CN:PORT, the
    /// certificate's common name and the first --tcp port].
    #[arg(long, value_name = "ADDR", requires = "join", value_parser = parse_tls_addr)]
    pub join_as: Option<Addr>,
    /// Where the server keeps what it makes for its clients (/xcpu's uploads): a
    /// directory of the server's user that nobody else may write; a missing one is made
    /// (0755) [default: /run/ninefold for root, else $XDG_RUNTIME_DIR/ninefold, else a
    /// new directory in $TMPDIR].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Stay in the foreground instead of detaching once listening.
    #[arg(long, short = 'f')]
    pub foreground: bool,
    /// Check the options (and --config's file), say whether they are valid, and exit
    /// without serving (as `sshd -t`).
    #[arg(long)]
    pub check_config: bool,
    /// `/xcpu`: jobs as files.
    #[command(flatten)]
    pub xcpu: XcpuArgs,
}

/// Limits and places of `/xcpu` (`nf serve --xcpu-…`).
#[derive(Args, Clone, Debug)]
pub struct XcpuArgs {
    /// Where sessions' upload directories are made [default: a new xcpu.XXXXXX in the
    /// state directory (--state-dir), removed at shutdown].
    #[arg(long, value_name = "DIR")]
    pub xcpu_dir: Option<PathBuf>,
    /// Seconds a session lives on once no file of it is open.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub xcpu_linger: u64,
    /// Sessions one user may have at once (more: EDQUOT); the node holds 16× this.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub xcpu_sessions_per_user: usize,
    /// Bytes one session may upload into its fs/ (more: EFBIG).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    pub xcpu_upload_limit: u64,
    /// Processes the user of a job may have (RLIMIT_NPROC on every job; a session
    /// may lower it with `limits nproc=N`, never raise it) [default: the server's own
    /// limit].
    #[arg(long, value_name = "N")]
    pub xcpu_nproc: Option<u64>,
    /// What /xcpu/arch says [default: this machine's, e.g. linux/x86_64]; for nodes
    /// that run binaries of another architecture (emulation) and for tests.
    #[arg(long, value_name = "OS/ARCH")]
    pub xcpu_arch: Option<String>,
}

impl XcpuArgs {
    fn config(&self) -> XcpuConfig {
        XcpuConfig {
            dir: self.xcpu_dir.clone(),
            linger: Duration::from_secs(self.xcpu_linger),
            sessions_per_user: self.xcpu_sessions_per_user,
            sessions_total: self.xcpu_sessions_per_user.saturating_mul(16),
            upload_limit: self.xcpu_upload_limit,
            limits: self.xcpu_nproc.map(Rlimit::Processes).into_iter().collect(),
            arch: self.xcpu_arch.clone(),
            ..XcpuConfig::default()
        }
    }
}

/// A `--label`, checked as the node checks it.
fn parse_label(s: &str) -> Result<String, String> {
    check_label(s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

/// A `tls:HOST:PORT` address (`--join`, `--join-as`).
fn parse_tls_addr(s: &str) -> Result<Addr, String> {
    match parse_addr(s).map_err(|e| e.to_string())? {
        a @ Addr::Tls(_) => Ok(a),
        _ => Err(format!(
            "{s}: a gateway and its nodes talk TLS only; give tls:HOST:PORT"
        )),
    }
}

/// A server's TLS files (`nf serve`, `nf gateway`).
#[derive(Args, Debug, Clone)]
pub struct ListenTlsArgs {
    /// This server's TLS certificate chain (PEM); makes every --tcp listener TLS.
    #[arg(long, value_name = "PEM", requires_all = ["tls_key", "tls_client_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// CA certificate(s) that sign the clients' certificates (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
}

impl ListenTlsArgs {
    /// The files, when all three are given (clap requires that of any one).
    pub fn files(&self) -> Option<TlsFiles> {
        match (&self.tls_cert, &self.tls_key, &self.tls_client_ca) {
            (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
            }),
            _ => None,
        }
    }
}

/// `/log` once the tree exists; log lines written before go to stderr only.
static LOG: OnceLock<Stream> = OnceLock::new();
/// Set once a detached server is ready: its parent has gone, and with it the terminal.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Writes each log line to stderr and to `/log`.
struct Tee;

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(log) = LOG.get() {
            log.push(buf);
        }
        if !QUIET.load(Ordering::Relaxed) {
            let _ = std::io::stderr().write_all(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sets up logging for the server: `NF_LOG` (default `info`) to stderr and `/log`.
pub fn init_tracing() {
    let (filter, warning) = nf_core::log::filter_from(|v| std::env::var(v).ok(), "info");
    if let Some(w) = warning {
        eprintln!("nf serve: {w}");
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(|| Tee)
        .init();
}

impl ServeArgs {
    fn config(&self) -> anyhow::Result<ServeConfig> {
        if self.msize < nf_ninep::MIN_MSIZE {
            bail!(super::Usage(format!(
                "--msize {} is below the 9P minimum of {} bytes",
                self.msize,
                nf_ninep::MIN_MSIZE
            )));
        }
        if self.max_fids == 0 || self.max_in_flight == 0 || self.max_clients == 0 {
            bail!(super::Usage(
                "--max-fids, --max-in-flight and --max-clients must be at least 1".into()
            ));
        }
        // A connection's buffers alone take up to 2 × msize; leave room for requests.
        let least = 4 * self.msize as usize;
        if self.conn_memory < least || self.user_memory < self.conn_memory {
            bail!(super::Usage(format!(
                "--conn-memory {} must be at least 4 × --msize ({least}), and --user-memory {} at least --conn-memory",
                self.conn_memory,
                self.user_memory
            )));
        }
        if let Some(dir) = &self.export {
            if !dir.is_dir() {
                bail!(super::Usage(format!(
                    "--export {}: not a directory (give the directory to serve as /fs and /ro)",
                    dir.display()
                )));
            }
        }
        check_labels(&self.labels)?;
        let unix = if self.no_unix {
            None
        } else {
            Some(self.unix.clone().unwrap_or_else(default_socket))
        };
        let shm = self.shm.clone().or_else(|| {
            unix.as_ref().map(|u| {
                let mut p = u.clone().into_os_string();
                p.push(".shm");
                PathBuf::from(p)
            })
        });
        let tls = self.tls.files();
        Ok(ServeConfig {
            unix,
            shm,
            tcp: self.tcp.clone(),
            tls,
            node: NodeConfig {
                export: self.export.clone(),
                log_history: self.log_history,
                pipe_capacity: self.pipe_buffer,
                pipe_limits: PipeLimits {
                    pipes_per_user: self.max_pipes_per_user,
                    pipes_total: self.max_pipes_per_user.saturating_mul(16),
                    bytes_per_user: self.pipe_bytes_per_user,
                    bytes_total: self.pipe_bytes_per_user.saturating_mul(16),
                },
                ro_memory_limit: self.ro_memory,
                mem_registry: self.mem_registry.clone(),
                xcpu: self.xcpu.config(),
                state_dir: self.state_dir.clone(),
                trusted_gateways: self.trust_gateways.clone(),
                labels: self.labels.clone(),
            },
            limits: ServerConfig {
                max_conn_fds: self.conn_fds,
                max_user_fds: self.user_fds,
                ..ServerConfig::default()
            }
            .max_msize(self.msize)
            .max_fids(self.max_fids)
            .max_in_flight(self.max_in_flight)
            .max_clients(self.max_clients)
            .max_clients_per_user(self.max_clients_per_user)
            .memory(self.conn_memory, self.user_memory)
            .max_workers(self.max_workers)
            .deadlines(
                Duration::from_secs(self.handshake_timeout),
                Duration::from_secs(self.handshake_timeout * 3),
                Duration::from_secs(self.handshake_timeout * 6),
            ),
            // Sockets systemd passes (nf-serve.socket) are used for --unix / --shm.
            socket_activation: true,
            join: self.join.clone().map(|gateway| JoinConfig {
                advertise: self.join_as.clone(),
                ..JoinConfig::new(gateway)
            }),
        })
    }
}

/// `nf serve` alone, to parse an options file's words with the command line's.
#[derive(clap::Parser)]
#[command(name = "nf serve", args_override_self = true)]
struct ServeCommand {
    #[command(flatten)]
    args: ServeArgs,
}

/// The arguments with `file`'s options before the command line's
/// ([`super::options_file`]).
fn with_options_file(file: &std::path::Path) -> anyhow::Result<ServeArgs> {
    use clap::Parser;
    let mut words = vec!["nf serve".to_string()];
    words.extend(super::options_file::words(file).map_err(|e| super::Usage(format!("{e:#}")))?);
    words.extend(std::env::args().skip(2));
    ServeCommand::try_parse_from(words)
        .map(|c| c.args)
        .map_err(|e| super::Usage(format!("with the options of {}: {e}", file.display())).into())
}

/// Runs `nf serve`.
pub fn main(a: ServeArgs) -> anyhow::Result<i32> {
    let a = match &a.config {
        Some(file) => with_options_file(file)?,
        None => a,
    };
    let config = a.config()?;
    if a.check_config {
        println!("nf serve: the options are valid");
        return Ok(0);
    }
    if !a.foreground {
        return detach(READY);
    }
    let signals = stop_signals()?;
    let daemon = Daemon::start(&config).context("starting the node server")?;
    let _ = LOG.set(daemon.log().clone());
    announce("nf serve", READY, daemon.addrs());
    wait_for_stop(signals);
    if !daemon.shutdown(Duration::from_secs(5)) {
        tracing::warn!("some connections did not release their fids within 5 s");
    }
    Ok(0)
}

/// SIGINT and SIGTERM, caught from now on (before the server starts, so a signal
/// that comes while it starts is not lost).
pub(crate) fn stop_signals() -> anyhow::Result<signal_hook::iterator::Signals> {
    signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])
        .context("installing SIGINT/SIGTERM handlers")
}

/// Prints where `who` listens and its `ready` line (which a detaching parent waits
/// for), then stops writing to stderr if detached.
pub(crate) fn announce(who: &str, ready: &str, addrs: Vec<String>) {
    for addr in addrs {
        println!("{who}: listening on {addr}");
        tracing::info!(%addr, "listening");
    }
    println!("{ready} (pid {})", std::process::id());
    let _ = std::io::stdout().flush();
    quiet_if_detached();
}

/// Waits for SIGINT or SIGTERM.
pub(crate) fn wait_for_stop(mut signals: signal_hook::iterator::Signals) {
    let signal = signals.forever().next();
    tracing::info!(signal, "shutting down");
}

/// Stops writing log lines to stderr once a detached server is ready (its parent,
/// and with it the terminal, is gone).
fn quiet_if_detached() {
    if std::env::var_os(DETACHED_ENV).is_some() {
        QUIET.store(true, Ordering::Relaxed);
    }
}

/// Starts this command again in the foreground, detached (a new session, no
/// terminal), and waits until it prints a line starting with `ready`.
pub(crate) fn detach(ready: &str) -> anyhow::Result<i32> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("finding the nf executable")?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.push("--foreground".into());
    let mut cmd = Command::new(exe);
    cmd.args(&args)
        .env(DETACHED_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: runs in the forked child before exec; setsid is async-signal-safe and
    // touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting the detached server")?;
    // Pass the child's stderr on while we are here; after we exit it has no terminal.
    let stderr = child.stderr.take().context("reading the server's errors")?;
    let errors = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
    let stdout = child.stdout.take().context("reading the server's output")?;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the server's output")?;
        println!("{line}");
        if line.starts_with(ready) {
            return Ok(0);
        }
    }
    let status = child.wait().context("waiting for the server")?;
    let _ = errors.join();
    bail!("the server stopped before it was ready ({status})");
}
