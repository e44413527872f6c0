//! `nf ls | stat | cat | write | cp | tail | rm | mkdir`: files on a node server over
//! 9P, without mounting anything.
//!
//! Every path is `ADDR:/path` (`unix:PATH:/p`, `tcp:HOST:PORT:/p`) or `:/path` for the
//! local server (`$NF_ADDR`, else the default socket of `nf serve`). Data moves in
//! msize-sized chunks as it comes, so `cat` of a stream or a pipe prints while it runs
//! and `producer | nf write :/pipe/p` feeds a pipe as the producer writes.

use std::collections::VecDeque;
use std::fs::File as LocalFile;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use nf_link::addr::{is_remote, parse_target, Target};
use nf_link::tls::TlsFiles;
use nf_ninep::errno::{EACCES, EAGAIN};
use nf_ninep::{LOpenFlags, Message, Rmessage, Tread};
use nf_ninep_client::connect::{attach, ConnectError, ConnectOptions};
use nf_ninep_client::{base_name, ClientError, Root};

use super::progress::{copy_bar, Counted};

/// How to reach the server (shared by the file commands).
#[derive(Args, Debug, Clone)]
pub struct ConnArgs {
    /// User to attach as [default: the account of this process's uid, else $USER].
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Largest 9P message to ask for, in bytes.
    #[arg(long, global = true, default_value_t = nf_ninep::DEFAULT_MAX_MSIZE)]
    pub msize: u32,
    /// Seconds to wait for the server to connect and answer each request (exit status
    /// 4 past it) [default: 10 for connecting and attaching; replies as long as they
    /// take, since a pipe or a followed log legitimately waits].
    #[arg(long, global = true, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Client certificate (PEM) for tls: addresses; its common name is the user.
    #[arg(long, global = true, value_name = "PEM", requires_all = ["key", "ca"])]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, global = true, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// CA certificate that signs the server's certificate (PEM).
    #[arg(long, global = true, value_name = "PEM", requires = "cert")]
    pub ca: Option<PathBuf>,
}

impl ConnArgs {
    /// The connection options these arguments give.
    pub fn options(&self) -> ConnectOptions {
        let tls = match (&self.cert, &self.key, &self.ca) {
            (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
            }),
            _ => None,
        };
        ConnectOptions {
            msize: self.msize,
            ..ConnectOptions::new(
                self.user.clone(),
                tls,
                self.timeout.map(std::time::Duration::from_secs),
            )
        }
    }

    /// The target named by `arg`, attached.
    fn open(&self, arg: &str) -> anyhow::Result<(Root, Target)> {
        let target = parse_target(arg)?;
        let opts = self.options();
        let root = attach(&target.addr, &opts).map_err(|e| {
            let refused = matches!(&e, ConnectError::Client(c) if c.errno() == Some(EACCES));
            // Errors that name the address already say everything (once); the rest
            // get it.
            let named = e.names_address();
            let what = format!("reaching the 9P server {}", target.addr);
            let err = anyhow::Error::new(e);
            let err = if named { err } else { err.context(what) };
            if refused {
                err.context(format!(
                    "the server refused to let this process attach as user {:?}: over a local \
                     socket only your own user is accepted (root may attach as anyone), over \
                     TLS only your certificate's; drop --user or name yourself",
                    opts.user
                ))
            } else {
                err
            }
        })?;
        Ok((root, target))
    }
}

/// Arguments of `nf ls`.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// Directories (or files) to list.
    #[arg(required = true, value_name = "ADDR:/PATH")]
    pub paths: Vec<String>,
    /// Long listing: mode, size, name.
    #[arg(short, long)]
    pub long: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `nf stat`, `nf cat`, `nf rm`, `nf mkdir`.
