//! `/status`: what this node is and how busy it is, one `key value` line each.
//!
//! A fresh snapshot is made at each open (so a reader sees one consistent picture however
//! many reads it takes) and the file's size is 0 in stat, like Plan 9's synthetic files.
//! Everything is read from `/proc`; a figure the host does not give is left out rather
//! than made up.
//!
//! ```text
//! host node7
//! arch x86_64
//! os linux
//! cores 2
//! mem_total_kib 24576000
//! mem_available_kib 20000000
//! load 0.12 0.30 0.25
//! uptime_s 5213.44
//! ranks 4
//! labels gpu,rack3
//! sessions 2
//! ```
//!
//! `ranks` counts the processes of this host that run as ninefold ranks (their
//! environment holds `NF_RANK` and `NF_JOB_ID`) and that this server may inspect: all
//! of them when it runs as root, its own user's otherwise. `labels` lists the node's
//! labels (`nf serve --label`) joined by `,`, or is `-` when it has none (so the line
//! always has a value; `-` alone is therefore no label). `sessions` counts the `/xcpu`
//! sessions present now.

use std::fmt::Write;
use std::fs;

/// Most labels a node may carry.
pub const MAX_LABELS: usize = 32;

/// What `/status` says that is not read from `/proc`: the node's settings and state.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeFacts<'a> {
    /// The node's labels, each valid for [`check_labels`].
    pub labels: &'a [String],
    /// `/xcpu` sessions present now.
    pub sessions: usize,
}

/// Why labels are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    /// A label with characters other than `[A-Za-z0-9_.-]`, empty, or `-` alone.
    #[error(
        "label {label:?}: a label is made of letters, digits, `_`, `.` and `-` \
         (and is not `-` alone, which /status shows for no labels)"
    )]
    BadName {
        /// The label given.
        label: String,
    },
    /// More than [`MAX_LABELS`] labels.
    #[error("{count} labels given: a node carries at most {MAX_LABELS}")]
    TooMany {
        /// How many were given.
        count: usize,
    },
}

/// Checks one label: `[A-Za-z0-9_.-]+`, not `-` alone.
pub fn check_label(label: &str) -> Result<(), LabelError> {
    let ok = !label.is_empty()
        && label != "-"
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(LabelError::BadName {
            label: label.to_string(),
        })
    }
}

/// Checks a node's labels: each one ([`check_label`]), and at most [`MAX_LABELS`].
pub fn check_labels(labels: &[String]) -> Result<(), LabelError> {
    if labels.len() > MAX_LABELS {
        return Err(LabelError::TooMany {
            count: labels.len(),
        });
    }
    labels.iter().try_for_each(|l| check_label(l))
}

/// The text of `/status` now.
pub fn snapshot(facts: &NodeFacts<'_>) -> String {
    let mut out = String::new();
    let mut line = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            let _ = writeln!(out, "{key} {v}");
        }
    };
    line("host", read_trimmed("/proc/sys/kernel/hostname"));
    line("arch", Some(std::env::consts::ARCH.to_string()));
    line("os", Some(std::env::consts::OS.to_string()));
    line("cores", cores().map(|n| n.to_string()));
    let mem = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    line("mem_total_kib", meminfo(&mem, "MemTotal:"));
    line("mem_available_kib", meminfo(&mem, "MemAvailable:"));
    line(
        "load",
        read_trimmed("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
    );
    line(
        "uptime_s",
        read_trimmed("/proc/uptime").and_then(|u| u.split_whitespace().next().map(str::to_string)),
    );
    line("ranks", Some(ranks_running().to_string()));
    let labels = match facts.labels {
        [] => String::from("-"),
        some => some.join(","),
    };
    line("labels", Some(labels));
    line("sessions", Some(facts.sessions.to_string()));
    out
}

fn read_trimmed(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Online processors, from `/proc/cpuinfo` (not this process's affinity mask).
fn cores() -> Option<usize> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    let n = info
        .lines()
        .filter(|l| l.starts_with("processor") && l.contains(':'))
        .count();
    (n > 0).then_some(n)
}

/// The number in kB of a `/proc/meminfo` line.
fn meminfo(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
}

/// Processes whose environment marks them as ninefold ranks.
fn ranks_running() -> usize {
    let Ok(dir) = fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            fs::read(e.path().join("environ")).is_ok_and(|env| {
                let vars = || env.split(|b| *b == 0);
                vars().any(|v| v.starts_with(b"NF_RANK="))
                    && vars().any(|v| v.starts_with(b"NF_JOB_ID="))
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_has_the_basic_keys() {
        let s = snapshot(&NodeFacts::default());
        for key in [
            "host ",
            "arch ",
            "cores ",
            "mem_total_kib ",
            "load ",
            "ranks ",
            "labels ",
            "sessions ",
        ] {
            assert!(
                s.lines().any(|l| l.starts_with(key)),
                "{key} missing in {s}"
            );
        }
    }

    fn lines_of(facts: &NodeFacts<'_>) -> Vec<String> {
        snapshot(facts)
            .lines()
            .filter(|l| l.starts_with("labels ") || l.starts_with("sessions "))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn labels_and_sessions_are_told() {
        assert_eq!(
            lines_of(&NodeFacts::default()),
            ["labels -", "sessions 0"],
            "no labels: -"
        );
        let labels = ["gpu".to_string(), "rack-3.a_b".to_string()];
        let facts = NodeFacts {
            labels: &labels,
            sessions: 7,
        };
        assert_eq!(lines_of(&facts), ["labels gpu,rack-3.a_b", "sessions 7"]);
    }

    #[test]
    fn labels_are_checked() {
        assert_eq!(check_label("Rack-3.a_b"), Ok(()));
        for bad in ["", "-", "a,b", "a b", "ü", "a/b", "a:b"] {
            assert!(
                matches!(check_label(bad), Err(LabelError::BadName { .. })),
                "{bad:?}"
            );
        }
        let many: Vec<String> = (0..=MAX_LABELS).map(|i| format!("l{i}")).collect();
        assert_eq!(check_labels(&many[..MAX_LABELS]), Ok(()));
        assert_eq!(
            check_labels(&many),
            Err(LabelError::TooMany {
                count: MAX_LABELS + 1
            })
        );
    }
}
