//! The core across hosts: jobs of `nf-core-check` on 2–3 network-namespace hosts
//! (`nf_testkit::Netns`, root and iproute2 needed), started by the real launcher
//! through `ip netns exec {host}` with its PMI server on host 0, once over tcp, once
//! over ofi (libfabric's tcp provider) and, for the data and some fault tests, once
//! over a route split by size (small messages over one, large over the other, order
//! kept) between the hosts; and the default route when everything is allowed.
//!
//! - data: integrity (random sizes, every byte checked, per-pair order) and a
//!   many-to-one flood across 3 hosts; a mixed job of 2 hosts × 2 ranks (shm inside
//!   a host, the network across);
//! - faults: a host's ranks killed mid-transfer (the job ends naming the host); a
//!   host's ranks vanishing mid-transfer (the survivors report the lost peers
//!   themselves); a link cut mid-transfer (an error within the dead-peer time, no
//!   hang);
//! - lanes: the data tests again with large tcp messages striped across 3
//!   connections per pair (`NF_TCP_LANES`), alone and beside a split route, with the
//!   striped messages counted; a host killed mid-stripe ends the job naming it, and
//!   one vanishing mid-stripe is the survivors' error;
//! - strangers on the listening ports while a job streams: refused, the job's data
//!   unaffected.
//!
//! Every job is bounded by [`BOUND`]; faults use `NF_DEAD_AFTER_MS` so that a silent
//! peer is lost in seconds.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test core_hosts`), which builds the programs it starts.

use std::ffi::OsString;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nf_launch::{Cause, HostSlots, Hosts, LaunchSpec, Outcome, RemoteTemplate};
use nf_testkit::Netns;
use nf_transport::ofi::{OfiConfig, OfiTransport};
use nf_transport::tcp::wire::{Header, Hello};
use nf_transport::{Messaging, SendStatus};

/// Far above what any job here takes; only keeps a broken job from hanging the suite.
const BOUND: Duration = Duration::from_secs(90);
/// How soon a silent network peer is lost in the fault tests.
const DEAD_AFTER_MS: &str = "3000";
const CHECK: &str = env!("CARGO_BIN_EXE_nf-core-check");

/// How ranks on different hosts talk, as settings; each keeps shm inside a host.
type Via = &'static [(&'static str, &'static str)];
/// Over tcp alone.
const TCP: Via = &[("NF_TRANSPORTS", "shm,tcp")];
/// Over ofi alone.
const OFI: Via = &[("NF_TRANSPORTS", "shm,ofi")];
/// Small messages over tcp, from 4 KiB over ofi: the order of each pair's messages
/// must hold across the two (the random sizes of the workloads cross 4 KiB often).
const SPLIT: Via = &[
    ("NF_TRANSPORTS", "shm,tcp,ofi"),
    ("NF_NET_ROUTE", "tcp/ofi@4096"),
];
/// The reverse split: small over ofi, large over tcp.
const SPLIT_REVERSED: Via = &[
    ("NF_TRANSPORTS", "shm,tcp,ofi"),
    ("NF_NET_ROUTE", "ofi/tcp@4096"),
];

/// Three tcp connections per pair, striping from 64 KiB (so that most large random
/// sizes of the workloads are cut, into 2 to 3 pieces).
const LANES: Via = &[("NF_TCP_LANES", "3"), ("NF_TCP_STRIPE", "65536")];

/// `via`'s settings followed by `more`.
fn with<'a>(via: &[(&'a str, &'a str)], more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    via.iter().copied().chain(more.iter().copied()).collect()
}

/// K namespace hosts, a report directory and a private shm directory.
struct Cluster {
    net: Netns,
    dir: tempfile::TempDir,
    shm: tempfile::TempDir,
}

impl Cluster {
    fn new(k: usize) -> Cluster {
        let net = Netns::create(k)
            .unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"));
        Cluster {
            net,
            dir: tempfile::tempdir().expect("a report directory"),
            shm: tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm"),
        }
    }

