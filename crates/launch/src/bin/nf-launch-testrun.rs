//! A minimal `nf run` for the launcher's tests, so they can watch a launcher from outside
//! (its output, its exit code, signals sent to it).
//!
//! `nf-launch-testrun [-n N] [--timeout SECS] [--tag-output] [--bind-to core] -- PROG ARGS…`
//!
//! Prints `outcome: …` and `cleanup: JOB` on stderr and exits with the outcome's exit code
//! (99 when the job cannot be launched).

use std::ffi::OsString;
use std::time::Duration;

use nf_launch::{Binding, LaunchSpec};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut spec = LaunchSpec::new(1, "");
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("-n") => spec.nprocs = number(args.next()) as usize,
            Some("--timeout") => spec.timeout = Some(Duration::from_secs(number(args.next()))),
            Some("--tag-output") => spec.tag_output = true,
            Some("--bind-to") => {
                spec.bind = match args.next().as_ref().and_then(|b| b.to_str()) {
                    Some("core") => Binding::Core,
                    Some("none") => Binding::None,
                    _ => usage(),
                }
            }
            Some("--") => break,
            _ => usage(),
        }
    }
    spec.program = args.next().unwrap_or_else(|| usage()).into();
    spec.args = args.collect();
    let report = nf_launch::run_with(&spec, |job| eprintln!("cleanup: {job}"));
    match report {
        Ok(report) => {
            eprintln!("outcome: {}", report.outcome);
            std::process::exit(report.outcome.exit_code());
        }
        Err(e) => {
            eprintln!("launch error: {e}");
            std::process::exit(99);
        }
    }
}

fn number(a: Option<OsString>) -> u64 {
    a.and_then(|a| a.to_str()?.parse().ok())
        .unwrap_or_else(|| usage())
}

fn usage() -> ! {
    eprintln!("usage: nf-launch-testrun [-n N] [--timeout SECS] [--tag-output] [--bind-to core] -- PROG ARGS…");
    std::process::exit(99)
}
