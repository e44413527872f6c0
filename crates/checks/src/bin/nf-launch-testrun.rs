//! A minimal `nf run` for the launcher's tests, so they can watch a launcher from outside
//! (its output, its exit code, signals sent to it).
//!
//! `nf-launch-testrun [-n N] [--hosts LIST [--remote TEMPLATE] [--pmi-bind ADDR]] [--timeout SECS] [--tag-output] [--oversubscribe] [--bind-to core] -- PROG ARGS…`
//!
//! Prints `outcome: …` and `cleanup: JOB` on stderr and exits with the outcome's exit code
//! (99 when the job cannot be launched).

use std::ffi::OsString;
use std::time::Duration;

use nf_launch::{Binding, Hosts, LaunchSpec, RemoteTemplate};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut spec = LaunchSpec::new(0, "");
    let mut hosts: Option<Hosts> = None;
    let mut remote = None;
    let mut pmi_bind = None;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("-n") => spec.nprocs = number(args.next()) as usize,
            Some("--hosts") => {
                let list = text(args.next());
                hosts = Some(Hosts::new(
                    Hosts::parse_list(&list).unwrap_or_else(|e| launch_error(&e)),
                ));
            }
            Some("--remote") => {
                remote = Some(
                    RemoteTemplate::parse(&text(args.next())).unwrap_or_else(|e| launch_error(&e)),
                )
            }
            Some("--pmi-bind") => {
                pmi_bind = Some(text(args.next()).parse().unwrap_or_else(|_| usage()))
            }
            Some("--timeout") => spec.timeout = Some(Duration::from_secs(number(args.next()))),
            Some("--tag-output") => spec.tag_output = true,
            Some("--oversubscribe") => spec.oversubscribe = true,
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
    let cleanup = |job: &str| eprintln!("cleanup: {job}");
    let report = match hosts.as_mut() {
        Some(hosts) => {
            if let Some(r) = remote {
                hosts.remote = std::sync::Arc::new(r);
            }
            hosts.pmi_bind = pmi_bind;
            if spec.nprocs == 0 {
                spec.nprocs = hosts.total();
            }
            nf_launch::run_on_hosts(&spec, hosts, cleanup)
        }
        None => {
            if spec.nprocs == 0 {
                spec.nprocs = 1;
            }
            nf_launch::run_with(&spec, cleanup)
        }
    };
    match report {
        Ok(report) => {
            eprintln!("outcome: {}", report.outcome);
            std::process::exit(report.outcome.exit_code());
        }
        Err(e) => launch_error(&e),
    }
}

fn launch_error(e: &nf_launch::LaunchError) -> ! {
    eprintln!("launch error: {e}");
    std::process::exit(99)
}

fn text(a: Option<OsString>) -> String {
    a.and_then(|a| a.into_string().ok())
        .unwrap_or_else(|| usage())
}

fn number(a: Option<OsString>) -> u64 {
    a.and_then(|a| a.to_str()?.parse().ok())
        .unwrap_or_else(|| usage())
}

fn usage() -> ! {
    eprintln!("usage: nf-launch-testrun [-n N] [--hosts LIST [--remote TEMPLATE] [--pmi-bind IP:PORT]] [--timeout SECS] [--tag-output] [--oversubscribe] [--bind-to core] -- PROG ARGS…");
    std::process::exit(99)
}