    /// `per_host[i]` ranks on host i; the launcher's PMI server on host 0.
    fn hosts(&self, per_host: &[usize]) -> Hosts {
        Hosts {
            hosts: per_host
                .iter()
                .enumerate()
                .map(|(i, &ranks)| HostSlots {
                    name: self.net.host(i).to_owned(),
                    ranks,
                })
                .collect(),
            remote: std::sync::Arc::new(RemoteTemplate::parse("ip netns exec {host}").unwrap()),
            pmi_bind: Some(SocketAddr::new(self.net.addr(0), 0)),
        }
    }

    fn spec(&self, n: usize, args: &[&str], env: &[(&str, &str)]) -> LaunchSpec {
        let mut spec = LaunchSpec::new(n, CHECK);
        spec.args = args.iter().map(OsString::from).collect();
        spec.timeout = Some(BOUND);
        spec.tag_output = true;
        spec.env = env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .chain([("NF_SHM_DIR".into(), self.shm.path().into())])
            .collect();
        spec
    }

    /// Runs `nf-core-check ARGS` with `per_host` ranks per host; checks the bound and
    /// that no shm segment outlives the job.
    fn run(&self, per_host: &[usize], args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let n = per_host.iter().sum();
        let (spec, hosts) = (self.spec(n, args, env), self.hosts(per_host));
        let start = Instant::now();
        let shm = self.shm.path().to_owned();
        let report = self
            .net
            .within(0, || {
                nf_launch::run_on_hosts(&spec, &hosts, |job| {
                    nf_transport::shm::remove_job_segments(&shm, job);
                })
            })
            .expect("enter host 0")
            .expect("launch");
        assert!(start.elapsed() < BOUND, "job took {:?}", start.elapsed());
        let left: Vec<_> = std::fs::read_dir(self.shm.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "segments left behind: {left:?}");
        report.outcome
    }

    fn expect_success(&self, per_host: &[usize], args: &[&str], env: &[(&str, &str)]) {
        let outcome = self.run(per_host, args, env);
        assert_eq!(
            outcome,
            Outcome::Success,
            "{args:?} on {per_host:?}: {outcome}"
        );
    }

    fn report(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }

    fn dir(&self) -> &str {
        self.dir.path().to_str().expect("a UTF-8 temporary path")
    }
}

/// Waits (bounded) until `dir` holds `NAME-R` for every rank `0..n`.
fn wait_for_reports(dir: &Path, name: &str, n: usize) {
    nf_testkit::eventually(&format!("every rank's {name}- report"), BOUND, || {
        (0..n).all(|r| dir.join(format!("{name}-{r}")).exists())
    });
}

fn require_ofi() {
    if let Err(e) = nf_transport::ofi::available() {
        panic!("{e}\nthe ofi tests need libfabric: run scripts/setup.sh, then rebuild");
    }
}

fn data_across_three_hosts(transports: Via) {
    let c = Cluster::new(3);
    let env = with(transports, &[]);
    c.expect_success(
        &[1, 1, 1],
        &["integrity", "7", "8", &(2 << 20).to_string()],
        &env,
    );
    c.expect_success(&[1, 1, 1], &["flood", "2000", "3000"], &env);
    c.expect_success(&[1, 1, 1], &["collectives"], &env);
}

#[test]
fn integrity_ordering_and_flood_across_three_hosts_over_tcp() {
    data_across_three_hosts(TCP);
}

#[test]
fn integrity_ordering_and_flood_across_three_hosts_over_ofi() {
    require_ofi();
    data_across_three_hosts(OFI);
}

