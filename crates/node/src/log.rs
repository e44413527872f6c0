//! `/log`: the node's log, which every user may follow and add to, without passing
//! for the server or drowning what it says.
//!
//! 1. The server's own lines (its tracing output and `/xcpu`'s events, pushed on the
//!    [`Stream`] the daemon holds) go in as they are; the attach check quotes and
//!    escapes every name a client chose (`access.rs`), so those lines carry no raw
//!    client text.
//! 2. A line a user writes goes in as `user NAME: TEXT`, its control characters
//!    escaped (`\n` inside a line, `\x1b`, …), so no write can start a line of its
//!    own or look like the server's. A write is cut into lines at `\n`; a line longer
//!    than [`MAX_LINE`] bytes is cut there. Root's writes (and writes with no user:
//!    a tree served without an attach check) go in as written: root runs the server.
//! 3. Each user may add [`USER_RATE`] bytes per second on average, [`USER_BURST`] at
//!    once (a token bucket per uid, counting the tagged lines). A line over it is
//!    dropped whole and counted; the user's next line that goes in is preceded by
//!    `log: dropped N bytes from user NAME over the rate limit (R B/s)`. A write
//!    always succeeds at once, so a job's logging never fails or waits on this.
//! 4. Everyone may read (mode 0666, as before): the history, then new lines as they
//!    come (`tail -f`), from the [`Stream`].
//! 5. Memory is bounded: the stream keeps its history (256 KiB by default); the
//!    buckets are one small entry per uid that wrote, forgotten once full again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nf_ninep::types::LOpenFlags;
use nf_ninep_server::{lock, Ctx, FsResult};
use nf_ninep_trees::synthetic::{FileNode, OpenFile, Stream};

/// Bytes per second one user may add to `/log` on average (rule 3).
pub const USER_RATE: u64 = 4096;
/// Bytes one user may add at once (rule 3).
pub const USER_BURST: u64 = 16 * 1024;
/// Longest line a user may add, in bytes of text before escaping (rule 2).
pub const MAX_LINE: usize = 1024;

/// `/log` as a file: reads follow the stream, writes are tagged and rate-limited.
pub struct NodeLog {
    stream: Stream,
    writers: Arc<Mutex<HashMap<u32, Bucket>>>,
}

/// One user's token bucket (rule 3).
struct Bucket {
    name: String,
    tokens: u64,
    at: Instant,
    dropped: u64,
}

impl NodeLog {
    /// `/log` over `stream`, the stream the daemon pushes its own lines to.
    pub fn new(stream: Stream) -> NodeLog {
        NodeLog {
            stream,
            writers: Arc::default(),
        }
    }
}

impl FileNode for NodeLog {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o666
    }

    fn open(&self, ctx: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        let read_flags = LOpenFlags(flags.0 & !LOpenFlags::ACCMODE);
        Ok(Box::new(LogOpen {
            reader: self.stream.open(ctx, read_flags)?,
            stream: self.stream.clone(),
            writers: Arc::clone(&self.writers),
        }))
    }
}

struct LogOpen {
    reader: Box<dyn OpenFile>,
    stream: Stream,
    writers: Arc<Mutex<HashMap<u32, Bucket>>>,
}

impl OpenFile for LogOpen {
    fn read(&self, ctx: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        self.reader.read(ctx, offset, count)
    }

    fn write(&self, ctx: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        let Some(user) = ctx.creds().filter(|c| !c.is_root()) else {
            self.stream.push(data);
            return Ok(data.len() as u32);
        };
        let uid = user.uid();
        let name = name_of(&self.writers, uid);
        let lines = tagged_lines(&name, data);
        let mut out = Vec::new();
        {
            let mut writers = lock(&self.writers);
            let bucket = writers.entry(uid).or_insert_with(|| Bucket::new(name));
            for line in lines {
                bucket.refill(Instant::now());
                if bucket.tokens < line.len() as u64 {
                    bucket.dropped += line.len() as u64;
                    continue;
                }
                bucket.tokens -= line.len() as u64;
                if bucket.dropped > 0 {
                    out.extend_from_slice(
                        format!(
                            "log: dropped {} bytes from user {} over the rate limit ({USER_RATE} B/s)\n",
                            bucket.dropped, bucket.name
                        )
                        .as_bytes(),
                    );
                    bucket.dropped = 0;
                }
                out.extend_from_slice(line.as_bytes());
            }
            // Rule 5: a full bucket holds nothing worth keeping.
            writers.retain(|_, b| b.tokens < USER_BURST || b.dropped > 0);
        }
        if !out.is_empty() {
            self.stream.push(&out);
        }
        Ok(data.len() as u32)
    }
}

