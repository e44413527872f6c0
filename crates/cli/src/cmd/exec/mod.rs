//! `nf exec`: run a program on many nodes through their `/xcpu` (XCPU's `xrx`).
//!
//! Steps:
//!
//! 1. Parse the node list (`ADDR,ADDR…` or `@FILE`, one address per line) and check
//!    every local file before connecting anywhere.
//! 2. For every node at once (a thread each): connect, read `/xcpu/arch`, pick the
//!    binary (`--binary ARCH=PATH`, else PROG), and make `-n` sessions; each uploads
//!    the binary and `--file`s into its `fs/`, writes `argv`, `env` (`NF_EXEC_RANK`,
//!    `NF_EXEC_SIZE`, `NF_EXEC_NODE`, `--env`) and opens `stdout`, `stderr`, `wait`.
//! 3. If any node failed, stop (every session made is wiped; the sessions go when this
//!    process lets go of them) and report each failing node, unless `--keep-going`,
//!    which runs on the rest.
//! 4. Start every session (`exec`), forward stdin to the sessions `--stdin` names, print
//!    output lines tagged `NODE: ` (`NODE#K: ` with `-n`), and turn Ctrl-C into
//!    `kill INT` (a second one: `kill KILL`).
//!
//! With more nodes than `--fanout` (and one copy per node, one binary), steps 2 to 5
//! go through a tree instead ([`tree`]): only the first node is connected to and
//! uploaded to; it hands everything on (`ctl clone`), and the output and exits of every
//! node come back up the same tree.
//!
//! 5. Exit with the first non-zero status in rank order, naming its node (signals:
//!    128 + SIG); 0 when every copy exited 0.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use anyhow::{bail, Context};
use clap::Args;
use nf_link::addr::{parse_addr, Addr};
use nf_ninep::LOpenFlags;
use nf_ninep_client::connect::{connect, ConnectError};
use nf_node::xcpu::remote::{RemoteError, RemoteExit, RemoteSession};

use super::files::ConnArgs;
use super::Usage;

mod tree;

/// Arguments of `nf exec`.
#[derive(Args, Debug)]
pub struct ExecArgs {
    /// Nodes: ADDR[,ADDR…] (tls:HOST:PORT, tcp:HOST:PORT, unix:PATH), or @FILE with
    /// one address per line. ADDR:/PATH runs in that part of a gateway (nf gateway):
    /// gw:/views/gpu places each copy on the least busy node of the view.
    pub nodes: String,
    /// The program (a local file, uploaded to every node, when it holds a /; else a
    /// command on the node's PATH), then its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
    /// Copies of the program on each node.
    #[arg(short = 'n', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub per_node: u32,
    /// More local files to upload next to the program (repeatable).
    #[arg(long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The binary for nodes whose /xcpu/arch is ARCH (repeatable), e.g.
    /// linux/aarch64=./prog.arm; nodes of other architectures are an error.
    #[arg(long = "binary", value_name = "ARCH=PATH")]
    pub binaries: Vec<String>,
    /// Extra environment, NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Which copies get this process's standard input: a rank, `all` or `none`.
    #[arg(long, default_value = "0")]
    pub stdin: String,
    /// Run on the nodes that started when some did not (default: stop everywhere).
    #[arg(long)]
    pub keep_going: bool,
    /// Print output lines as they are, without the NODE: tag.
    #[arg(long)]
    pub no_tag: bool,
    /// Tree spawn: upload to the first node only, which hands the job on to K nodes,
    /// each to K more, streaming the files down the tree; 0 uploads to every node
    /// from here. Used when there are more than K nodes (and not with -n or --binary).
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub fanout: usize,
    /// How to reach the nodes.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Which ranks get stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StdinTo {
    None,
    All,
    Rank(usize),
}

/// One copy of the program, set up and not yet started.
struct Copy {
    rank: usize,
    tag: String,
    session: Arc<RemoteSession>,
}

/// What one node's set-up gave.
struct NodeSetup {
    node: String,
    result: Result<Vec<Copy>, String>,
}

fn parse_nodes(spec: &str) -> anyhow::Result<Vec<String>> {
    let text = match spec.strip_prefix('@') {
        Some(file) => std::fs::read_to_string(file)
            .with_context(|| format!("reading the node list {file}"))?,
        None => spec.replace(',', "\n"),
    };
    let nodes: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if nodes.is_empty() {
        return Err(Usage(format!("no nodes in {spec:?}")).into());
    }
    for n in &nodes {
        node_target(n).map_err(|e| Usage(format!("node {n:?}: {e}")))?;
    }
    Ok(nodes)
}