/// 2 hosts × 2 ranks over `via`: the routes are as expected (`net`: how a rank reaches
/// the other host's ranks), and messages arrive intact and in order.
fn mixed_two_by_two(via: Via, net: &str) {
    let c = Cluster::new(2);
    let env = with(via, &[]);
    let hosts = [0, 0, 1, 1].map(|h| c.net.host(h)).join(",");
    c.expect_success(&[2, 2], &["routes", &hosts, net], &env);
    c.expect_success(&[2, 2], &["integrity", "8", "10", "3000000"], &env);
}

#[test]
fn mixed_job_two_hosts_of_two_ranks_shm_inside_tcp_across() {
    mixed_two_by_two(TCP, "tcp");
}

#[test]
fn mixed_job_two_hosts_of_two_ranks_shm_inside_ofi_across() {
    require_ofi();
    mixed_two_by_two(OFI, "ofi");
}

#[test]
fn mixed_job_two_hosts_of_two_ranks_split_by_size_across() {
    require_ofi();
    mixed_two_by_two(SPLIT, "tcp/ofi@4096");
    mixed_two_by_two(SPLIT_REVERSED, "ofi/tcp@4096");
}

/// Every transport allowed and nothing said: between hosts the default route for
/// libfabric's tcp provider is ninefold's tcp (`netroute.rs`, rule 3).
#[test]
fn the_default_route_between_hosts_over_a_socket_provider_is_tcp() {
    require_ofi();
    mixed_two_by_two(&[("NF_OFI_PROVIDER", "tcp")], "tcp");
}

#[test]
fn integrity_ordering_and_flood_across_three_hosts_split_by_size() {
    require_ofi();
    data_across_three_hosts(SPLIT);
}

/// Runs a stream with `per_host` ranks per host; once every rank streams, calls
/// `meddle` (from the test, while the job runs), then asks the ranks to stop; returns
/// the job's outcome.
fn stream_and(
    c: &Cluster,
    per_host: &[usize],
    env: &[(&str, &str)],
    meddle: impl FnOnce(),
) -> Outcome {
    stream_of_and(c, per_host, env, 70000, meddle)
}

/// [`stream_and`] with messages of up to `max` bytes.
fn stream_of_and(
    c: &Cluster,
    per_host: &[usize],
    env: &[(&str, &str)],
    max: usize,
    meddle: impl FnOnce(),
) -> Outcome {
    let max = max.to_string();
    thread::scope(|s| {
        let job = s.spawn(|| c.run(per_host, &["stream", "60", &max, c.dir()], env));
        let stop = StopOnDrop(c.dir.path());
        wait_for_reports(c.dir.path(), "streaming", per_host.iter().sum());
        meddle();
        drop(stop);
        job.join().expect("job thread")
    })
}

/// Every process of host 1 is SIGKILLed at once while all ranks stream.
fn host_killed_mid_transfer(transports: Via) {
    host_killed_mid_stream(transports, 70000);
}

/// [`host_killed_mid_transfer`] with messages of up to `max` bytes.
fn host_killed_mid_stream(transports: &[(&str, &str)], max: usize) {
    let c = Cluster::new(2);
    let env = with(transports, &[("NF_DEAD_AFTER_MS", DEAD_AFTER_MS)]);
    let outcome = stream_of_and(&c, &[2, 2], &env, max, || c.net.kill_all(1));
    let gone = c.net.host(1);
    match &outcome {
        Outcome::HostLost { host, ranks } => {
            assert_eq!(host, gone, "{outcome}");
            let mut lost: Vec<usize> = ranks.iter().map(|(r, _)| *r).collect();
            lost.sort_unstable();
            assert_eq!(lost, [2, 3], "{outcome}");
        }
        other => panic!("expected host {gone} lost, got {other}"),
    }
    assert_ne!(outcome.exit_code(), 0);
    assert!(outcome.to_string().contains(gone), "{outcome}");
}

#[test]
fn a_host_killed_mid_transfer_ends_the_job_naming_it_over_tcp() {
    host_killed_mid_transfer(TCP);
}

