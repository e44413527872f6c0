//! The namespace fixture itself: hosts come up, reach each other and nothing else, and
//! leave nothing behind. Needs root and iproute2 (and iputils-ping for the ping checks).

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nf_testkit::{listed, Netns};

fn create(k: usize) -> Netns {
    Netns::create(k).unwrap_or_else(|e| panic!("cannot create {k} network namespaces: {e}"))
}

/// Interface names of the root namespace.
fn root_links() -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .expect("ip link");
    let mut links: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().to_owned()))
        .collect();
    links.sort();
    links
}

/// Runs a command to its end, at most 10 s.
fn bounded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (ping is in iputils-ping)"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("{cmd:?} still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn ping(net: &Netns, from: usize, to: usize) -> bool {
    let mut cmd = net.exec(from, "ping");
    cmd.args(["-c1", "-W2", &net.addr(to).to_string()]);
    bounded(cmd).status.success()
}

#[test]
fn hosts_come_up_reach_each_other_and_vanish_on_drop() {
    let before = root_links();
    let net = create(3);
    let names: Vec<String> = (0..3)
        .map(|i| net.host(i).to_owned())
        .chain([net.bridge().to_owned()])
        .collect();
    let now = listed();
    for n in &names {
        assert!(now.contains(n), "{n} listed in {now:?}");
    }
    assert_eq!(root_links(), before, "the root namespace got no interface");
    for (a, b) in [(0, 1), (1, 2), (2, 0)] {
        assert!(
            ping(&net, a, b),
            "{} cannot ping {}",
            net.host(a),
            net.addr(b)
        );
    }
    // Each address lives in its host only: bindable there, not in the root namespace.
    let at = SocketAddr::new(net.addr(1), 0);
    net.within(1, || {
        TcpListener::bind(at).expect("bind host 1's address inside host 1")
    })
    .unwrap();
    assert!(
        TcpListener::bind(at).is_err(),
        "{at} is not in the root namespace"
    );
    assert!(net.within(0, || TcpListener::bind(at)).unwrap().is_err());
    drop(net);
    let after = listed();
    for n in &names {
        assert!(!after.contains(n), "{n} still listed after drop: {after:?}");
    }
    assert_eq!(root_links(), before);
}

#[test]
fn a_panicking_test_leaves_nothing_behind() {
    let mut names = Vec::new();
    let mut stray = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let net = create(2);
        names = vec![
            net.host(0).to_owned(),
            net.host(1).to_owned(),
            net.bridge().to_owned(),
        ];
        // A process that the failed test leaves running inside a host.
        stray = Some(
            net.exec(1, "sleep")
                .arg("60")
                .spawn()
                .expect("start a stray"),
        );
        panic!("the test fails here");
    }));
    assert!(result.is_err());
    let after = listed();
    for n in &names {
        assert!(!after.contains(n), "{n} still listed: {after:?}");
    }
    let mut stray = stray.expect("the stray was started");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = stray.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the stray survived the drop"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the stray was killed"
    );
}

#[test]
fn a_link_taken_down_cuts_the_host_off_until_it_comes_back() {
    let net = create(2);
    assert!(ping(&net, 0, 1));
    net.link_down(1).unwrap();
    assert!(!ping(&net, 0, 1), "host 1 is cut off");
    net.link_up(1).unwrap();
    assert!(ping(&net, 0, 1), "host 1 is back");
}

#[test]
fn fixtures_get_their_own_names_and_networks() {
    let a = create(1);
    let b = create(1);
    assert_ne!(a.host(0), b.host(0));
    assert_ne!(a.addr(0), b.addr(0));
    assert!(a.host(0).starts_with(&format!("nf{}-", std::process::id())));
    assert_eq!(a.len(), 1);
    assert!(Netns::create(0).is_err());
}