impl Bucket {
    /// A full bucket for the user called `name` (already escaped).
    fn new(name: String) -> Bucket {
        Bucket {
            name,
            tokens: USER_BURST,
            at: Instant::now(),
            dropped: 0,
        }
    }

    fn refill(&mut self, now: Instant) {
        let ms = now.duration_since(self.at).as_millis();
        let earned =
            u64::try_from(ms.saturating_mul(u128::from(USER_RATE)) / 1000).unwrap_or(u64::MAX);
        if earned > 0 {
            self.tokens = self.tokens.saturating_add(earned).min(USER_BURST);
            self.at = now;
        }
    }
}

/// The account name of `uid` as its lines show it (escaped), or `uid N`.
fn name_of(writers: &Mutex<HashMap<u32, Bucket>>, uid: u32) -> String {
    if let Some(b) = lock(writers).get(&uid) {
        return b.name.clone();
    }
    // Outside the lock: the user database may be slow (NSS, LDAP).
    let name = crate::access::account_name(uid).unwrap_or_else(|| format!("uid {uid}"));
    escape(name.as_bytes())
}

/// `data` as `user NAME: TEXT\n` lines (rule 2).
fn tagged_lines(name: &str, data: &[u8]) -> Vec<String> {
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    data.split(|&b| b == b'\n')
        .map(|line| {
            let cut = &line[..line.len().min(MAX_LINE)];
            format!("user {name}: {}\n", escape(cut))
        })
        .collect()
}

/// `bytes` as text with control characters and invalid UTF-8 escaped (`\t`, `\r`,
/// `\x1b`, `\\`), so it can neither end a line nor move a terminal's cursor.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\n' => out.push_str("\\n"),
                c if c.is_control() => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep_server::Creds;

    fn user_ctx(uid: u32) -> Ctx {
        Ctx::background(8192).acting_as(&Creds::new(uid, uid, vec![uid]))
    }

    fn read_all(log: &NodeLog) -> String {
        let ctx = Ctx::background(8192);
        let r = log
            .open(&ctx, LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
            .unwrap();
        String::from_utf8(r.read(&ctx, 0, 1 << 20).unwrap_or_default()).unwrap()
    }

    #[test]
    fn a_users_lines_are_tagged_and_cannot_start_a_line_of_their_own() {
        let log = NodeLog::new(Stream::with_history(1 << 20));
        let w = log.open(&user_ctx(4321), LOpenFlags::WRONLY).unwrap();
        let forged = b"hello\n2030-01-01T00:00:00Z  WARN nf_node: all good\x1b[2K\rroot: ok\n";
        assert_eq!(
            w.write(&user_ctx(4321), 0, forged).unwrap() as usize,
            forged.len()
        );
        let text = read_all(&log);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in &lines {
            assert!(l.starts_with("user uid 4321: "), "{l}");
        }
        assert!(lines[1].contains("\\u{1b}[2K\\rroot: ok"), "{}", lines[1]);
        // Root's (and the server's) lines go in as written.
        let root = Ctx::background(8192).acting_as(&Creds::new(0, 0, vec![0]));
        let w = log.open(&root, LOpenFlags::WRONLY).unwrap();
        w.write(&root, 0, b"as root\n").unwrap();
        assert!(read_all(&log).ends_with("\nas root\n"));
    }

    #[test]
    fn a_flood_is_cut_to_the_burst_and_the_drop_is_reported() {
        let log = NodeLog::new(Stream::with_history(1 << 20));
        let ctx = user_ctx(4322);
        let w = log.open(&ctx, LOpenFlags::WRONLY).unwrap();
        let line = [b'x'; 999];
        let start = Instant::now();
        for _ in 0..100 {
            w.write(&ctx, 0, &line).unwrap();
        }
        let earned = USER_RATE * (start.elapsed().as_secs() + 1);
        let kept = read_all(&log).len() as u64;
        assert!(kept <= USER_BURST + earned, "{kept} bytes kept");
        assert!(kept >= USER_BURST / 2, "{kept} bytes kept");
        // Once the bucket has refilled, the next line says what was dropped.
        lock(&log.writers).get_mut(&4322).unwrap().at -= std::time::Duration::from_secs(10);
        w.write(&ctx, 0, b"later").unwrap();
        let text = read_all(&log);
        let tail: Vec<&str> = text.lines().rev().take(2).collect();
        assert_eq!(tail[0], "user uid 4322: later");
        assert!(
            tail[1].starts_with("log: dropped ") && tail[1].contains("from user uid 4322"),
            "{}",
            tail[1]
        );
    }

    #[test]
    fn escaping_keeps_text_and_marks_everything_else() {
        assert_eq!(escape("ünï 😀".as_bytes()), "ünï 😀");
        assert_eq!(escape(b"a\\b\tc\xffd\x07"), "a\\\\b\\tc\\xffd\\u{7}");
    }
}
