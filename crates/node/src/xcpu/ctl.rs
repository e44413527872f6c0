//! The words written to `/xcpu/N/ctl`, and the settings `argv`, `env`, `exec`, `dir`
//! and `limits` hold until `exec`.
//!
//! Commands (one per line; a write may hold several):
//!
//! | command | does |
//! |---|---|
//! | `exec` | starts the job |
//! | `kill [SIG]` | signals the job's process group (default `TERM`; names or numbers) |
//! | `close` | ends the session once the job has exited and nothing holds it |
//! | `wipe` | ends it now: kills the job, removes `fs/` |
//! | `dir PATH` | the job's working directory: absolute on the node, or inside `fs/` |
//! | `limits KEY=N …` | `nproc`, `cpu` (seconds), `as` (bytes), `nofile`: lowered only |
//! | `clone COUNT ADDR…` | tree spawn: hand the session on to the nodes, COUNT children here ([`super::fanout`]) |
//!
//! `argv` holds the whole argument vector in shell quoting (`prog -n 'a b'`); `exec`
//! the program (a name in `fs/`, or a path on the node; default `argv[0]`); `env` one
//! `NAME=VALUE` per line, added to the node's default environment.

use std::path::{Path, PathBuf};

use nf_ninep::errno::{EINVAL, ENOENT};
use nf_sys::spawn::Rlimit;

/// Largest fan-out of `clone` (each child is a forwarder thread).
pub const MAX_FANOUT: usize = 64;

/// Most nodes one `clone` may name.
pub const MAX_CLONE_NODES: usize = 65536;

/// Most bytes a setting file (`argv`, `env`, `exec`) may hold.
pub const MAX_SETTING: usize = 64 * 1024;

/// A refused command: the errno answered and why (shown in `state`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The errno the write answers.
    pub errno: u32,
    /// What happened, and what to do.
    pub why: String,
}

impl Refusal {
    /// A refusal answering `errno`.
    pub fn new(errno: u32, why: impl Into<String>) -> Refusal {
        Refusal {
            errno,
            why: why.into(),
        }
    }
}

/// What the job runs with, set before `exec`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `argv` as written.
    pub argv: String,
    /// `env` as written.
    pub env: String,
    /// `exec` as written.
    pub exec: String,
    /// `dir`, if set.
    pub dir: Option<String>,
    /// `limits` set.
    pub limits: Vec<Rlimit>,
}

/// A setting changed through `ctl`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `dir PATH`.
    Dir(String),
    /// `limits …`.
    Limits(Vec<Rlimit>),
}

impl Change {
    /// The command's name.
    pub fn name(&self) -> &'static str {
        match self {
            Change::Dir(_) => "dir",
            Change::Limits(_) => "limits",
        }
    }

    /// Applies it.
    pub fn apply(self, s: &mut Settings) -> Result<(), Refusal> {
        match self {
            Change::Dir(d) => s.dir = Some(d),
            Change::Limits(l) => {
                for new in l {
                    s.limits
                        .retain(|old| std::mem::discriminant(old) != std::mem::discriminant(&new));
                    s.limits.push(new);
                }
            }
        }
        Ok(())
    }
}

/// One `ctl` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `exec`.
    Exec,
    /// `kill [SIG]`.
    Kill(i32),
    /// `close`.
    Close,
    /// `wipe`.
    Wipe,
    /// `dir` or `limits`.
    Set(Change),
    /// `clone COUNT ADDR…`.
    Clone {
        /// Nodes to serve directly.
        count: usize,
        /// Their addresses.
        addrs: Vec<String>,
    },
}