#[test]
fn a_host_killed_mid_transfer_ends_the_job_naming_it_over_ofi() {
    require_ofi();
    host_killed_mid_transfer(OFI);
}

#[test]
fn a_host_killed_mid_transfer_ends_the_job_naming_it_split_by_size() {
    require_ofi();
    host_killed_mid_transfer(SPLIT);
}

/// The rank whose own error (exit code 1) ended the job, whether the launcher reports
/// it alone or, when its host has no other rank left, as that host lost.
fn failed_on_its_own(outcome: &Outcome) -> Option<usize> {
    match outcome {
        Outcome::RankFailed {
            rank,
            cause: Cause::Exit(1),
            ..
        } => Some(*rank),
        Outcome::HostLost { ranks, .. } => match ranks.first() {
            Some(&(rank, Cause::Exit(1))) => Some(rank),
            _ => None,
        },
        _ => None,
    }
}

/// The victims exit 0 without clean-up, so the launcher sees nothing wrong: only the
/// survivors' own errors can end the job.
fn host_vanished_mid_transfer(transports: Via) {
    host_vanished_mid_stream(transports, 70000);
}

/// [`host_vanished_mid_transfer`] with messages of up to `max` bytes; the failed
/// survivor's error report.
fn host_vanished_mid_stream(transports: &[(&str, &str)], max: usize) -> String {
    let c = Cluster::new(2);
    let victim = c.net.host(1).to_owned();
    let env = with(
        transports,
        &[
            ("NF_DEAD_AFTER_MS", DEAD_AFTER_MS),
            ("NF_CHECK_VANISH_HOST", victim.as_str()),
            ("NF_CHECK_VANISH_AFTER", "40"),
        ],
    );
    let max = max.to_string();
    let outcome = c.run(&[2, 2], &["stream", "60", &max, c.dir()], &env);
    let Some(rank) = failed_on_its_own(&outcome) else {
        panic!("expected a survivor to fail on its own, got {outcome}");
    };
    assert!(rank < 2, "{outcome}");
    let error = c
        .report(&format!("error-{rank}"))
        .unwrap_or_else(|| panic!("rank {rank} failed without an error report"));
    assert!(
        error.contains("rank 2") || error.contains("rank 3"),
        "rank {rank}'s error does not name a vanished rank: {error}"
    );
    error
}

#[test]
fn a_host_vanishing_mid_transfer_is_an_error_on_the_survivors_over_tcp() {
    host_vanished_mid_transfer(TCP);
}

#[test]
fn a_host_vanishing_mid_transfer_is_an_error_on_the_survivors_over_ofi() {
    require_ofi();
    host_vanished_mid_transfer(OFI);
}

/// Large tcp messages striped across 3 connections per pair on 2 and 3 hosts (and 2
/// hosts × 2 ranks, shm inside): every byte and each pair's order checked, and every
/// rank must have sent and received striped messages; without lanes, none.
#[test]
fn striped_across_tcp_lanes_messages_arrive_intact_and_in_order() {
    let striped = with(TCP, &[("NF_CHECK_EXPECT_STRIPED", "1")]);
    let env = with(&striped, LANES);
    let big = (6 << 20).to_string();
    for per_host in [&[1, 1][..], &[1, 1, 1], &[2, 2]] {
        let c = Cluster::new(per_host.len());
        c.expect_success(per_host, &["integrity", "11", "40", &big], &env);
    }
    let c = Cluster::new(2);
    let plain = with(TCP, &[("NF_CHECK_EXPECT_STRIPED", "0")]);
    c.expect_success(&[1, 1], &["integrity", "11", "4", &big], &plain);
}