#[derive(Args, Debug)]
pub struct PathsArgs {
    /// The files.
    #[arg(required = true, value_name = "ADDR:/PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `nf stat`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// The files.
    #[arg(required = true, value_name = "ADDR:/PATH")]
    pub paths: Vec<String>,
    /// Print mtime as seconds.nanoseconds since the epoch instead of local time.
    #[arg(long)]
    pub epoch: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `nf write`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The file (created if missing).
    #[arg(value_name = "ADDR:/PATH")]
    pub path: String,
    /// Text to write, joined by spaces, with a newline; without it, standard input.
    pub text: Vec<String>,
    /// Append instead of replacing the content.
    #[arg(short, long)]
    pub append: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `nf cp`.
#[derive(Args, Debug)]
pub struct CpArgs {
    /// Source: a local file or ADDR:/PATH.
    pub from: String,
    /// Destination: a local file or ADDR:/PATH (created or replaced).
    pub to: String,
    /// Copy a directory and everything in it (to, from or between servers; 8 files at
    /// once).
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// No progress bar (one is shown on a terminal for copies of 8 MiB and more).
    #[arg(short, long)]
    pub quiet: bool,
    /// Messages in flight per file copied: reads from a server (read-ahead, up to the
    /// size the file had) and writes to one (write-behind, to regular files whose
    /// writes land at their offset), both at once between two servers; streams go one
    /// message at a time; 1: always.
    #[arg(long, default_value_t = nf_ninep_client::READ_AHEAD,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub depth: usize,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `nf tail`.
#[derive(Args, Debug)]
pub struct TailArgs {
    /// The file or stream.
    #[arg(value_name = "ADDR:/PATH")]
    pub path: String,
    /// Lines of what is there already to print.
    #[arg(short = 'n', long, default_value_t = 10)]
    pub lines: usize,
    /// Then follow: print what is appended until interrupted or the stream ends.
    #[arg(short, long)]
    pub follow: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

fn flags_r() -> LOpenFlags {
    LOpenFlags::RDONLY
}

/// `nf ls`.
pub fn ls(a: LsArgs) -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    for arg in &a.paths {
        let (root, t) = a.conn.open(arg)?;
        let stat = root.stat(&t.path)?;
        let names = if stat.is_dir() {
            root.readdir(&t.path)?
                .into_iter()
                .map(|e| (e.is_dir(), e.name))
                .map(|(d, n)| (n, d))
                .collect()
        } else {
            vec![(t.path.clone(), false)]
        };
        if a.paths.len() > 1 {
            writeln!(out, "{arg}:")?;
        }
        let mut names: Vec<(String, bool)> = names;
        names.sort();
        for (name, is_dir) in names {
            let shown = if is_dir {
                format!("{name}/")
            } else {
                name.clone()
            };
            if a.long {
                let full = if stat.is_dir() {
                    format!("{}/{name}", t.path.trim_end_matches('/'))
                } else {
                    name.clone()
                };
                let s = root.stat(&full)?;
                writeln!(out, "{} {:>10} {shown}", mode_string(s.attr.mode), s.size())?;
            } else {
                writeln!(out, "{shown}")?;
            }
        }
    }
    Ok(0)
}

/// `drwxr-xr-x` from a Linux mode.
fn mode_string(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        0o010000 => 'p',
        0o140000 => 's',
        0o020000 => 'c',
        0o060000 => 'b',
        _ => '-',
    };
    let mut s = String::from(kind);
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// `nf stat`.
pub fn stat(a: StatArgs) -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    for arg in &a.paths {
        let (root, t) = a.conn.open(arg)?;
        let s = root.stat(&t.path)?;
        let kind = if s.is_dir() {
            "directory"
        } else if s.is_symlink() {
            "symlink"
        } else {
            "file"
        };
        writeln!(out, "path {}", t.path)?;
        writeln!(out, "type {kind}")?;
        writeln!(
            out,
            "mode {:04o} {}",
            s.permissions(),
            mode_string(s.attr.mode)
        )?;
        writeln!(out, "size {}", s.size())?;
        writeln!(out, "uid {}", s.attr.uid)?;
        writeln!(out, "gid {}", s.attr.gid)?;
        writeln!(out, "nlink {}", s.attr.nlink)?;
        let (sec, nsec) = (s.attr.mtime.sec, s.attr.mtime.nsec);
        if a.epoch {
            writeln!(out, "mtime {sec}.{nsec:09}")?;
        } else {
            writeln!(out, "mtime {}", local_time(sec as i64, nsec as u32))?;
        }
        writeln!(out, "qid {:#018x} version {}", s.qid.path, s.qid.version)?;
    }
    Ok(0)
}

/// `sec.nsec` since the epoch as this host's local time, as stat(1) prints it:
/// `2026-11-25 19:55:07.123456789 +0100`.
fn local_time(sec: i64, nsec: u32) -> String {
    let t = sec as libc::time_t;
    // SAFETY: `tm` is plain data; all zeroes is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r fills in `tm`, a live local; `t` outlives the call.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return format!("{sec}.{nsec:09} (seconds since the epoch)");
    }
    let off = tm.tm_gmtoff / 60;
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{nsec:09} {}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        if off < 0 { '-' } else { '+' },
        off.abs() / 60,
        off.abs() % 60
    )
}

