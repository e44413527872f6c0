//! `--tag-output`: forwarding each rank's stdout and stderr line by line behind `[rank] `
//! (`[rank@host] ` in a multi-host job).
//!
//! One thread per stream copies lines to the launcher's stdout or stderr. A line is
//! written with a single `write_all` under the stream's lock, so lines of different
//! ranks never mix. A line longer than [`MAX_CHUNK`] is passed on in pieces (prefixed
//! once); a last line without a newline gets one. If the launcher's own output fails
//! (a closed pipe), the rank's output is still drained so the rank never blocks on it.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tracing::warn;

/// Longest piece of a line forwarded at once.
pub const MAX_CHUNK: usize = 64 * 1024;

/// Copies `src` to `dst` line by line, each line starting with `prefix`.
///
/// Returns when `src` ends; read errors end it early. Write errors stop the writing
/// but not the reading.
pub fn forward_lines<R: Read, W: Write>(src: R, dst: &mut W, prefix: &[u8]) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(MAX_CHUNK, src);
    let mut buf = Vec::with_capacity(256);
    let mut at_line_start = true;
    let mut dst_ok = true;
    loop {
        buf.clear();
        if at_line_start {
            buf.extend_from_slice(prefix);
        }
        let n = (&mut reader)
            .take(MAX_CHUNK as u64)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            if !at_line_start && dst_ok {
                dst.write_all(b"\n")?;
                dst.flush()?;
            }
            return Ok(());
        }
        at_line_start = buf.last() == Some(&b'\n');
        if dst_ok {
            if let Err(e) = dst.write_all(&buf).and_then(|()| dst.flush()) {
                warn!("cannot forward rank output: {e}; discarding the rest");
                dst_ok = false;
            }
        }
    }
}

/// The forwarding threads of a job.
pub(crate) struct Forwarders {
    threads: Vec<JoinHandle<()>>,
    done_tx: Sender<()>,
    done_rx: Receiver<()>,
}

impl Forwarders {
    /// No threads yet.
    pub(crate) fn new() -> Forwarders {
        let (done_tx, done_rx) = mpsc::channel();
        Forwarders {
            threads: Vec::new(),
            done_tx,
            done_rx,
        }
    }

    /// Forwards the `stdout` of the rank labelled `label` (`3`, or `3@h2`) to the
    /// launcher's stdout and its `stderr` to the launcher's stderr, each line behind
    /// `[label] ` when `tagged`.
    pub(crate) fn add(
        &mut self,
        label: &str,
        tagged: bool,
        stdout: Option<impl Read + Send + 'static>,
        stderr: Option<impl Read + Send + 'static>,
    ) -> io::Result<()> {
        let prefix = if tagged {
            format!("[{label}] ").into_bytes()
        } else {
            Vec::new()
        };
        if let Some(out) = stdout {
            let prefix = prefix.clone();
            self.spawn(format!("nf-out-{label}"), move || {
                forward_lines(out, &mut io::stdout(), &prefix)
            })?;
        }
        if let Some(err) = stderr {
            self.spawn(format!("nf-err-{label}"), move || {
                forward_lines(err, &mut io::stderr(), &prefix)
            })?;
        }
        Ok(())
    }

    fn spawn(
        &mut self,
        name: String,
        work: impl FnOnce() -> io::Result<()> + Send + 'static,
    ) -> io::Result<()> {
        let done = self.done_tx.clone();
        let thread = thread::Builder::new().name(name).spawn(move || {
            if let Err(e) = work() {
                warn!("reading rank output failed: {e}");
            }
            let _ = done.send(());
        })?;
        self.threads.push(thread);
        Ok(())
    }

    /// Waits up to `within` for every stream to end (ranks gone, pipes drained); threads
    /// still running then (a grandchild holding a pipe open) are left behind.
    pub(crate) fn finish(self, within: Duration) {
        let deadline = Instant::now() + within;
        let mut pending = self.threads.len();
        while pending > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done_rx.recv_timeout(left).is_err() {
                break;
            }
            pending -= 1;
        }
        if pending > 0 {
            warn!(pending, "some rank output streams are still open (a child of a rank holds them?); not waiting");
        }
        for t in self.threads {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        forward_lines(input, &mut out, b"[3] ").unwrap();
        out
    }

    #[test]
    fn prefixes_every_line_and_ends_a_partial_one() {
        assert_eq!(
            forward(b"a\nbc\n\nlast"),
            b"[3] a\n[3] bc\n[3] \n[3] last\n"
        );
        assert_eq!(forward(b""), b"");
    }

    #[test]
    fn long_lines_are_prefixed_once() {
        let long = vec![b'x'; MAX_CHUNK * 2 + 10];
        let out = forward(&long);
        assert_eq!(out.len(), 4 + long.len() + 1);
        assert!(out.starts_with(b"[3] xxx"));
        assert_eq!(out.iter().filter(|&&b| b == b'[').count(), 1);
    }

    #[test]
    fn works_through_a_real_socket() {
        let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            writer.write_all(b"one\ntw").unwrap();
            writer.write_all(b"o\nthree").unwrap();
            drop(writer);
        });
        let mut out = Vec::new();
        forward_lines(reader, &mut out, b"[0] ").unwrap();
        t.join().unwrap();
        assert_eq!(out, b"[0] one\n[0] two\n[0] three\n");
    }
}
