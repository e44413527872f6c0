//! A session's `tree`: the output and the end of every node of its tree spawn as lines
//! of one stream, so a client reads one file on the first node whatever the tree's size
//! (XCPU's tree spawn carried the job down; this carries what it says back up).
//!
//! | record | what |
//! |---|---|
//! | `NODE out TEXT` | a line the job wrote to its stdout |
//! | `NODE err TEXT` | a line the job wrote to its stderr |
//! | `NODE exit CODE` / `NODE signal SIG` | the job ended |
//! | `NODE failed WHY` | the node did not run the job to its end: not reached, a request to it failed, its session ended first, or its stream was lost |
//!
//! Rules:
//!
//! 1. `NODE` is `.` for this node's own job, else a node's address as it was given to
//!    `clone` (unique in the tree: the addresses are split among the children).
//! 2. Every node of the subtree ends with exactly one `exit`, `signal` or `failed`
//!    record; the stream ends (end of file) once all have. A session that ends first
//!    ends the stream at once.
//! 3. A job's line longer than [`MAX_TEXT`] bytes is cut into several records; a last
//!    line without a newline is a record too. Records hold no newline, else any byte.
//! 4. Each child's `tree` is relayed here by a thread of its forwarder ([`Branch`]):
//!    `.` becomes the child's address; a record naming a node outside the child's
//!    subtree, or a second end of one node, is dropped (counted, one warning); when the
//!    child's stream ends or breaks, each node of its subtree without an end gets
//!    `failed lost: WHY`.
//! 5. Flow is that of `stdout` ([`super::output`], rule 3): with a reader open, a slow
//!    reader holds the jobs and the relays back instead of losing lines; without one
//!    the last `history` bytes are kept.

use std::collections::HashSet;
use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};

use nf_ninep_server::{Cancel, Monitor};

use nf_xcpu_client::records::{parse_record, read_record, MAX_TEXT};

use super::output::Output;

/// What is still to end before the stream does (rule 2).
struct Parts {
    /// This node's job and each child not yet done.
    open: usize,
    /// This node's own end was written.
    own_ended: bool,
}

/// One session's `tree` stream (see the module docs). Clones share it.
#[derive(Clone)]
pub struct TreeOut {
    output: Output,
    parts: Arc<Monitor<Parts>>,
    ended: Cancel,
}

impl TreeOut {
    /// A stream keeping `history` bytes for `owner`, ending early once `ended` is
    /// cancelled (the session's end).
    pub fn new(history: usize, owner: (u32, u32), ended: Cancel) -> TreeOut {
        TreeOut {
            output: Output::new(history, owner),
            parts: Arc::new(Monitor::new(Parts {
                open: 1,
                own_ended: false,
            })),
            ended,
        }
    }

    /// The byte stream readers open.
    pub fn output(&self) -> &Output {
        &self.output
    }

    /// Appends one record; false once the session has ended.
    pub fn record(&self, node: &str, kind: &str, text: &[u8]) -> bool {
        if self.ended.is_cancelled() {
            return false;
        }
        let mut line = Vec::with_capacity(node.len() + kind.len() + text.len() + 3);
        line.extend_from_slice(node.as_bytes());
        line.push(b' ');
        line.extend_from_slice(kind.as_bytes());
        if !text.is_empty() {
            line.push(b' ');
            line.extend_from_slice(text);
        }
        line.push(b'\n');
        self.output.push(&line, &self.ended)
    }

    /// This node's job ended (`exit 0`, `signal 9`, `failed WHY`); only the first
    /// call counts (rule 2).
    pub fn own_end(&self, kind: &str, text: &str) {
        let first = self
            .parts
            .update(|p| !std::mem::replace(&mut p.own_ended, true));
        if first {
            self.record(".", kind, text.as_bytes());
            self.part_done();
        }
    }

    /// Ends the stream now: the session has ended.
    pub fn close(&self) {
        self.output.close();
    }

    /// Splits a job's `out` or `err` bytes into records of this node (rule 3).
    pub fn lines(&self, kind: &'static str) -> Lines {
        Lines {
            tree: self.clone(),
            kind,
            partial: Vec::new(),
        }
    }

