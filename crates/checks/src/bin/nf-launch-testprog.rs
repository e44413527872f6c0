//! A rank program for the launcher's tests; `nf-launch-testprog MODE ARGS…`.
//!
//! | mode | what every rank does |
//! |---|---|
//! | `wireup [ROUNDS]` | puts its rank, fences, gets and checks every rank's value; ROUNDS times (default 2); checks that the ranks sharing its `NF_HOST` have local ranks 0..NF_LOCAL_SIZE; prints `rank R of N: wire-up ok (host H, local L of LS, netns INODE)` |
//! | `killhost HOST` | fences with all ranks, then the ranks whose `NF_HOST` is HOST kill themselves with SIGKILL; the others sleep 60 s |
//! | `intrude` | the last rank first probes the PMI port (TCP) with garbage, a wrong secret and a client with a wrong secret, each of which must be refused; then `wireup` |
//! | `exit RANK CODE` | rank RANK exits with CODE at once; the others sleep 60 s |
//! | `kill RANK` | rank RANK kills itself with SIGKILL; the others sleep 60 s |
//! | `abort RANK` | rank RANK asks the launcher to abort through PMI; then all sleep 60 s |
//! | `sleep SECS` | sleeps |
//! | `print` | writes two lines to stdout, one to stderr, and an unterminated last line |
//! | `affinity` | prints `cpus: a,b,…`, the CPUs it may run on |
//!
//! A rank that finds something wrong says so on stderr and exits with 2.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::process::exit;
use std::thread::sleep;
use std::time::Duration;

use nf_pmi::{Client, JobEnv, PmiAddr, PmiError};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let num = |i: usize| -> u64 {
        arg(i)
            .parse()
            .unwrap_or_else(|_| fail(&format!("argument {i} must be a number")))
    };
    let rank: u64 = std::env::var(nf_pmi::env::RANK)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    match arg(0) {
        "wireup" => wireup(if args.len() > 1 { num(1) } else { 2 }),
        "killhost" => {
            let mut pmi = connect();
            pmi.fence().unwrap_or_else(|e| fail(&e.to_string()));
            if pmi.host() == Some(arg(1)) {
                // SAFETY: kill/getpid have no memory preconditions.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            sleep(Duration::from_secs(60));
        }
        "intrude" => {
            let env = JobEnv::from_env()
                .unwrap_or_else(|e| fail(&e.to_string()))
                .unwrap_or_else(|| fail("not started by a launcher"));
            if env.rank + 1 == env.size {
                intrude(&env);
            }
            wireup(2);
        }
        "exit" => {
            if rank == num(1) {
                exit(i32::try_from(num(2)).unwrap_or(1));
            }
            sleep(Duration::from_secs(60));
        }
        "kill" => {
            if rank == num(1) {
                // SAFETY: kill/getpid have no memory preconditions.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            sleep(Duration::from_secs(60));
        }
        "abort" => {
            let mut pmi = connect();
            if rank == num(1) {
                pmi.abort(&format!("rank {rank} gives up"))
                    .unwrap_or_else(|e| fail(&e.to_string()));
            }
            sleep(Duration::from_secs(60));
        }
        "sleep" => sleep(Duration::from_secs(num(1))),
        "print" => {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "hello from {rank}\nsecond line\nno newline");
            eprintln!("warning from {rank}");
        }
        "affinity" => println!("cpus: {}", affinity().join(",")),
        other => fail(&format!("unknown mode {other:?}")),
    }
}

fn connect() -> Client {
    match Client::from_env() {
        Ok(Some(c)) => c,
        Ok(None) => fail("not started by a launcher (NF_PMI_ADDR unset)"),
        Err(e) => fail(&e.to_string()),
    }
}

