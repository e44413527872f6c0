//! Tree spawn: `clone COUNT ADDR…` hands a session on to other nodes, which hand it on
//! to theirs (XCPU's tree spawn, Xbootfs's peer-assisted distribution).
//!
//! 1. **Shape.** The addresses are split into `COUNT` groups as equal as possible, in
//!    order; each group's first node is a child of this one and gets `clone COUNT REST`
//!    for the rest of its group, so a tree of N nodes is about log_COUNT(N) deep.
//! 2. **What travels.** Per child, one forwarder thread connects for the session's
//!    user — over `tls:` as this node (its certificate); over `unix:` and `shm:` with
//!    the user's own rights ([`nf_sys::act_as`]: the socket file's permissions are
//!    checked as the user, and the child's kernel names the user as the peer), never
//!    the server's; plain `tcp:` only from a server that is not root (a root server
//!    refuses it at `clone`: the child would take the connection for root's) — makes a
//!    session there and replays what the session held at `clone`: `argv`, `env`
//!    (placed, rule 6), `exec`, the `dir` and `limits` set; then hands the child its
//!    part of the tree (`clone COUNT REST`), starts relaying the child's `tree` up
//!    ([`super::treeout`]), and sends every regular file of `fs/` (read with the user's
//!    rights, links not followed). From then on every create and
//!    write in `fs/`, every write of `argv` and `exec` and every `ctl` command (`exec`,
//!    `kill`, `close`, `wipe`, `dir`, `limits`) is queued to each child in order and
//!    applied there; `kill` goes down even where the job here has ended, the
//!    session's end, whatever ends it, wipes the children, and once the session is
//!    gone its connections to them close (a child that stopped answering holds no
//!    thread here). `env` travels as it was at
//!    `clone` only, so each node's can then be set on its own. Bytes are forwarded as
//!    they arrive (a node forwards chunk i while it
//!    receives chunk i + 1), so a file streams down the whole tree at once; the
//!    queues are bounded, which slows the uploader to the slowest branch.
//! 3. **Who may.** The receiving node checks the forwarding node's certificate (signed
//!    by the cluster's CA, marked as a node's: [`crate::access`]) and runs the session
//!    as the user under its own rules (the account must exist there; never root).
//! 4. **Faults.** A child that cannot be reached or fails a request is marked failed
//!    with the reason (also in `tree`, as `ADDR failed WHY`); what was queued for it is
//!    dropped, its session there is wiped, and its whole subtree is reported failed.
//!    The session here goes on.
//! 5. **`clones`.** Reading `/xcpu/N/clones` first waits until everything queued before
//!    the read has been applied at every node below (a barrier down the tree), then
//!    lists each node of the subtree: `ADDR SESSION` or `ADDR - failed: WHY`.
//! 6. **Places.** Where the session's `env` holds `NF_EXEC_RANK=R` (as `nf exec` writes
//!    it), each node of the tree gets its place in the list the first node was given:
//!    the child at position `i` of this node's list `NF_EXEC_RANK=R + 1 + i` and
//!    `NF_EXEC_NODE=ADDR`; so a client sets the first node's `env` only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use nf_ninep::LOpenFlags;
use nf_ninep_client::File;
use nf_ninep_server::{Creds, Monitor};

use super::treeout::{Branch as TreeBranch, TreeOut};
use nf_link::addr::{parse_addr, Addr};
use nf_link::tls::TlsFiles;
use nf_ninep_client::connect::{attach, ConnectError, ConnectOptions};
use nf_xcpu_client::session::RemoteSession;
use nf_xcpu_client::{PLACE_NODE, PLACE_RANK};

/// Operations queued per child. A write op carries up to one msize (1 MiB by
/// default), so this bounds a child's queue to about 16 MiB.
const QUEUE: usize = 16;

/// Bytes per forwarded chunk when replaying a file.
const CHUNK: usize = 1 << 20;

/// One change to apply at a child.
#[derive(Debug)]
pub enum Op {
    /// A file made in `fs/` with permission bits.
    Create {
        /// Its name.
        name: String,
        /// Its mode.
        mode: u32,
    },
    /// Bytes written to a file of `fs/`.
    Write {
        /// Its name.
        name: String,
        /// Where.
        offset: u64,
        /// What.
        data: Vec<u8>,
    },
    /// A file of `fs/` removed.
    Remove(String),
    /// A setting file (`argv`, `env`, `exec`) now holding this.
    Set(&'static str, String),
    /// A `ctl` command.
    Ctl(String),
    /// Everything before this has been applied: answer with the subtree's listing.
    Barrier(SyncSender<String>),
}

/// Where a child is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Connecting,
    Ready,
    Failed,
}