/// A node's address and the tree to attach to there: `ADDR` (the root) or
/// `ADDR:/path` — a gateway's scope, such as `gw:/views/gpu` or `gw:/n/node3`, whose
/// `xcpu/clone` places the job.
fn node_target(spec: &str) -> Result<(Addr, String), nf_link::addr::AddrError> {
    match nf_link::addr::parse_target(spec) {
        Ok(t) if !spec.starts_with([':', '/']) => Ok((t.addr, t.path)),
        _ => parse_addr(spec).map(|addr| (addr, String::new())),
    }
}

fn parse_binaries(list: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    list.iter()
        .map(|b| {
            let (arch, path) = b
                .split_once('=')
                .ok_or_else(|| Usage(format!("--binary {b:?}: use ARCH=PATH")))?;
            Ok((arch.to_string(), PathBuf::from(path)))
        })
        .collect()
}

fn check_file(path: &Path) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Usage(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Usage(format!("{} is not a regular file", path.display())).into());
    }
    Ok(())
}

/// The name a file has in `fs/`.
fn base_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "prog".into(), |n| n.to_string_lossy().into_owned())
}

/// A node's short name for tags: the host of `tls:HOST:PORT`, or the path's file name.
fn short_name(node: &str) -> String {
    match parse_addr(node) {
        Ok(Addr::Tls(h) | Addr::Tcp(h)) => h.rsplit_once(':').map_or(h.clone(), |(host, _)| {
            host.trim_matches(['[', ']']).to_string()
        }),
        _ => node.to_string(),
    }
}

/// Everything a node's set-up needs, shared by the set-up threads.
struct Plan {
    program: String,
    args: Vec<String>,
    upload: bool,
    binaries: Vec<(String, PathBuf)>,
    files: Vec<PathBuf>,
    env: Vec<String>,
    per_node: usize,
    size: usize,
}

impl Plan {
    /// Connects to `node` and sets up its copies, ranks from `first`.
    fn setup(&self, conn: &ConnArgs, node: &str, first: usize) -> Result<Vec<Copy>, String> {
        let (addr, aname) = node_target(node).map_err(|e| e.to_string())?;
        let opts = conn.options();
        let short = short_name(node);
        let mut copies = Vec::new();
        for k in 0..self.per_node {
            let root = connect(&addr, &opts)
                .and_then(|c| Ok(c.attach(&opts.user, &aname)?))
                .map_err(connecting)?;
            let binary = self.binary_for(&root)?;
            let session = RemoteSession::open(root).map_err(|e| e.to_string())?;
            let rank = first + k;
            self.stage(&session, binary).map_err(|e| e.to_string())?;
            session
                .set("env", &self.env_text(rank, node))
                .map_err(|e| e.to_string())?;
            // Through a gateway, the member the copy was placed on names it.
            let placed = (!aname.is_empty()).then(|| session.placed_on()).flatten();
            let tag = match (placed, self.per_node > 1) {
                (Some(member), true) => format!("{member}#{k}"),
                (Some(member), false) => member,
                (None, true) => format!("{short}#{k}"),
                (None, false) => short.clone(),
            };
            copies.push(Copy {
                rank,
                tag,
                session: Arc::new(session),
            });
        }
        Ok(copies)
    }

    /// Uploads the program (`binary`, else PROG when it is a local file) and the
    /// `--file`s into `session`, and writes its `argv` and `exec`.
    fn stage(&self, session: &RemoteSession, binary: Option<PathBuf>) -> Result<(), RemoteError> {
        let exec = match binary.or_else(|| self.local_program()) {
            Some(path) => {
                let name = base_name(&path);
                session.upload(&path, &name)?;
                name
            }
            None => self.program.clone(),
        };
        for f in &self.files {
            session.upload(f, &base_name(f))?;
        }
        let mut argv = vec![exec.clone()];
        argv.extend(self.args.iter().cloned());
        session.set("argv", &shell_words::join(&argv))?;
        session.set("exec", &exec)
    }

    fn local_program(&self) -> Option<PathBuf> {
        self.upload.then(|| PathBuf::from(&self.program))
    }