/// `nf cat`.
pub fn cat(a: PathsArgs) -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    for arg in &a.paths {
        let (root, t) = a.conn.open(arg)?;
        let mut file = root.open(&t.path, flags_r())?;
        file.copy_to_ahead(&mut out, nf_ninep_client::READ_AHEAD)?;
    }
    Ok(0)
}

/// `nf write`.
pub fn write(a: WriteArgs) -> anyhow::Result<i32> {
    let (root, t) = a.conn.open(&a.path)?;
    let mut file = root.open_for_write(&t.path, a.append)?;
    if a.text.is_empty() {
        file.copy_from(&mut io::stdin().lock())?;
    } else {
        let line = format!("{}\n", a.text.join(" "));
        file.write_all(line.as_bytes())?;
    }
    file.close()?;
    Ok(0)
}

/// `nf cp`: local → remote, remote → local, or remote → remote.
pub fn cp(a: CpArgs) -> anyhow::Result<i32> {
    if a.recursive {
        return cp_tree(&a);
    }
    match (is_remote(&a.from), is_remote(&a.to)) {
        (false, false) => {
            return Err(super::Usage(format!(
                "nf cp {} {}: neither is remote; name one as ADDR:/path or :/path",
                a.from, a.to
            ))
            .into())
        }
        (true, false) => {
            let (root, t) = a.conn.open(&a.from)?;
            let mut file = root.open(&t.path, flags_r())?;
            let to = std::path::Path::new(&a.to);
            let to = if to.is_dir() || a.to.ends_with('/') {
                to.join(base_name(&t.path)?)
            } else {
                to.to_path_buf()
            };
            let out = LocalFile::create(&to)
                .with_context(|| format!("creating local file {}", to.display()))?;
            let len = file.stat().map_or(0, |st| st.size());
            let bar = copy_bar(&t.path, len, a.quiet);
            file.copy_to_ahead(&mut Counted::new(out, bar), a.depth)?;
        }
        (false, true) => {
            let input = LocalFile::open(&a.from)
                .with_context(|| format!("opening local file {}", a.from))?;
            let (root, t) = a.conn.open(&a.to)?;
            let to = root.copy_destination(&t.path, &a.from)?;
            let mut file = root.open_for_write(&to, false)?;
            let len = input.metadata().map_or(0, |m| m.len());
            let bar = copy_bar(&a.from, len, a.quiet);
            file.copy_from_behind(&mut Counted::new(input, bar), a.depth)?;
            file.close()?;
        }
        (true, true) => {
            let (src_root, src) = a.conn.open(&a.from)?;
            let (dst_root, dst) = a.conn.open(&a.to)?;
            let mut from = src_root.open(&src.path, flags_r())?;
            let dst = dst_root.copy_destination(&dst.path, &src.path)?;
            let mut to = dst_root.open_for_write(&dst, false)?;
            from.copy_to_file(&mut to, a.depth)?;
            to.close()?;
        }
    }
    Ok(0)
}

/// `nf cp -r` (steps in [`super::copy_tree`]): exit 1 if some file failed.
fn cp_tree(a: &CpArgs) -> anyhow::Result<i32> {
    let failed = match (is_remote(&a.from), is_remote(&a.to)) {
        (false, true) => {
            let from = std::path::Path::new(&a.from);
            if !from.is_dir() {
                bail!("nf cp -r {}: not a directory", a.from);
            }
            let (root, t) = a.conn.open(&a.to)?;
            let to = root.copy_destination(&t.path, a.from.trim_end_matches('/'))?;
            super::copy_tree::upload(&root, from, &to, a.depth)?
        }
        (true, false) => {
            let (root, t) = a.conn.open(&a.from)?;
            let to = std::path::Path::new(&a.to);
            let to = if to.is_dir() {
                to.join(base_name(&t.path)?)
            } else {
                to.to_path_buf()
            };
            super::copy_tree::download(&root, &t.path, &to, a.depth)?
        }
        (true, true) => {
            let (src_root, src) = a.conn.open(&a.from)?;
            let (dst_root, dst) = a.conn.open(&a.to)?;
            let to = dst_root.copy_destination(&dst.path, src.path.trim_end_matches('/'))?;
            super::copy_tree::between(&src_root, &src.path, &dst_root, &to, a.depth)?
        }
        (false, false) => {
            return Err(super::Usage(format!(
                "nf cp -r {} {}: neither is remote; name one side (or both) as ADDR:/path",
                a.from, a.to
            ))
            .into())
        }
    };
    if failed > 0 {
        eprintln!("nf cp: {failed} files could not be copied (named above)");
        return Ok(1);
    }
    Ok(0)
}

