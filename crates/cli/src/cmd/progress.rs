//! Progress of a long measurement on stderr: one bar that updates in place on a
//! terminal, one plain line per step — or per group of steps, such as one rma case's
//! sweep of sizes — when stderr is a file or a pipe (so a log shows how far a run got
//! without drowning it), nothing with `--quiet`. Copies ([`copy_bar`]) show bytes on a
//! terminal only.

use std::io::IsTerminal;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing (`--quiet`).
    Quiet,
    /// An indicatif bar redrawn in place.
    Bar,
    /// A line per step.
    Lines,
}

impl Mode {
    /// The mode for this process: quiet if asked, a bar on a terminal, else lines.
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// Progress over `len` steps of the job `what` (`pingpong`, `rma`, `9p`).
pub struct Progress {
    what: &'static str,
    len: u64,
    done: u64,
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    /// Off a terminal, a line every this many steps (and at the last).
    every: u64,
}

impl Progress {
    /// Progress shown as `mode` says.
    pub fn new(what: &'static str, len: u64, mode: Mode) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(len);
            let template = format!("{what} {{bar:30}} {{pos}}/{{len}}, last {{msg}}");
            if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            what,
            len,
            done: 0,
            bar,
            lines: mode == Mode::Lines,
            every: 1,
        }
    }

    /// Off a terminal, one line per group of `n` steps instead of one per step.
    pub fn lines_every(mut self, n: u64) -> Progress {
        self.every = n.max(1);
        self
    }

    /// One step done; `msg` says which (`8 B`, `put contig 64 B`).
    pub fn step(&mut self, msg: &str) {
        self.done += 1;
        if let Some(b) = &self.bar {
            b.set_message(msg.to_owned());
            b.inc(1);
        } else if self.lines && (self.done.is_multiple_of(self.every) || self.done == self.len) {
            eprintln!("{}: {}/{} {msg}", self.what, self.done, self.len);
        }
    }

    /// Clears the bar (lines stay, as a log).
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// Copies shorter than this end before a bar could say anything useful.
pub const LONG_COPY: u64 = 8 << 20;

/// A bar counting the bytes of a copy of `len` bytes of `name`, for a long copy
/// ([`LONG_COPY`]) with stderr on a terminal and not `quiet`; else `None` (a log or a
/// pipe gets nothing: the copy's end is the news).
pub fn copy_bar(name: &str, len: u64, quiet: bool) -> Option<indicatif::ProgressBar> {
    if Mode::detect(quiet) != Mode::Bar || len < LONG_COPY {
        return None;
    }
    let bar = indicatif::ProgressBar::new(len);
    let template = "{msg} {bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec}, {eta} left";
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(name.to_owned());
    Some(bar)
}

/// A reader or writer that moves a copy's bar by the bytes through it.
pub struct Counted<T> {
    inner: T,
    bar: Option<indicatif::ProgressBar>,
}

impl<T> Counted<T> {
    /// `inner`, counted on `bar` (if any).
    pub fn new(inner: T, bar: Option<indicatif::ProgressBar>) -> Counted<T> {
        Counted { inner, bar }
    }

    fn count(&self, n: usize) {
        if let Some(b) = &self.bar {
            b.inc(n as u64);
        }
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl<T: std::io::Read> std::io::Read for Counted<T> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count(n);
        Ok(n)
    }
}

impl<T: std::io::Write> std::io::Write for Counted<T> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count(n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