/// Parses one line of `ctl`.
pub fn parse(line: &str) -> Result<Command, Refusal> {
    let mut words = line.split_whitespace();
    let bad = |why: String| Refusal::new(EINVAL, why);
    let Some(verb) = words.next() else {
        return Err(bad("empty command".into()));
    };
    let rest: Vec<&str> = words.collect();
    let none = |cmd: Command| {
        if rest.is_empty() {
            Ok(cmd)
        } else {
            Err(bad(format!("{verb} takes no arguments")))
        }
    };
    match verb {
        "exec" => none(Command::Exec),
        "close" => none(Command::Close),
        "wipe" => none(Command::Wipe),
        "kill" => match rest.as_slice() {
            [] => Ok(Command::Kill(nf_sys::spawn::signal_number("TERM").unwrap_or(15))),
            [sig] => nf_sys::spawn::signal_number(sig)
                .map(Command::Kill)
                .ok_or_else(|| bad(format!("kill: unknown signal {sig:?} (use TERM, KILL, INT, HUP, USR1, … or 1-64)"))),
            _ => Err(bad("kill takes one signal".into())),
        },
        "dir" => match rest.as_slice() {
            [path] => Ok(Command::Set(Change::Dir((*path).to_string()))),
            _ => Err(bad("dir takes one path".into())),
        },
        "limits" => {
            if rest.is_empty() {
                return Err(bad("limits needs KEY=N (nproc, cpu, as, nofile)".into()));
            }
            let limits = rest.iter().map(|w| limit(w)).collect::<Result<_, _>>()?;
            Ok(Command::Set(Change::Limits(limits)))
        }
        "clone" => {
            let (count, addrs) = rest
                .split_first()
                .ok_or_else(|| bad("clone COUNT ADDR…".into()))?;
            let count: usize = count
                .parse()
                .ok()
                .filter(|c| (1..=MAX_FANOUT).contains(c))
                .ok_or_else(|| bad(format!("clone: {count:?} is not a fan-out from 1 to {MAX_FANOUT}")))?;
            let addrs = addrs.iter().map(|a| (*a).to_string()).collect();
            Ok(Command::Clone { count, addrs })
        }
        other => Err(bad(format!(
            "unknown command {other:?}: use exec, kill [SIG], close, wipe, dir PATH, limits KEY=N, clone COUNT ADDR…"
        ))),
    }
}

fn limit(word: &str) -> Result<Rlimit, Refusal> {
    let bad = || {
        Refusal::new(
            EINVAL,
            format!("limits: {word:?}: use nproc=N, cpu=SECONDS, as=BYTES or nofile=N"),
        )
    };
    let (key, value) = word.split_once('=').ok_or_else(bad)?;
    let n: u64 = value.parse().map_err(|_| bad())?;
    Ok(match key {
        "nproc" => Rlimit::Processes(n),
        "cpu" => Rlimit::CpuSeconds(n),
        "as" => Rlimit::AddressSpace(n),
        "nofile" => Rlimit::OpenFiles(n),
        _ => return Err(bad()),
    })
}

impl Settings {
    /// The argument vector: `argv` split as a shell would, else `[exec]`.
    pub fn argv(&self) -> Result<Vec<String>, Refusal> {
        let words = shell_words::split(&self.argv)
            .map_err(|e| Refusal::new(EINVAL, format!("argv: {e} (argv is shell-quoted)")))?;
        if !words.is_empty() {
            return Ok(words);
        }
        let exec = self.exec.trim();
        if exec.is_empty() {
            return Err(Refusal::new(
                EINVAL,
                "nothing to run: write the program to exec or argv first",
            ));
        }
        Ok(vec![exec.to_string()])
    }

    /// The program: `exec`, else `argv[0]`; a bare name is looked for in `fs/` first.
    pub fn program(&self, argv: &[String], upload: &Path) -> Result<PathBuf, Refusal> {
        let exec = self.exec.trim();
        let name = if exec.is_empty() { &argv[0] } else { exec };
        let path = Path::new(name);
        if path.is_absolute() {
            return Ok(path.to_path_buf());
        }
        let uploaded = upload.join(path);
        if name.contains('/') || uploaded.exists() {
            if !uploaded.starts_with(upload) || name.split('/').any(|p| p == "..") {
                return Err(Refusal::new(
                    EINVAL,
                    format!("exec: {name:?} leaves fs/; give an absolute path on the node"),
                ));
            }
            if !uploaded.exists() {
                return Err(Refusal::new(
                    ENOENT,
                    format!("exec: {name}: not found in fs/"),
                ));
            }
            return Ok(uploaded);
        }
        Ok(path.to_path_buf())
    }

    /// The working directory: `dir` (absolute, or inside `fs/`), else `fs/`.
    pub fn workdir(&self, upload: &Path) -> PathBuf {
        match &self.dir {
            Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
            Some(d) => upload.join(d),
            None => upload.to_path_buf(),
        }
    }