/// One child of this node in the tree.
struct Branch {
    addr: String,
    subtree: Vec<String>,
    tx: SyncSender<Op>,
    status: Arc<Monitor<Status>>,
    /// The connection to the child, once made (closed when the fan-out goes).
    link: Link,
}

/// A forwarder's connection, shared with the [`Fanout`] that closes it.
type Link = Arc<std::sync::Mutex<Option<nf_ninep_client::Client>>>;

/// Closes the connection in `link`, if one was made: every request waiting on it
/// (a relay's read, a forwarder's request to a child that stopped answering) ends.
fn close_link(link: &Link) {
    let held = link
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(c) = held.as_ref() {
        c.close();
    }
}

/// The session's children (see the module docs).
pub struct Fanout {
    branches: Vec<Branch>,
    /// `wipe` was queued to the children.
    wiped: AtomicBool,
}

/// How to reach the children.
#[derive(Clone, Debug)]
pub struct Reach {
    /// The session's user, to attach as.
    pub user: String,
    /// Whom local sockets (`unix:`, `shm:`) are connected as, on a server that is
    /// root: the session's user (rule 2). `None`: as the server (it is that user).
    pub local_as: Option<nf_sys::spawn::RunAs>,
    /// This node's certificate, for `tls:` children.
    pub tls: Option<TlsFiles>,
    /// The fan-out asked for.
    pub count: usize,
}

/// What the forwarder replays first: the session's settings and files.
pub struct Replay {
    /// `(file, value)` of the settings.
    pub settings: Vec<(&'static str, String)>,
    /// `ctl` lines that set `dir` and `limits`.
    pub ctl: Vec<String>,
    /// The upload directory.
    pub dir: PathBuf,
    /// The session's user: its files are read with its rights.
    pub creds: Creds,
}

/// Splits `addrs` into `count` groups in order (rule 1): (child, its subtree).
pub fn shape(addrs: &[String], count: usize) -> Vec<(String, Vec<String>)> {
    let count = count.max(1).min(addrs.len());
    let mut out = Vec::with_capacity(count);
    let mut start = 0;
    for g in 0..count {
        let len = addrs.len() / count + usize::from(g < addrs.len() % count);
        let group = &addrs[start..start + len];
        out.push((group[0].clone(), group[1..].to_vec()));
        start += len;
    }
    out
}

impl Fanout {
    /// Starts one forwarder per child of `addrs` (rule 2), each relaying its child's
    /// output and ends into `tree` ([`super::treeout`]).
    pub fn start(addrs: &[String], reach: &Reach, replay: &Arc<Replay>, tree: &TreeOut) -> Fanout {
        let mut offset = 0;
        let branches = shape(addrs, reach.count)
            .into_iter()
            .map(|(addr, subtree)| {
                let (tx, rx) = sync_channel(QUEUE);
                let status = Arc::new(Monitor::new(Status::Connecting));
                let link = Link::default();
                let job = Forwarder {
                    addr: addr.clone(),
                    subtree: subtree.clone(),
                    offset,
                    reach: reach.clone(),
                    status: Arc::clone(&status),
                    replay: Arc::clone(replay),
                    link: Arc::clone(&link),
                };
                offset += 1 + subtree.len();
                let part = tree.branch(&addr, &subtree);
                let spawned =
                    super::server_thread(format!("xcpu-fwd-{addr}"), move || job.run(rx, part));
                if let Err(e) = spawned {
                    // The part went with the closure: its nodes are reported failed.
                    status.update(|s| *s = Status::Failed);
                    tracing::warn!("xcpu: tree spawn: no thread to forward to {addr}: {e}");
                }
                Branch {
                    addr,
                    subtree,
                    tx,
                    status,
                    link,
                }
            })
            .collect();
        Fanout {
            branches,
            wiped: AtomicBool::new(false),
        }
    }

    /// Queues `op` to every child that has not failed (`op` is cloned per child).
    pub fn send(&self, op: impl Fn() -> Op) {
        for b in &self.branches {
            if *b.status.lock() != Status::Failed {
                let _ = b.tx.send(op());
            }
        }
    }