    /// The `--binary` for the node's architecture, if any were given.
    fn binary_for(&self, root: &nf_ninep_client::Root) -> Result<Option<PathBuf>, String> {
        if self.binaries.is_empty() {
            return Ok(None);
        }
        let arch = RemoteSession::arch(root).map_err(|e| e.to_string())?;
        match self.binaries.iter().find(|(a, _)| *a == arch) {
            Some((_, p)) => Ok(Some(p.clone())),
            None => Err(format!(
                "no --binary for its architecture {arch} (given: {})",
                self.binaries
                    .iter()
                    .map(|(a, _)| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn env_text(&self, rank: usize, node: &str) -> String {
        let mut text = format!(
            "NF_EXEC_RANK={rank}\nNF_EXEC_SIZE={}\nNF_EXEC_NODE={node}\n",
            self.size
        );
        for e in &self.env {
            text.push_str(e);
            text.push('\n');
        }
        text
    }
}

/// Runs `nf exec`.
pub fn main(a: ExecArgs) -> anyhow::Result<i32> {
    let nodes = parse_nodes(&a.nodes)?;
    let binaries = parse_binaries(&a.binaries)?;
    let stdin_to = match a.stdin.as_str() {
        "none" => StdinTo::None,
        "all" => StdinTo::All,
        r => StdinTo::Rank(
            r.parse()
                .map_err(|_| Usage(format!("--stdin {r:?}: use a rank, all or none")))?,
        ),
    };
    for e in &a.env {
        if !e.contains('=') || e.starts_with('=') || e.contains('\n') {
            bail!(Usage(format!("--env {e:?}: use NAME=VALUE on one line")));
        }
    }
    let (program, args) = a.command.split_first().expect("clap requires a command");
    let upload = program.contains('/') && binaries.is_empty();
    if upload {
        check_file(Path::new(program))?;
    }
    for (_, b) in &binaries {
        check_file(b)?;
    }
    for f in &a.files {
        check_file(f)?;
    }
    let per_node = a.per_node as usize;
    let plan = Arc::new(Plan {
        program: program.clone(),
        args: args.to_vec(),
        upload,
        binaries,
        files: a.files.clone(),
        env: a.env.clone(),
        per_node,
        size: nodes.len() * per_node,
    });

    let plain = nodes
        .iter()
        .all(|n| node_target(n).is_ok_and(|(_, aname)| aname.is_empty()));
    if a.fanout > 0 && nodes.len() > a.fanout && per_node == 1 && plan.binaries.is_empty() && plain
    {
        let tree = tree::TreeRun {
            plan: &plan,
            conn: &a.conn,
            nodes: &nodes,
            fanout: a.fanout,
            keep_going: a.keep_going,
            stdin_to,
            tag: !a.no_tag,
        };
        return tree.run();
    }
    let setups = set_up(&plan, &a.conn, &nodes);
    let mut copies = Vec::new();
    let mut failed = Vec::new();
    for s in setups {
        match s.result {
            Ok(c) => copies.extend(c),
            Err(why) => failed.push(format!("{}: {why}", s.node)),
        }
    }
    for f in &failed {
        eprintln!("nf exec: {f}");
    }
    if !failed.is_empty() && (!a.keep_going || copies.is_empty()) {
        for c in &copies {
            let _ = c.session.ctl("wipe");
        }
        bail!(
            "{} of {} nodes could not start the job (named above); nothing was run{}",
            failed.len(),
            nodes.len(),
            if a.keep_going {
                ""
            } else {
                " (--keep-going runs on the rest)"
            }
        );
    }
    copies.sort_by_key(|c| c.rank);
    run(copies, stdin_to, !a.no_tag)
}

/// Step 2, every node at once.
fn set_up(plan: &Arc<Plan>, conn: &ConnArgs, nodes: &[String]) -> Vec<NodeSetup> {
    let handles: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let plan = Arc::clone(plan);
            let conn = conn.clone();
            let node = node.clone();
            thread::spawn(move || {
                let result = plan.setup(&conn, &node, i * plan.per_node);
                NodeSetup { node, result }
            })
        })
        .collect();
    handles
        .into_iter()
        .zip(nodes)
        .map(|(h, node)| {
            h.join().unwrap_or_else(|_| NodeSetup {
                node: node.clone(),
                result: Err("its set-up thread panicked".into()),
            })
        })
        .collect()
}

/// Steps 4 and 5.
fn run(copies: Vec<Copy>, stdin_to: StdinTo, tag: bool) -> anyhow::Result<i32> {
    let out = Arc::new(Mutex::new(()));
    let mut waits = Vec::new();
    let mut pumps = Vec::new();
    let mut stdins = Vec::new();
    for c in &copies {
        let wait = c.session.open_file("wait", LOpenFlags::RDONLY)?;
        for (name, to_err) in [("stdout", false), ("stderr", true)] {
            let f = c.session.open_file(name, LOpenFlags::RDONLY)?;
            let prefix = if tag {
                format!("{}: ", c.tag)
            } else {
                String::new()
            };
            let out = Arc::clone(&out);
            pumps.push(thread::spawn(move || copy_lines(f, &prefix, to_err, &out)));
        }
        let gets_stdin = match stdin_to {
            StdinTo::All => true,
            StdinTo::None => false,
            StdinTo::Rank(r) => r == c.rank,
        };
        let stdin = c.session.open_file("stdin", LOpenFlags::WRONLY)?;
        if gets_stdin {
            stdins.push(stdin);
        }
        waits.push(wait);
    }
    // Watching before anything starts: a Ctrl-C from here on reaches the jobs.
    let sessions: Vec<&RemoteSession> = copies.iter().map(|c| &*c.session).collect();
    let interrupts = watch_interrupts(&sessions)?;
    for c in &copies {
        c.session
            .start()
            .with_context(|| format!("starting the job on {}", c.tag))?;
    }
    if !stdins.is_empty() {
        thread::spawn(move || forward_stdin(stdins));
    }
    let mut first_failure: Option<(usize, RemoteExit)> = None;
    let mut lost = Vec::new();
    for (c, wait) in copies.iter().zip(waits) {
        match RemoteSession::read_wait(wait) {
            Ok(RemoteExit::Code(0)) => {}
            Ok(e) => {
                if first_failure.is_none() {
                    first_failure = Some((c.rank, e));
                }
                eprintln!("nf exec: {} (rank {}): {e}", c.tag, c.rank);
            }
            Err(e) => lost.push(format!("{} (rank {}): {e}", c.tag, c.rank)),
        }
    }
    for p in pumps {
        let _ = p.join();
    }
    drop(interrupts);
    if !lost.is_empty() {
        for l in &lost {
            eprintln!("nf exec: lost {l}");
        }
        bail!(
            "{} copies ended without an exit status (named above)",
            lost.len()
        );
    }
    Ok(first_failure.map_or(0, |(_, e)| e.status()))
}

/// Prints `f`'s lines with `prefix`, each line whole.
fn copy_lines(f: nf_ninep_client::File, prefix: &str, to_err: bool, lock: &Mutex<()>) {
    let mut reader = std::io::BufReader::new(f);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let _guard = lock.lock();
                let mut text = prefix.as_bytes().to_vec();
                text.extend_from_slice(&line);
                if !line.ends_with(b"\n") {
                    text.push(b'\n');
                }
                let _ = if to_err {
                    std::io::stderr().lock().write_all(&text)
                } else {
                    std::io::stdout().lock().write_all(&text)
                };
            }
        }
    }
}