    /// `env`'s `NAME=VALUE` lines (blank lines and `#` comments skipped).
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        env_lines(&self.env)
    }

    /// The `ctl` lines that set `dir` and `limits` as they are now.
    pub fn ctl_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(d) = &self.dir {
            lines.push(format!("dir {d}"));
        }
        if !self.limits.is_empty() {
            let words: Vec<String> = self
                .limits
                .iter()
                .map(|l| match l {
                    Rlimit::Processes(n) => format!("nproc={n}"),
                    Rlimit::CpuSeconds(n) => format!("cpu={n}"),
                    Rlimit::AddressSpace(n) => format!("as={n}"),
                    Rlimit::OpenFiles(n) => format!("nofile={n}"),
                })
                .collect();
            lines.push(format!("limits {}", words.join(" ")));
        }
        lines
    }

    /// The command as `/xcpu/procs` and the log show it: the argument vector with
    /// every word escaped ([`super::escape::field`]), or without arguments (`full`
    /// false) the program only; `-` when nothing is set.
    pub fn shown(&self, full: bool) -> String {
        let words = self.argv().unwrap_or_else(|_| {
            // Quoting the node cannot undo still shows as written, a word per run of
            // spaces.
            self.argv.split_whitespace().map(str::to_string).collect()
        });
        let exec = self.exec.trim();
        let shown: Vec<&str> = match (full, words.first()) {
            (true, _) => words.iter().map(String::as_str).collect(),
            (false, _) if !exec.is_empty() => vec![exec],
            (false, Some(program)) => vec![program.as_str()],
            (false, None) => Vec::new(),
        };
        if shown.is_empty() {
            return "-".to_string();
        }
        shown
            .iter()
            .map(|w| super::escape::field(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `NAME=VALUE` lines of `text`; lines without `=` are skipped.
pub fn env_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_bad_ones_say_why() {
        assert_eq!(parse("exec"), Ok(Command::Exec));
        assert_eq!(parse(" kill  KILL "), Ok(Command::Kill(9)));
        assert_eq!(parse("kill"), Ok(Command::Kill(15)));
        assert_eq!(
            parse("limits nproc=10 cpu=5"),
            Ok(Command::Set(Change::Limits(vec![
                Rlimit::Processes(10),
                Rlimit::CpuSeconds(5)
            ])))
        );
        assert_eq!(
            parse("clone 2 tls:a:1 tls:b:1"),
            Ok(Command::Clone {
                count: 2,
                addrs: vec!["tls:a:1".into(), "tls:b:1".into()]
            })
        );
        for bad in [
            "",
            "exec now",
            "kill BOGUS",
            "limits",
            "limits nproc=x",
            "dir",
            "frob",
        ] {
            let r = parse(bad).unwrap_err();
            assert_eq!(r.errno, EINVAL, "{bad:?}");
            assert!(!r.why.is_empty());
        }
    }

    #[test]
    fn program_and_argv() {
        let up = Path::new("/srv/xcpu/3");
        let s = Settings {
            argv: "prog -n 'a b'".into(),
            ..Settings::default()
        };
        let argv = s.argv().unwrap();
        assert_eq!(argv, ["prog", "-n", "a b"]);
        assert_eq!(s.program(&argv, up).unwrap(), PathBuf::from("prog"));
        let s = Settings {
            exec: "/bin/echo\n".into(),
            ..Settings::default()
        };
        assert_eq!(s.argv().unwrap(), ["/bin/echo"]);
        let s = Settings {
            exec: "../../etc/x".into(),
            ..Settings::default()
        };
        let argv = s.argv().unwrap();
        assert_eq!(s.program(&argv, up).unwrap_err().errno, EINVAL);
        assert_eq!(Settings::default().argv().unwrap_err().errno, EINVAL);
        let s = Settings {
            argv: "unclosed 'quote".into(),
            ..Settings::default()
        };
        assert_eq!(s.argv().unwrap_err().errno, EINVAL);
    }

    #[test]
    fn the_command_is_shown_escaped_and_to_others_without_arguments() {
        let s = Settings {
            argv: "/bin/sleep 'a b' 'x\n0 root'".into(),
            ..Settings::default()
        };
        assert_eq!(s.shown(true), "/bin/sleep a\\040b x\\0120\\040root");
        assert_eq!(s.shown(false), "/bin/sleep");
        let s = Settings {
            exec: "/bin/true\n0 root running 1 0 /bin/sh".into(),
            ..Settings::default()
        };
        assert_eq!(
            s.shown(false),
            "/bin/true\\0120\\040root\\040running\\0401\\0400\\040/bin/sh"
        );
        assert_eq!(Settings::default().shown(true), "-");
        let s = Settings {
            argv: "unclosed 'quote".into(),
            ..Settings::default()
        };
        assert_eq!(s.shown(true), "unclosed 'quote");
    }

    #[test]
    fn env_lines_skip_noise() {
        assert_eq!(
            env_lines("A=1\n\n# c\nB=x=y\nnoequals\n=v\n"),
            [("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
    }
}