    /// Queues `wipe` to every child once: waiting for room in their queues when
    /// `wait` (a user's command), else only where there is room (the session's end,
    /// which must not wait; a child left out ends when its connection goes).
    pub fn wipe(&self, wait: bool) {
        if self.wiped.swap(true, Ordering::AcqRel) {
            return;
        }
        for b in &self.branches {
            if *b.status.lock() == Status::Failed {
                continue;
            }
            let op = Op::Ctl("wipe".into());
            let _ = if wait {
                b.tx.send(op).map_err(|_| ())
            } else {
                b.tx.try_send(op).map_err(|_| ())
            };
        }
    }

    /// Rule 5: the subtree's listing once everything queued has been applied.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        let answers: Vec<_> = self
            .branches
            .iter()
            .map(|b| {
                let (tx, rx) = sync_channel(1);
                let sent = b.tx.send(Op::Barrier(tx)).is_ok();
                (b, sent.then_some(rx))
            })
            .collect();
        for (b, rx) in answers {
            match rx.and_then(|rx| rx.recv().ok()) {
                Some(text) => out.push_str(&text),
                None => out.push_str(&failed_lines(b, "its forwarder stopped")),
            }
        }
        out
    }
}

/// The session is gone: its children's connections close, which ends their relays and
/// any request a forwarder waits on (a child that stopped answering cannot hold a
/// thread here for ever); each child's session then ends as any unheld one does.
impl Drop for Fanout {
    fn drop(&mut self) {
        for b in &self.branches {
            close_link(&b.link);
        }
    }
}

/// `ADDR - failed: WHY` for a child and its whole subtree.
fn failed_lines(b: &Branch, why: &str) -> String {
    failed_subtree(&b.addr, &b.subtree, why)
}

fn failed_subtree(addr: &str, subtree: &[String], why: &str) -> String {
    let mut out = format!("{addr} - failed: {why}\n");
    for s in subtree {
        out.push_str(&format!("{s} - failed: not reached ({addr} failed)\n"));
    }
    out
}

/// One child's forwarder thread.
struct Forwarder {
    addr: String,
    subtree: Vec<String>,
    /// The child's place in the list given to `clone` (for its rank, rule 6).
    offset: usize,
    reach: Reach,
    status: Arc<Monitor<Status>>,
    replay: Arc<Replay>,
    link: Link,
}

impl Forwarder {
    fn run(self, rx: Receiver<Op>, part: TreeBranch) {
        let session = match self.connect() {
            Ok(s) => s,
            Err(why) => {
                part.unreached(&why);
                return self.fail_and_drain(why, rx);
            }
        };
        self.forward(&session, rx, part);
        // The fan-out is gone (its queue closed): so is the connection, and with it
        // the relay's read.
        close_link(&self.link);
    }

    fn forward(&self, session: &RemoteSession, rx: Receiver<Op>, part: TreeBranch) {
        let mut open: HashMap<String, File> = HashMap::new();
        let id = session.id();
        self.status.update(|s| *s = Status::Ready);
        let failures = part.watcher();
        if let Err(why) = self.start_child(session, &mut open, part) {
            failures.child_failed(&why);
            let _ = session.ctl("wipe");
            return self.fail_and_drain(why, rx);
        }
        let mut failure: Option<String> = None;
        for op in rx {
            if let Op::Barrier(answer) = op {
                if let Some(why) = &failure {
                    let _ = answer.send(failed_subtree(&self.addr, &self.subtree, why));
                    continue;
                }
                let listing = session
                    .read("clones")
                    .map_err(|e| e.to_string())
                    .map(|sub| format!("{} {id}\n{sub}", self.addr));
                let text = match listing {
                    Ok(t) => t,
                    Err(why) => {
                        self.status.update(|s| *s = Status::Failed);
                        let text = failed_subtree(&self.addr, &self.subtree, &why);
                        failures.child_failed(&why);
                        failure = Some(why);
                        text
                    }
                };
                let _ = answer.send(text);
                continue;
            }
            if failure.is_some() {
                continue;
            }
            if let Err(why) = apply(session, &mut open, op) {
                tracing::warn!(child = %self.addr, "xcpu: tree spawn: {why}; its subtree is cut off");
                self.status.update(|s| *s = Status::Failed);
                failures.child_failed(&why);
                // Nothing of the job stays there; its end reaches the relay.
                let _ = session.ctl("wipe");
                failure = Some(why);
            }
        }
    }