/// Copies this process's stdin to every file of `to`, then closes them.
fn forward_stdin(mut to: Vec<nf_ninep_client::File>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut stdin = std::io::stdin().lock();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        to.retain_mut(|f| f.write_all(&buf[..n]).is_ok());
        if to.is_empty() {
            break;
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM become `kill INT` / `kill TERM` on every copy; a
/// second one `kill KILL`. Stops watching when dropped.
fn watch_interrupts(sessions: &[&RemoteSession]) -> anyhow::Result<impl Drop> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("catching SIGINT and SIGTERM")?;
    let handle = signals.handle();
    let ctls: Vec<_> = sessions
        .iter()
        .map(|s| s.open_file("ctl", LOpenFlags::WRONLY))
        .collect::<Result<_, RemoteError>>()?;
    let seen = AtomicUsize::new(0);
    thread::spawn(move || {
        for sig in signals.forever() {
            let word = match (seen.fetch_add(1, Ordering::Relaxed), sig) {
                (0, SIGINT) => "kill INT",
                (0, _) => "kill TERM",
                _ => "kill KILL",
            };
            for ctl in &ctls {
                let _ = ctl.write_all_at(word.as_bytes(), 0);
            }
        }
    });
    Ok(StopWatching(handle))
}

struct StopWatching(signal_hook::iterator::Handle);

impl Drop for StopWatching {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A connection's failure as a node's line: the error alone where it names the address
/// and cause already, else prefixed with what failed.
fn connecting(e: ConnectError) -> String {
    if e.names_address() {
        e.to_string()
    } else {
        format!("connecting: {e}")
    }
}
