//! Ranks confined to fewer CPUs than there are ranks (`taskset`, as a Slurm or
//! container cpuset confines them) must yield instead of spinning against each other;
//! ranks with a CPU each (also when `nf run --bind-to core` pins them) busy-poll.

mod bench_support;

use std::process::Command;

use bench_support::{finish, text};

const PINGPONG: &[&str] = &[
    "bench", "pingpong", "--sizes", "8", "--iters", "200", "--warmup", "20", "--quiet",
];

/// How the ranks of `cmd` waited, from the report's `# ranks waiting by:` line.
fn waiting(cmd: &mut Command) -> String {
    let out = finish(cmd.env_remove("NF_WAIT").env_remove("NF_JOB_CPUS"));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("# ranks waiting by: "))
        .unwrap_or_else(|| panic!("no waiting line in:\n{stdout}"))
        .to_owned()
}

/// `taskset -c CPUS nf ARGS`.
fn confined(cpus: &str, args: &[&str]) -> Command {
    let mut c = Command::new("taskset");
    c.args(["-c", cpus, env!("CARGO_BIN_EXE_nf")]).args(args);
    c
}

/// The first `n` CPUs this test may run on, as taskset's list (`None`: fewer).
fn cpus(n: usize) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned();
    let allowed: Vec<String> = list
        .split(',')
        .flat_map(|r| match r.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().unwrap()..=b.parse().unwrap()).collect(),
            None => vec![r.parse::<usize>().unwrap()],
        })
        .take(n)
        .map(|c| c.to_string())
        .collect();
    (allowed.len() == n && nf_sys::cpus::usable() >= n).then(|| allowed.join(","))
}

#[test]
fn two_ranks_on_one_cpu_yield() {
    let one = cpus(1).expect("a CPU to run on");
    assert_eq!(waiting(&mut confined(&one, PINGPONG)), "yield");
    // The same through `nf run` (the launcher counts its CPUs, the ranks inherit).
    let mut args = vec!["run", "-n", "2", "--"];
    args.push(env!("CARGO_BIN_EXE_nf"));
    args.extend(PINGPONG);
    assert_eq!(waiting(&mut confined(&one, &args)), "yield");
}

#[test]
fn two_ranks_with_a_cpu_each_busy_poll_also_when_pinned() {
    // On a one-CPU machine there is nothing to show: say so by failing loudly rather
    // than passing without having looked.
    let two = cpus(2).expect("this test needs 2 CPUs it may run on");
    assert_eq!(waiting(&mut confined(&two, PINGPONG)), "busy-poll");
    let mut args = vec!["run", "-n", "2", "--bind-to", "core", "--"];
    args.push(env!("CARGO_BIN_EXE_nf"));
    args.extend(PINGPONG);
    assert_eq!(waiting(&mut confined(&two, &args)), "busy-poll");
}
