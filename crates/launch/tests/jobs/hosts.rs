//! Multi-host jobs: ranks placed on hosts in order, started through a remote template,
//! wired up through the launcher's TCP PMI server, failures named by rank and host.
//!
//! The hosts are network namespaces (`nf_testkit::Netns`, needs root and iproute2),
//! started through `ip netns exec {host}`. The root namespace has no address on their
//! network, so the launcher itself runs inside host 0: in-process on a thread that
//! entered it (`Netns::within`), or as `nf-launch-testrun` under `ip netns exec`.
//! The tests at the top need neither root nor namespaces.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test launch_hosts`), which builds the programs it starts.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nf_launch::{Cause, HostSlots, Hosts, LaunchError, LaunchSpec, Outcome, RemoteTemplate};
use nf_testkit::Netns;

/// Every job here ends in seconds; this only keeps a broken launcher from hanging the suite.
const BOUND: Duration = Duration::from_secs(20);
const NETNS_TEMPLATE: &str = "ip netns exec {host}";

fn spec(n: usize, args: &[&str]) -> LaunchSpec {
    let mut spec = LaunchSpec::new(n, env!("CARGO_BIN_EXE_nf-launch-testprog"));
    spec.args = args.iter().map(OsString::from).collect();
    spec.timeout = Some(BOUND);
    spec
}

fn slots(list: &[(&str, usize)]) -> Vec<HostSlots> {
    list.iter()
        .map(|(name, ranks)| HostSlots {
            name: (*name).to_owned(),
            ranks: *ranks,
        })
        .collect()
}