    /// Children handed on to: each is a part that must end (rule 2).
    pub fn branch(&self, addr: &str, subtree: &[String]) -> Branch {
        self.parts.update(|p| p.open += 1);
        Branch {
            tree: self.clone(),
            addr: addr.to_string(),
            subtree: subtree.iter().cloned().collect(),
            ended: Arc::new(Mutex::new(HashSet::new())),
            done: false,
        }
    }

    fn part_done(&self) {
        let last = self.parts.update(|p| {
            p.open -= 1;
            p.open == 0
        });
        if last {
            self.output.close();
        }
    }
}

/// Cuts a job's output into line records (rule 3).
pub struct Lines {
    tree: TreeOut,
    kind: &'static str,
    partial: Vec<u8>,
}

impl Lines {
    /// Records every whole line of `bytes` (with what was left from before); false
    /// once the session has ended.
    pub fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            let ok = if self.partial.is_empty() {
                self.emit(&bytes[..nl])
            } else {
                self.partial.extend_from_slice(&bytes[..nl]);
                let line = std::mem::take(&mut self.partial);
                self.emit(&line)
            };
            if !ok {
                return false;
            }
            bytes = &bytes[nl + 1..];
        }
        self.partial.extend_from_slice(bytes);
        while self.partial.len() > MAX_TEXT {
            let rest = self.partial.split_off(MAX_TEXT);
            let line = std::mem::replace(&mut self.partial, rest);
            if !self.tree.record(".", self.kind, &line) {
                return false;
            }
        }
        true
    }

    /// The output ended: a last line without newline is a record too.
    pub fn finish(&mut self) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.emit(&line);
        }
    }

    fn emit(&self, line: &[u8]) -> bool {
        if line.is_empty() {
            return self.tree.record(".", self.kind, line);
        }
        line.chunks(MAX_TEXT)
            .all(|chunk| self.tree.record(".", self.kind, chunk))
    }
}

/// One child's part of the stream: what its relay writes, and the ends it saw
/// (rule 4). Dropped without [`Branch::finish`], its nodes get `failed`.
pub struct Branch {
    tree: TreeOut,
    addr: String,
    subtree: HashSet<String>,
    ended: Arc<Mutex<HashSet<String>>>,
    done: bool,
}

impl Branch {
    /// Relays the child's `tree` until it ends, then finishes (rule 4).
    pub fn relay(self, from: impl Read) {
        let mut reader = std::io::BufReader::new(from);
        let mut line = Vec::new();
        let mut dropped = 0u64;
        let why = loop {
            line.clear();
            match read_record(&mut reader, &mut line) {
                Ok(false) => break "its stream ended early".to_string(),
                Ok(true) => {}
                Err(e) => break format!("reading its stream: {e}"),
            }
            if !self.pass(&line) {
                dropped += 1;
            }
            if self.tree.ended.is_cancelled() {
                break "the session ended".to_string();
            }
        };
        if dropped > 0 {
            tracing::warn!(child = %self.addr, dropped, "xcpu: tree spawn: records from the child named nodes outside its subtree or ended a node twice; dropped");
        }
        self.finish(&format!("lost: {why}"));
    }

    /// Passes one record up; false if it was dropped.
    fn pass(&self, line: &[u8]) -> bool {
        let Some(r) = parse_record(line) else {
            return false;
        };
        let node = if r.node == "." {
            self.addr.as_str()
        } else if self.subtree.contains(r.node) {
            r.node
        } else {
            return false;
        };
        if r.is_end() && !self.mark_ended(node) {
            return false;
        }
        self.tree.record(node, r.kind, r.text);
        true
    }

    /// Records `node`'s end; false if it had ended already.
    fn mark_ended(&self, node: &str) -> bool {
        mark_ended(&self.ended, node)
    }

    /// Every node of the subtree without an end gets `failed WHY`; the part is done.
    pub fn finish(mut self, why: &str) {
        self.finish_with(why);
    }

    /// The child was never reached or never got the session: it fails with `why`, its
    /// subtree as not reached.
    pub fn unreached(mut self, why: &str) {
        self.watcher().child_failed(why);
        let below = format!("not reached ({} failed)", self.addr);
        self.finish_with(&below);
    }