/// `nf rm`.
pub fn rm(a: PathsArgs) -> anyhow::Result<i32> {
    for arg in &a.paths {
        let (root, t) = a.conn.open(arg)?;
        root.remove(&t.path)?;
    }
    Ok(0)
}

/// `nf mkdir`.
pub fn mkdir(a: PathsArgs) -> anyhow::Result<i32> {
    for arg in &a.paths {
        let (root, t) = a.conn.open(arg)?;
        root.mkdir(&t.path, 0o755)?;
    }
    Ok(0)
}

/// Keeps the last `n` lines of what it is fed.
struct LastLines {
    n: usize,
    lines: VecDeque<Vec<u8>>,
    partial: Vec<u8>,
}

impl LastLines {
    fn new(n: usize) -> Self {
        LastLines {
            n,
            lines: VecDeque::new(),
            partial: Vec::new(),
        }
    }

    fn feed(&mut self, data: &[u8]) {
        for &b in data {
            self.partial.push(b);
            if b == b'\n' {
                self.lines.push_back(std::mem::take(&mut self.partial));
                if self.lines.len() > self.n {
                    self.lines.pop_front();
                }
            }
        }
    }

    fn print(self, out: &mut dyn Write) -> io::Result<()> {
        for l in self.lines {
            out.write_all(&l)?;
        }
        out.write_all(&self.partial)?;
        out.flush()
    }
}

/// How long a read may stay unanswered before `nf tail -f` counts the history as read.
const CAUGHT_UP: Duration = Duration::from_millis(200);

/// `nf tail`: the last lines, then (`-f`) what is appended.
///
/// Without `-f` the file is opened `O_NONBLOCK`, so a stream answers `EAGAIN` once its
/// history is read. With `-f` reads block; the history counts as read when a read stays
/// unanswered for a moment, and from then on everything is printed as it comes.
pub fn tail(a: TailArgs) -> anyhow::Result<i32> {
    let (root, t) = a.conn.open(&a.path)?;
    let mut out = io::stdout().lock();
    let mut last = LastLines::new(a.lines);
    if !a.follow {
        let mut file = root.open(&t.path, LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)?;
        loop {
            match file.read_chunk(file.position(), file.chunk()) {
                Ok(data) if data.is_empty() => break,
                Ok(data) => {
                    file.seek_to(file.position() + data.len() as u64);
                    last.feed(&data);
                }
                Err(e) if e.errno() == Some(EAGAIN) => break,
                Err(e) => return Err(e.into()),
            }
        }
        last.print(&mut out)?;
        return Ok(0);
    }
    let file = root.open(&t.path, flags_r())?;
    let client = file.client().clone();
    let mut offset = 0u64;
    let mut history = Some(last);
    loop {
        let call = client.start(Tread {
            fid: file.number(),
            offset,
            count: file.chunk(),
        })?;
        let reply = match history.is_some() {
            true => match call.wait_timeout(CAUGHT_UP)? {
                Some(reply) => reply,
                None => {
                    if let Some(h) = history.take() {
                        h.print(&mut out)?;
                    }
                    call.wait()?
                }
            },
            false => call.wait()?,
        };
        let data = match reply {
            Rmessage::Rread(r) => r.data.0,
            Rmessage::Rlerror(e) => {
                return Err(ClientError::Remote {
                    op: "read",
                    path: t.path.clone(),
                    errno: e.ecode,
                }
                .into())
            }
            other => bail!(
                "read {}: unexpected reply {}",
                t.path,
                other.msg_type().name()
            ),
        };
        if data.is_empty() {
            if let Some(h) = history.take() {
                h.print(&mut out)?;
            }
            return Ok(0);
        }
        offset += data.len() as u64;
        match history.as_mut() {
            Some(h) => h.feed(&data),
            None => {
                out.write_all(&data)?;
                out.flush()?;
            }
        }
    }
}