    /// Sets the child's session up as this one (rule 2): settings, its own `clone`,
    /// the relay of its `tree`, then the files.
    fn start_child(
        &self,
        session: &RemoteSession,
        open: &mut HashMap<String, File>,
        part: TreeBranch,
    ) -> Result<(), String> {
        self.replay_settings(session, open)?;
        if !self.subtree.is_empty() {
            let line = format!("clone {} {}", self.reach.count, self.subtree.join(" "));
            session.ctl(&line).map_err(|e| e.to_string())?;
        }
        let tree = session
            .open_file("tree", LOpenFlags::RDONLY)
            .map_err(|e| format!("opening its tree output: {e}"))?;
        super::server_thread(format!("xcpu-relay-{}", self.addr), move || {
            part.relay(tree)
        })
        .map_err(|e| format!("no thread to relay its output: {e}"))?;
        self.replay_files(session, open)
    }

    fn connect(&self) -> Result<RemoteSession, String> {
        let addr = parse_addr(&self.addr).map_err(|e| e.to_string())?;
        let opts = ConnectOptions {
            user: self.reach.user.clone(),
            tls: self.reach.tls.clone(),
            // Connecting is bounded (10 s), replies are not: the relay's read of `tree`
            // waits as long as the jobs run, and `clones` as long as the subtree
            // takes to apply what was queued.
            timeout: None,
            ..ConnectOptions::default()
        };
        let local = matches!(addr, Addr::Unix(_) | Addr::Shm(_));
        let root = match (&self.reach.local_as, local) {
            (Some(user), true) => nf_sys::act_as::on_this_thread(user, || attach(&addr, &opts))
                .map_err(|e| format!("connecting as {}: {e}", self.reach.user))?,
            _ => attach(&addr, &opts),
        }
        .map_err(|e| match e {
            // The library's hint names the client commands' flags; a node presents the
            // certificate it serves with.
            ConnectError::NoCertificate { addr } => format!(
                "connecting: {addr} needs a certificate and this node has none to present: \
                 start nf serve with --tls-cert FILE --tls-key FILE --tls-client-ca FILE"
            ),
            e if e.names_address() => e.to_string(),
            e => format!("connecting: {e}"),
        })?;
        *self
            .link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(root.client().clone());
        RemoteSession::open(root).map_err(|e| e.to_string())
    }

    /// The session's settings and `ctl` lines as they were at `clone`; `env` placed
    /// for the child (rule 6).
    fn replay_settings(
        &self,
        session: &RemoteSession,
        open: &mut HashMap<String, File>,
    ) -> Result<(), String> {
        for (file, value) in &self.replay.settings {
            let value = if *file == "env" {
                placed_env(value, self.offset, &self.addr)
            } else {
                value.clone()
            };
            if !value.is_empty() {
                apply(session, open, Op::Set(file, value))?;
            }
        }
        for line in &self.replay.ctl {
            apply(session, open, Op::Ctl(line.clone()))?;
        }
        Ok(())
    }

    /// Every regular file of the upload directory as it is now.
    fn replay_files(
        &self,
        session: &RemoteSession,
        open: &mut HashMap<String, File>,
    ) -> Result<(), String> {
        // The directory is the user's: what is in it is read with the user's rights,
        // so nothing linked into it can show this node's files to the user.
        self.replay
            .creds
            .assume()
            .map_err(|e| format!("acting as the user: errno {}", e.ecode))?;
        let files = self.replay_dir(session, open);
        Creds::server()
            .assume()
            .map_err(|e| format!("acting as the server: errno {}", e.ecode))?;
        files
    }

    fn replay_dir(
        &self,
        session: &RemoteSession,
        open: &mut HashMap<String, File>,
    ) -> Result<(), String> {
        for entry in std::fs::read_dir(&self.replay.dir).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            replay_file(session, open, &entry.path(), &name)?;
        }
        Ok(())
    }

    /// Rule 4: marks the child failed and drops what comes, answering barriers.
    fn fail_and_drain(&self, why: String, rx: Receiver<Op>) {
        tracing::warn!(child = %self.addr, "xcpu: tree spawn: {why}; its subtree is cut off");
        self.status.update(|s| *s = Status::Failed);
        for op in rx {
            if let Op::Barrier(answer) = op {
                let _ = answer.send(failed_subtree(&self.addr, &self.subtree, &why));
            }
        }
    }
}