/// Lanes beside a route split by size: with large messages over tcp (`ofi/tcp@4096`)
/// the leads cross the order gates with the small messages over ofi; with large
/// messages over ofi (`tcp/ofi@4096`) nothing is striped.
#[test]
fn striped_across_tcp_lanes_beside_a_split_route() {
    require_ofi();
    let big = (3 << 20).to_string();
    for (split, expect) in [(SPLIT_REVERSED, "1"), (SPLIT, "0")] {
        let c = Cluster::new(3);
        let env = with(split, LANES);
        let env = with(&env, &[("NF_CHECK_EXPECT_STRIPED", expect)]);
        c.expect_success(&[1, 1, 1], &["integrity", "13", "10", &big], &env);
    }
}

/// A host whose ranks are killed while large messages are striped to and from them:
/// the job ends naming the host, in bounded time.
#[test]
fn a_host_killed_mid_stripe_ends_the_job_naming_it() {
    host_killed_mid_stream(&with(TCP, LANES), 1 << 20);
}

/// A host whose ranks vanish while large messages are striped to and from them: the
/// survivors fail on their own, naming a vanished rank (a lane's lost connection, or
/// a part that never came, within the dead-peer time), and nothing hangs.
#[test]
fn a_host_vanishing_mid_stripe_is_an_error_on_the_survivors() {
    let error = host_vanished_mid_stream(&with(TCP, LANES), 1 << 20);
    assert!(
        error.contains("StripeStats { sent: ") && !error.contains("sent: 0,"),
        "nothing was striped before the host vanished: {error}"
    );
}

/// Rank 1 exits quietly after a barrier while the others wait in the next one, on
/// three hosts: nothing is sent to it that could fail, so only liveness checks can
/// tell; each survivor must report `PeerDied` naming rank 1, not hang.
fn vanished_while_others_wait(transports: Via) {
    let c = Cluster::new(3);
    let env = with(
        transports,
        &[
            ("NF_DEAD_AFTER_MS", DEAD_AFTER_MS),
            ("NF_PEER_CHECK_MS", "100"),
        ],
    );
    c.expect_success(&[1, 1, 1], &["vanish", "1"], &env);
}

#[test]
fn a_peer_vanishing_while_others_wait_is_noticed_over_tcp() {
    vanished_while_others_wait(TCP);
}

#[test]
fn a_peer_vanishing_while_others_wait_is_noticed_over_ofi() {
    require_ofi();
    vanished_while_others_wait(OFI);
}

/// One rank per host streams; the link of host 1 is cut once both stream; a rank must
/// fail on its own (an error naming the other rank), not hang until the bound.
fn link_cut_mid_transfer(transports: Via) {
    let c = Cluster::new(2);
    let env = with(transports, &[("NF_DEAD_AFTER_MS", DEAD_AFTER_MS)]);
    let outcome = stream_and(&c, &[1, 1], &env, || {
        c.net.link_down(1).expect("take host 1's link down")
    });
    let Some(rank) = failed_on_its_own(&outcome) else {
        panic!("expected a rank to fail on its own after the cut, got {outcome}");
    };
    let error = c
        .report(&format!("error-{rank}"))
        .unwrap_or_else(|| panic!("rank {rank} failed without an error report"));
    assert!(
        error.contains(&format!("rank {}", 1 - rank)),
        "rank {rank}'s error does not name its peer: {error}"
    );
}

#[test]
fn a_cut_link_is_an_error_in_bounded_time_over_tcp() {
    link_cut_mid_transfer(TCP);
}

#[test]
fn a_cut_link_is_an_error_in_bounded_time_over_ofi() {
    require_ofi();
    link_cut_mid_transfer(OFI);
}

#[test]
fn a_cut_link_is_an_error_in_bounded_time_split_by_size() {
    require_ofi();
    link_cut_mid_transfer(SPLIT);
}