#[test]
fn localhost_ranks_are_started_directly_and_wire_up_over_tcp() {
    let hosts = Hosts::new(slots(&[("localhost", 3)]));
    let mut s = spec(3, &[]);
    s.program = "sh".into();
    s.args = vec![
        "-c".into(),
        r#"case "$NF_PMI_ADDR" in tcp:127.0.0.1:*) ;; *) exit 5;; esac
           test "$NF_HOST" = localhost && test "$NF_LOCAL_SIZE" = 3 && test ${#NF_PMI_SECRET} = 32 &&
           exec "$0" wireup 2"#
            .into(),
        env!("CARGO_BIN_EXE_nf-launch-testprog").into(),
    ];
    let start = Instant::now();
    let report = nf_launch::run_on_hosts(&s, &hosts, |_| {}).expect("launch");
    assert_eq!(report.outcome, Outcome::Success, "{}", report.outcome);
    assert!(start.elapsed() < BOUND);
}

#[test]
fn bad_host_setups_are_refused_before_anything_starts() {
    let no_hook = |job: &str| panic!("cleanup hook ran for {job}");
    let two = Hosts::new(slots(&[("h1", 1), ("h2", 1)]));

    let err = nf_launch::run_on_hosts(&spec(3, &["wireup"]), &two, no_hook).unwrap_err();
    assert!(
        matches!(
            err,
            LaunchError::RanksMismatch {
                nprocs: 3,
                hosts: 2
            }
        ),
        "{err}"
    );

    let err = nf_launch::run_on_hosts(&spec(2, &["wireup"]), &two, no_hook).unwrap_err();
    assert!(matches!(err, LaunchError::PmiBindNeeded { .. }), "{err}");
    assert!(
        err.to_string().contains("h1, h2") && err.to_string().contains("--pmi-bind"),
        "{err}"
    );

    let mut wildcard = two.clone();
    wildcard.pmi_bind = Some("0.0.0.0:0".parse().unwrap());
    let err = nf_launch::run_on_hosts(&spec(2, &["wireup"]), &wildcard, no_hook).unwrap_err();
    assert!(
        matches!(err, LaunchError::PmiBindUnspecified { .. }),
        "{err}"
    );

    let mut bound = two.clone();
    bound.pmi_bind = Some("127.0.0.1:0".parse().unwrap());
    let mut weird_env = spec(2, &["wireup"]);
    weird_env.env = vec![("-i".into(), "x".into())];
    let err = nf_launch::run_on_hosts(&weird_env, &bound, no_hook).unwrap_err();
    assert!(matches!(err, LaunchError::BadEnvName { .. }), "{err}");

    let err = nf_launch::run_on_hosts(&spec(0, &["wireup"]), &Hosts::new(Vec::new()), no_hook)
        .unwrap_err();
    assert!(matches!(err, LaunchError::NoRanks), "{err}");
}

#[test]
fn a_template_that_cannot_start_names_rank_and_host() {
    let mut hosts = Hosts::new(slots(&[("localhost", 1), ("far", 1)]));
    hosts.remote = Arc::new(RemoteTemplate::parse("/nonexistent/nf-rsh {host}").unwrap());
    hosts.pmi_bind = Some("127.0.0.1:0".parse().unwrap());
    let mut hooked = false;
    let err =
        nf_launch::run_on_hosts(&spec(2, &["sleep", "60"]), &hosts, |_| hooked = true).unwrap_err();
    assert!(
        matches!(&err, LaunchError::SpawnRemote { rank: 1, host, .. } if host == "far"),
        "{err}"
    );
    assert!(err.to_string().contains("--remote"), "{err}");
    assert!(hooked, "the cleanup hook runs once something was started");
}

#[test]
fn words_for_ssh_are_quoted_for_the_remote_shell() {
    // A stand-in for ssh with its semantics: the words after the host are joined with
    // spaces and run by a shell.
    let dir = std::env::temp_dir().join(format!("nf-fake-ssh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ssh = dir.join("ssh");
    std::fs::write(&ssh, "#!/bin/sh\nshift\nexec sh -c \"$*\"\n").unwrap();
    std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut hosts = Hosts::new(slots(&[("far", 2)]));
    hosts.remote = Arc::new(RemoteTemplate::parse(&format!("{} {{host}}", ssh.display())).unwrap());
    hosts.pmi_bind = Some("127.0.0.1:0".parse().unwrap());
    let mut s = spec(2, &[]);
    s.program = "sh".into();
    s.env = vec![("NF_TEST_EXTRA".into(), "it's $HOME; `x`".into())];
    s.args = vec![
        "-c".into(),
        r#"test "$NF_TEST_EXTRA" = 'it'"'"'s $HOME; `x`' && test "$1" = "two words" &&
           test "$NF_HOST" = far && exec "$0" wireup 1"#
            .into(),
        env!("CARGO_BIN_EXE_nf-launch-testprog").into(),
        "two words".into(),
    ];
    let report = nf_launch::run_on_hosts(&s, &hosts, |_| {});
    std::fs::remove_dir_all(&dir).unwrap();
    let outcome = report.expect("launch").outcome;
    assert_eq!(outcome, Outcome::Success, "{outcome}");
}

/// Two namespace hosts with two ranks each; the launcher's PMI server on host 0.
fn two_by_two(net: &Netns) -> Hosts {
    Hosts {
        hosts: slots(&[(net.host(0), 2), (net.host(1), 2)]),
        remote: Arc::new(RemoteTemplate::parse(NETNS_TEMPLATE).unwrap()),
        pmi_bind: Some(SocketAddr::new(net.addr(0), 0)),
    }
}

fn netns(k: usize) -> Netns {
    Netns::create(k).unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"))
}

/// Runs `spec` across `hosts` with the launcher inside host 0.
fn run_from_host0(net: &Netns, spec: &LaunchSpec, hosts: &Hosts) -> Outcome {
    let start = Instant::now();
    let report = net
        .within(0, || nf_launch::run_on_hosts(spec, hosts, |_| {}))
        .expect("enter host 0")
        .expect("launch");
    assert!(start.elapsed() < BOUND, "job took {:?}", start.elapsed());
    report.outcome
}

/// Waits for a process, at most [`BOUND`].
fn finish(child: std::process::Child) -> Output {
    nf_testkit::finish_within(child, BOUND, "the launcher")
}

#[test]
fn two_hosts_wire_up_through_tcp_pmi_with_tagged_output() {
    let net = netns(2);
    let list = format!("{}:2,{}:2", net.host(0), net.host(1));
    let bind = SocketAddr::new(net.addr(0), 0).to_string();
    let child = net
        .exec(0, env!("CARGO_BIN_EXE_nf-launch-testrun"))
        .args([
            "--hosts",
            &list,
            "--remote",
            NETNS_TEMPLATE,
            "--pmi-bind",
            &bind,
        ])
        .args(["--tag-output", "--timeout", "20", "--"])
        .arg(env!("CARGO_BIN_EXE_nf-launch-testprog"))
        .args(["wireup", "3"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nf-launch-testrun in host 0");
    let out = finish(child);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for rank in 0..4 {
        let (h, local) = (rank / 2, rank % 2);
        let host = net.host(h);
        let ns = std::fs::metadata(net.path(h))
            .expect("namespace handle")
            .ino();
        let want = format!(
            "[{rank}@{host}] rank {rank} of 4: wire-up ok (host {host}, local {local} of 2, netns {ns})"
        );
        assert!(
            stdout.lines().any(|l| l == want),
            "want {want:?} in\n{stdout}"
        );
    }
}

#[test]
fn a_rank_killed_on_one_host_is_named_with_its_host() {
    let net = netns(2);
    let outcome = run_from_host0(&net, &spec(4, &["kill", "2"]), &two_by_two(&net));
    match &outcome {
        Outcome::RankFailed {
            rank: 2,
            cause: Cause::Signal(9),
            host: Some(host),
            ..
        } => assert_eq!(host, net.host(1)),
        other => panic!("expected rank 2 on host 1 killed, got {other}"),
    }
    let text = outcome.to_string();
    let want = format!("rank 2 on host {} was killed by signal 9", net.host(1));
    assert!(text.contains(&want), "{text}");
    assert_eq!(outcome.exit_code(), 137);
}

#[test]
fn all_ranks_of_one_host_killed_ends_the_job_naming_the_host() {
    let net = netns(2);
    let gone = net.host(1).to_owned();
    let outcome = run_from_host0(&net, &spec(4, &["killhost", &gone]), &two_by_two(&net));
    match &outcome {
        Outcome::HostLost { host, ranks } => {
            assert_eq!(host, &gone);
            let mut lost: Vec<usize> = ranks.iter().map(|(r, _)| *r).collect();
            lost.sort_unstable();
            assert_eq!(lost, [2, 3]);
            assert!(
                ranks.iter().all(|(_, c)| *c == Cause::Signal(9)),
                "{outcome}"
            );
        }
        other => panic!("expected host {gone} lost, got {other}"),
    }
    assert_ne!(outcome.exit_code(), 0);
    assert!(
        outcome.to_string().contains(&format!("host {gone} lost")),
        "{outcome}"
    );
}

#[test]
fn strangers_on_the_pmi_port_are_refused_and_the_job_is_unaffected() {
    let net = netns(2);
    // The last rank (on host 1) probes the port with garbage and wrong secrets first.
    let outcome = run_from_host0(&net, &spec(4, &["intrude"]), &two_by_two(&net));
    assert_eq!(outcome, Outcome::Success, "{outcome}");
}

#[test]
fn a_remote_template_gets_the_environment_on_its_command_line() {
    // `env -i` wipes the inherited environment: only the command line's variables remain.
    let net = netns(2);
    let mut hosts = two_by_two(&net);
    hosts.remote = Arc::new(RemoteTemplate::parse("ip netns exec {host} env -i").unwrap());
    let mut s = spec(4, &["wireup", "1"]);
    s.env = vec![("NF_TEST_EXTRA".into(), "it's here".into())];
    s.program = "/bin/sh".into();
    s.args = vec![
        "-c".into(),
        r#"test "$NF_TEST_EXTRA" = "it's here" && exec "$0" wireup 1"#.into(),
        env!("CARGO_BIN_EXE_nf-launch-testprog").into(),
    ];
    let outcome = run_from_host0(&net, &s, &hosts);
    assert_eq!(outcome, Outcome::Success, "{outcome}");
}
