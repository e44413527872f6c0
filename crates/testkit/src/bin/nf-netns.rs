//! `nf-netns`: K namespace hosts (nf-testkit's `Netns`) for scripts such as
//! `bench/compare-net.sh`, up for as long as the script needs them.
//!
//! 1. Catch SIGINT, SIGTERM and SIGHUP (from here on they end the fixture cleanly,
//!    even while it is being made).
//! 2. Create the fixture; print one line per fact, then `ready`:
//!    `host I NAME ADDR` per host, `subnet CIDR`, `bridge NAME`.
//! 3. Wait until stdin reaches its end (the script closed it, exited or was killed)
//!    or one of those signals arrives.
//! 4. Drop the fixture: processes left inside are killed, the namespaces deleted.
//!
//! A script keeps the hosts by keeping a pipe to our stdin open, e.g. bash's
//! `coproc NETNS { nf-netns --hosts 2; }`.

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread;

use anyhow::Context;
use clap::Parser;
use nf_testkit::Netns;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Brings up namespace hosts joined by a bridge, prints them, and removes them when
/// stdin closes or a signal arrives.
#[derive(Parser)]
#[command(name = "nf-netns")]
struct Args {
    /// Number of hosts.
    #[arg(long, default_value_t = 2)]
    hosts: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP]).context("catching SIGINT, SIGTERM and SIGHUP")?;
    let net = Netns::create(args.hosts).context("creating the namespace hosts")?;
    let mut out = io::stdout().lock();
    for i in 0..net.len() {
        writeln!(out, "host {i} {} {}", net.host(i), net.addr(i))?;
    }
    writeln!(out, "subnet {}", net.subnet())?;
    writeln!(out, "bridge {}", net.bridge())?;
    writeln!(out, "ready")?;
    out.flush()?;
    drop(out);

    let (tx, rx) = mpsc::channel::<String>();
    let on_eof = tx.clone();
    thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
        let _ = on_eof.send("stdin closed".into());
    });
    let handle = signals.handle();
    thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let _ = tx.send(format!("signal {sig}"));
        }
    });
    let why = rx.recv().unwrap_or_else(|_| "no more watchers".into());
    eprintln!("nf-netns: {why}; removing {} host(s)", net.len());
    drop(net);
    handle.close();
    Ok(())
}