/// One rank per host waits for a message that never comes; the link of host 1 is cut.
/// Nothing is in flight, so only keepalives (tcp) or heartbeat probes (ofi) can tell:
/// each rank must report the other lost within the dead-peer time, not wait forever.
fn link_cut_while_waiting(transports: Via) {
    let c = Cluster::new(2);
    let env = with(transports, &[("NF_DEAD_AFTER_MS", DEAD_AFTER_MS)]);
    let outcome = thread::scope(|s| {
        let job = s.spawn(|| c.run(&[1, 1], &["idle", c.dir()], &env));
        wait_for_reports(c.dir.path(), "addr", 2);
        c.net.link_down(1).expect("take host 1's link down");
        job.join().expect("job thread")
    });
    assert_eq!(outcome, Outcome::Success, "{outcome}");
    for r in 0..2 {
        let done = c.report(&format!("done-{r}")).expect("a report per rank");
        assert!(done.contains(&format!("lost rank {}", 1 - r)), "{done}");
    }
}

#[test]
fn a_cut_link_while_waiting_is_noticed_over_tcp() {
    link_cut_while_waiting(TCP);
}

#[test]
fn a_cut_link_while_waiting_is_noticed_over_ofi() {
    require_ofi();
    link_cut_while_waiting(OFI);
}

/// The address of `transport` in an `addr-R` report.
fn address_of(report: &str, transport: &str) -> String {
    report
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{transport} ")))
        .unwrap_or_else(|| panic!("no {transport} address in {report:?}"))
        .to_owned()
}

/// Bytes that must each be refused by a rank's tcp listener.
fn tcp_intrusions() -> Vec<(&'static str, Vec<u8>)> {
    let hello = |cookie: u64, max_payload: u32| {
        Hello {
            cookie,
            rank: 0,
            size: 2,
            max_payload,
        }
        .encode()
        .to_vec()
    };
    let absurd = Header {
        payload_len: u32::MAX,
        ..Header::data(0, 0)
    };
    vec![
        ("garbage", vec![0xA5; 200]),
        ("truncated hello", hello(1, 1)[..9].to_vec()),
        ("wrong job cookie", hello(0xbad_c00c1e, 256 * 1024)),
        (
            "a frame of absurd length instead of a hello",
            absurd.encode().to_vec(),
        ),
    ]
}

/// Sends each intrusion on its own connection to `addr` and waits (bounded) until
/// the listener closes it.
fn knock_tcp(addr: SocketAddr) {
    for (what, bytes) in tcp_intrusions() {
        eprintln!("stranger on {addr}: {what}");
        let mut s =
            TcpStream::connect(addr).unwrap_or_else(|e| panic!("{what}: connect {addr}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        // Closed (end of stream), or reset because our bytes were left unread.
        let r = std::io::Read::read_to_end(&mut s, &mut sink);
        let closed = match &r {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(
            closed,
            "{what}: the listener did not close the connection: {r:?}"
        );
    }
}

/// A stranger's ofi endpoint (another job's cookie) sends packets to `victim` (hex
/// endpoint name); raw garbage also goes to the provider's own port.
fn knock_ofi(bind: &str, victim: &str) -> usize {
    let name = hex::decode(victim).expect("hex address");
    // The address ends in the victim's max_payload (u32 LE) and a 4-byte tag; a
    // stranger must claim the same to be let in.
    let at = name.len() - 8;
    let max_payload = u32::from_le_bytes(name[at..at + 4].try_into().unwrap()) as usize;
    let cfg = OfiConfig {
        node: Some(bind.to_owned()),
        max_payload,
        cookie: 0x5742_4e47_4552,
        dead_after: Duration::from_secs(5),
        ..OfiConfig::default()
    };
    let mut stranger = OfiTransport::open(cfg, 0, 2).expect("a stranger's endpoint");
    stranger
        .connect(&[None, Some(name.clone())])
        .expect("insert the victim");
    let mut sent = 0;
    let start = Instant::now();
    while sent < 20 && start.elapsed() < BOUND {
        match stranger.try_send(1, b"not-your-job", &[0xEE; 300]) {
            Ok(SendStatus::Sent) => sent += 1,
            Ok(SendStatus::NoCredit) => thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("stranger's send failed: {e}"),
        }
        let _ = stranger.poll();
    }
    // The tcp provider names its endpoint with a sockaddr_in: family, port, address.
    if name.len() >= 8 && u16::from_le_bytes([name[0], name[1]]) == libc::AF_INET as u16 {
        let port = u16::from_be_bytes([name[2], name[3]]);
        let ip = std::net::Ipv4Addr::new(name[4], name[5], name[6], name[7]);
        if let Ok(mut s) = TcpStream::connect((ip, port)) {
            let _ = s.write_all(&[0x5A; 512]);
        }
    }
    // Let the stranger's packets leave before it closes.
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        let _ = stranger.poll();
    }
    sent
}

/// Writes `DIR/stop` when dropped, so the job ends even if the test panics first.
struct StopOnDrop<'a>(&'a Path);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("stop"), "");
    }
}

