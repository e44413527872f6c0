//! Progress of a long measurement on stderr: one bar that updates in place on a
//! terminal, one plain line per step — or per group of steps, such as one rma case's
//! sweep of sizes — when stderr is a file or a pipe (so a log shows how far a run got
//! without drowning it), nothing with `--quiet`.

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