fn wireup(rounds: u64) {
    let mut pmi = connect();
    let (me, n) = (pmi.rank(), pmi.size());
    let host = pmi.host().unwrap_or("-").to_owned();
    let (local, local_size) = (pmi.local_rank(), pmi.local_size());
    let mine = format!("{host} {local} {local_size}");
    pmi.put(&format!("place-{me}"), &mine)
        .unwrap_or_else(|e| fail(&e.to_string()));
    for round in 0..rounds {
        let check = |r: Result<(), nf_pmi::PmiError>| r.unwrap_or_else(|e| fail(&e.to_string()));
        check(pmi.put(
            &format!("r{round}-{me}"),
            &format!("value {round} of rank {me} in {}", pmi.job_id()),
        ));
        check(pmi.fence());
        for peer in 0..n {
            let got = pmi
                .get(&format!("r{round}-{peer}"))
                .unwrap_or_else(|e| fail(&e.to_string()));
            let want = format!("value {round} of rank {peer} in {}", pmi.job_id());
            if got != want {
                fail(&format!(
                    "rank {me}: round {round}, rank {peer}'s value is {got:?}, expected {want:?}"
                ));
            }
        }
    }
    let mut locals: Vec<usize> = Vec::new();
    for peer in 0..n {
        let place = pmi
            .get(&format!("place-{peer}"))
            .unwrap_or_else(|e| fail(&e.to_string()));
        let mut words = place.split(' ');
        if words.next() == Some(host.as_str()) {
            let l = words.next().and_then(|w| w.parse().ok());
            if words.next() != Some(&local_size.to_string()) {
                fail(&format!("rank {peer} on {host} has place {place:?}, local size differs from {local_size}"));
            }
            locals.push(l.unwrap_or_else(|| fail(&format!("bad place {place:?}"))));
        }
    }
    locals.sort_unstable();
    if locals != (0..local_size).collect::<Vec<_>>() {
        fail(&format!(
            "ranks on {host} have local ranks {locals:?}, expected 0..{local_size}"
        ));
    }
    match pmi.get("never-put") {
        Err(nf_pmi::PmiError::KeyNotFound { key }) if key == "never-put" => {}
        other => fail(&format!("get of a missing key gave {other:?}")),
    }
    pmi.finalize().unwrap_or_else(|e| fail(&e.to_string()));
    let netns = std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino());
    println!(
        "rank {me} of {n}: wire-up ok (host {host}, local {local} of {local_size}, netns {netns})"
    );
}

/// Probes the launcher's TCP PMI port as a stranger would; every probe must be refused.
fn intrude(env: &JobEnv) {
    let PmiAddr::Tcp(addr) = env.pmi_addr else {
        fail("intrude needs a tcp: NF_PMI_ADDR (a multi-host launch)");
    };
    let hello_wrong = format!(
        "{{\"op\":\"hello\",\"rank\":{},\"size\":{},\"job_id\":\"{}\",\"secret\":\"{}\"}}\n",
        env.rank,
        env.size,
        env.job_id,
        "0".repeat(32)
    );
    for probe in [&b"\x16\x03\x01 garbage \xff\n"[..], hello_wrong.as_bytes()] {
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| fail(&format!("connect: {e}")));
        s.set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap_or_else(|e| fail(&e.to_string()));
        s.write_all(probe)
            .unwrap_or_else(|e| fail(&format!("write: {e}")));
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap_or_else(|e| {
            fail(&format!(
                "the server did not close a refused connection: {e}"
            ))
        });
        let answer = String::from_utf8_lossy(&answer);
        if !answer.starts_with("{\"status\":\"error\"") || answer.matches('\n').count() != 1 {
            fail(&format!(
                "a stranger got {answer:?}, expected one error line"
            ));
        }
    }
    let mut wrong = env.clone();
    wrong.secret = Some("f".repeat(32));
    match Client::connect(wrong) {
        Err(PmiError::Refused { op: "hello", .. }) => {}
        other => fail(&format!("a client with a wrong secret got {other:?}")),
    }
    eprintln!("rank {}: strangers refused", env.rank);
}

fn affinity() -> Vec<String> {
    let Some(mask) = nf_sys::cpus::affinity_mask() else {
        fail("sched_getaffinity failed")
    };
    (0..mask.len() * 64)
        .filter(|&c| mask[c / 64] >> (c % 64) & 1 == 1)
        .map(|c| c.to_string())
        .collect()
}

fn fail(msg: &str) -> ! {
    eprintln!("nf-launch-testprog: {msg}");
    exit(2)
}