fn strangers_while_streaming(transport: &str) {
    let c = Cluster::new(2);
    let transports = format!("shm,{transport}");
    let env = [("NF_TRANSPORTS", transports.as_str())];
    let outcome = stream_and(&c, &[1, 1], &env, || {
        // Rank 1 runs on host 1; the stranger knocks from host 0.
        let victim = address_of(&c.report("addr-1").expect("rank 1's addresses"), transport);
        let bind = c.net.addr(0).to_string();
        c.net
            .within(0, || match transport {
                "tcp" => knock_tcp(victim.parse().expect("ip:port")),
                _ => assert_eq!(knock_ofi(&bind, &victim), 20),
            })
            .expect("enter host 0");
    });
    assert_eq!(outcome, Outcome::Success, "{outcome}");
    let done = c.report("done-1").expect("rank 1's report");
    assert!(done.contains("stream ok"), "{done}");
    if transport == "ofi" {
        // Every stranger's packet reached rank 1's transport and was dropped there.
        let absorbed: u64 = done
            .split(", ")
            .find_map(|p| p.strip_suffix(" bad packets absorbed\n"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(absorbed >= 20, "{done}");
    }
}

#[test]
fn strangers_on_the_tcp_port_leave_a_running_job_unaffected() {
    strangers_while_streaming("tcp");
}

#[test]
fn strangers_on_the_ofi_endpoint_leave_a_running_job_unaffected() {
    require_ofi();
    strangers_while_streaming("ofi");
}

/// `mpirun` (Open MPI) across two namespace hosts, two ranks each, started through
/// the committed agent that runs its daemons inside the namespaces.
#[test]
fn mpirun_with_two_ranks_per_namespace_host_completes_integrity() {
    let c = Cluster::new(2);
    let agent: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../../tests/netns/mpirun-agent.sh",
    ]
    .iter()
    .collect();
    let subnet = format!("{}/24", c.net.addr(0));
    let hosts = format!("{}:2,{}:2", c.net.host(0), c.net.host(1));
    let mut cmd = c.net.exec(0, "mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe"])
        .args(["--mca", "plm_rsh_agent"])
        .arg(&agent)
        .args(["--mca", "oob_tcp_if_include", &subnet])
        .args(["--mca", "btl_tcp_if_include", &subnet])
        .args(["--mca", "btl", "tcp,self", "--host", &hosts, "-np", "4"])
        .args([
            "-x",
            "NF_CHECK_SAY_SOURCE=1",
            "-x",
            &format!("NF_SHM_DIR={}", c.shm.path().display()),
        ])
        .arg(CHECK)
        .args(["integrity", "9", "6", "2000000"]);
    let out = nf_testkit::output_within(&mut cmd, BOUND);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for r in 0..4 {
        for want in [
            format!("rank {r} of 4 via PMIx"),
            format!("rank {r}: integrity ok"),
        ] {
            assert!(
                stdout.lines().any(|l| l.starts_with(&want)),
                "want {want:?} in\n{stdout}"
            );
        }
    }
}
