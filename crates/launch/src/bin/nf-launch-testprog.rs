//! A rank program for the launcher's tests; `nf-launch-testprog MODE ARGS…`.
//!
//! | mode | what every rank does |
//! |---|---|
//! | `wireup [ROUNDS]` | puts its rank, fences, gets and checks every rank's value; ROUNDS times (default 2) |
//! | `exit RANK CODE` | rank RANK exits with CODE at once; the others sleep 60 s |
//! | `kill RANK` | rank RANK kills itself with SIGKILL; the others sleep 60 s |
//! | `abort RANK` | rank RANK asks the launcher to abort through PMI; then all sleep 60 s |
//! | `sleep SECS` | sleeps |
//! | `print` | writes two lines to stdout, one to stderr, and an unterminated last line |
//! | `affinity` | prints `cpus: a,b,…`, the CPUs it may run on |
//!
//! A rank that finds something wrong says so on stderr and exits with 2.

use std::io::Write;
use std::process::exit;
use std::thread::sleep;
use std::time::Duration;

use nf_pmi::Client;

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
    match pmi.get("never-put") {
        Err(nf_pmi::PmiError::KeyNotFound { key }) if key == "never-put" => {}
        other => fail(&format!("get of a missing key gave {other:?}")),
    }
    pmi.finalize().unwrap_or_else(|e| fail(&e.to_string()));
    println!("rank {me} of {n}: wire-up ok");
}

fn affinity() -> Vec<String> {
    // SAFETY: zeroed is a valid empty cpu_set_t; sched_getaffinity writes at most its size;
    // CPU_ISSET reads inside the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            fail("sched_getaffinity failed");
        }
        (0..1024)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c.to_string())
            .collect()
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("nf-launch-testprog: {msg}");
    exit(2)
}
