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
//! ```
//!
//! `ranks` counts the processes of this host that run as ninefold ranks (their
//! environment holds `NF_RANK` and `NF_JOB_ID`) and that this server may inspect: all
//! of them when it runs as root, its own user's otherwise.

use std::fmt::Write;
use std::fs;

/// The text of `/status` now.
pub fn snapshot() -> String {
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
        let s = snapshot();
        for key in [
            "host ",
            "arch ",
            "cores ",
            "mem_total_kib ",
            "load ",
            "ranks ",
        ] {
            assert!(
                s.lines().any(|l| l.starts_with(key)),
                "{key} missing in {s}"
            );
        }
    }
}