    fn finish_with(&mut self, why: &str) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut nodes: Vec<String> = self.subtree.iter().cloned().collect();
        nodes.sort();
        nodes.insert(0, self.addr.clone());
        for n in nodes {
            if self.mark_ended(&n) {
                self.tree.record(&n, "failed", why.as_bytes());
            }
        }
        self.tree.part_done();
    }

    /// A handle that marks failures of the child from the forwarder while the relay runs.
    pub fn watcher(&self) -> BranchFailures {
        BranchFailures {
            tree: self.tree.clone(),
            addr: self.addr.clone(),
            ended: Arc::clone(&self.ended),
        }
    }
}

impl Drop for Branch {
    fn drop(&mut self) {
        self.finish_with("lost: its forwarder stopped");
    }
}

/// The forwarder's side of a [`Branch`] whose relay runs on another thread.
pub struct BranchFailures {
    tree: TreeOut,
    addr: String,
    ended: Arc<Mutex<HashSet<String>>>,
}

impl BranchFailures {
    /// The child failed a request (`failed WHY`), unless it ended already.
    pub fn child_failed(&self, why: &str) {
        if mark_ended(&self.ended, &self.addr) {
            self.tree.record(&self.addr, "failed", why.as_bytes());
        }
    }
}

/// Records `node`'s end in `ended` (rule 2); false if it had ended already.
fn mark_ended(ended: &Mutex<HashSet<String>>, node: &str) -> bool {
    ended
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(node.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> TreeOut {
        TreeOut::new(1 << 20, (0, 0), Cancel::new())
    }

    fn text(t: &TreeOut) -> String {
        String::from_utf8(t.output().snapshot()).unwrap()
    }

    #[test]
    fn lines_are_whole_records_and_a_last_partial_line_counts() {
        let t = tree();
        let mut out = t.lines("out");
        assert!(out.feed(b"hel"));
        assert!(out.feed(b"lo\nwor"));
        assert!(out.feed(b"ld\n\nend"));
        out.finish();
        assert_eq!(text(&t), ". out hello\n. out world\n. out\n. out end\n");
    }

    #[test]
    fn a_long_line_is_cut() {
        let t = tree();
        let mut out = t.lines("err");
        out.feed(&vec![b'x'; MAX_TEXT + 10]);
        out.feed(b"\n");
        let s = text(&t);
        let lines: Vec<_> = s.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), ". err ".len() + MAX_TEXT);
        assert_eq!(lines[1], ". err xxxxxxxxxx");
    }

    #[test]
    fn the_stream_ends_when_the_job_and_every_branch_have() {
        let t = tree();
        let b = t.branch("tcp:a:1", &["tcp:b:1".into()]);
        t.own_end("exit", "0");
        t.own_end("exit", "1");
        assert!(!t.output.is_closed());
        let child = b". out hi\ntcp:b:1 exit 3\ntcp:z:9 out forged\n. exit 0\n. exit 5\n";
        b.relay(&child[..]);
        assert!(t.output.is_closed());
        assert_eq!(
            text(&t),
            ". exit 0\ntcp:a:1 out hi\ntcp:b:1 exit 3\ntcp:a:1 exit 0\n"
        );
    }

    #[test]
    fn a_branch_that_breaks_reports_its_unended_nodes() {
        let t = tree();
        let b = t.branch("tcp:a:1", &["tcp:b:1".into(), "tcp:c:1".into()]);
        b.relay(&b"tcp:c:1 signal 9\n. out par"[..]);
        t.own_end("failed", "session ended");
        assert_eq!(
            text(&t),
            "tcp:c:1 signal 9\ntcp:a:1 out par\ntcp:a:1 failed lost: its stream ended early\n\
             tcp:b:1 failed lost: its stream ended early\n. failed session ended\n"
        );
        assert!(t.output.is_closed());
    }

    #[test]
    fn a_dropped_branch_is_failed_not_forgotten() {
        let t = tree();
        let b = t.branch("tcp:a:1", &[]);
        b.watcher().child_failed("connecting: refused");
        drop(b);
        t.own_end("exit", "0");
        assert_eq!(text(&t), "tcp:a:1 failed connecting: refused\n. exit 0\n");
        assert!(t.output.is_closed());
    }
}