/// `env` for the child at `offset` of the list given to `clone` (rule 6): where it
/// holds [`PLACE_RANK`], the child's rank (this node's + 1 + `offset`) and its address
/// as [`PLACE_NODE`]; else unchanged.
pub fn placed_env(env: &str, offset: usize, addr: &str) -> String {
    let rank_of = |line: &str| {
        line.strip_prefix(PLACE_RANK)?
            .strip_prefix('=')?
            .trim()
            .parse::<usize>()
            .ok()
    };
    let Some(mine) = env.lines().find_map(rank_of) else {
        return env.to_string();
    };
    let placed = |line: &&str| {
        let name = line.split('=').next().unwrap_or_default();
        name != PLACE_RANK && name != PLACE_NODE
    };
    let mut out: String = env.lines().filter(placed).flat_map(|l| [l, "\n"]).collect();
    out.push_str(&format!(
        "{PLACE_RANK}={}\n{PLACE_NODE}={addr}\n",
        mine + 1 + offset
    ));
    out
}

/// Sends a file of the upload directory as it is now.
fn replay_file(
    session: &RemoteSession,
    open: &mut HashMap<String, File>,
    path: &Path,
    name: &str,
) -> Result<(), String> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // The job may have turned a name into a link meanwhile: open without following,
    // then judge what was opened.
    let nofollow = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nofollow.bits() as i32)
        .open(path)
    else {
        return Ok(());
    };
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Ok(());
    }
    let mode = meta.permissions().mode() & 0o777;
    apply(
        session,
        open,
        Op::Create {
            name: name.into(),
            mode,
        },
    )?;
    let mut offset = 0u64;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        let data = buf[..n].to_vec();
        apply(
            session,
            open,
            Op::Write {
                name: name.into(),
                offset,
                data,
            },
        )?;
        offset += n as u64;
    }
}

/// Applies one operation at the child.
fn apply(session: &RemoteSession, open: &mut HashMap<String, File>, op: Op) -> Result<(), String> {
    match op {
        Op::Create { name, mode } => {
            let f = session
                .create_upload(&name, mode)
                .map_err(|e| e.to_string())?;
            open.insert(name, f);
        }
        Op::Write { name, offset, data } => {
            if !open.contains_key(&name) {
                let f = session
                    .open_file(&format!("fs/{name}"), LOpenFlags::WRONLY)
                    .map_err(|e| e.to_string())?;
                open.insert(name.clone(), f);
            }
            open[&name]
                .write_all_at(&data, offset)
                .map_err(|e| format!("writing fs/{name}: {e}"))?;
        }
        Op::Remove(name) => {
            open.remove(&name);
            session.remove_upload(&name).map_err(|e| e.to_string())?;
        }
        Op::Set(file, value) => session.set(file, &value).map_err(|e| e.to_string())?,
        Op::Ctl(line) => {
            // Files this forwarder holds open for writing would make exec fail with
            // ETXTBSY there: everything before a command is written by now.
            open.clear();
            session.ctl(&line).map_err(|e| e.to_string())?;
        }
        Op::Barrier(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn children_are_placed_by_their_position_in_the_list() {
        let env = "A=1\nNF_EXEC_RANK=4\nNF_EXEC_SIZE=9\nNF_EXEC_NODE=tcp:me:1\n";
        assert_eq!(
            placed_env(env, 2, "tcp:c:1"),
            "A=1\nNF_EXEC_SIZE=9\nNF_EXEC_RANK=7\nNF_EXEC_NODE=tcp:c:1\n"
        );
        assert_eq!(
            placed_env("A=1\n", 2, "tcp:c:1"),
            "A=1\n",
            "no rank: unchanged"
        );
    }

    #[test]
    fn groups_are_even_and_in_order() {
        let s = shape(&names(7), 3);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], ("n0".into(), vec!["n1".into(), "n2".into()]));
        assert_eq!(s[1], ("n3".into(), vec!["n4".into()]));
        assert_eq!(s[2], ("n5".into(), vec!["n6".into()]));
        assert_eq!(shape(&names(2), 8).len(), 2, "no more children than nodes");
        assert_eq!(shape(&names(3), 0).len(), 1, "a count of 0 is a chain");
    }

    /// Depth of the tree `shape` makes: about log_k(n).
    fn depth(n: usize, k: usize) -> usize {
        if n == 0 {
            return 0;
        }
        1 + shape(&names(n), k)
            .iter()
            .map(|(_, sub)| depth(sub.len(), k))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn depth_grows_as_log_n() {
        assert_eq!(depth(63, 2), 6);
        assert_eq!(depth(64, 4), 3);
        assert!(depth(1000, 8) <= 5);
    }
}
