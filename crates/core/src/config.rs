//! Every setting of the runtime, read once from the environment.
//!
//! What each variable means and its default are listed once, in [`SETTINGS`] below
//! (`nf config` prints them with every other layer's and their values here; the
//! README's table is generated from them). A few notes the list is too short for:
//! `NF_PARK_US` applies when every peer is on the host (the shm doorbell), or every
//! peer is reached over tcp and the rank reads no connection itself (see `wait.rs`); `NF_OFI_PACKET` must be equal on every rank (see
//! `netconf.rs`); `NF_TCP_HOT_US` `0` leaves every arrival to the progress thread.
//!
//! Precedence: the environment, then what `nf tune` cached ([`crate::tune`]), then the
//! defaults. A cached tcp hold time applies only to ranks without shm peers (it is
//! measured between two ranks over tcp alone); `NF_TCP_HOT_US` applies to every rank.
//!
//! The rank, size and wire-up come from the launcher: `nf run` (`NF_RANK`, `NF_SIZE`,
//! `NF_PMI_ADDR` …), a PMIx launcher (`PMIX_NAMESPACE`, `PMIX_RANK`) or a PMI-2 one
//! (`PMI_FD`, `PMI_RANK`, `PMI_SIZE`), with `NF_PMI_TIMEOUT` bounding every call (see
//! `nf_pmi::bootstrap`); without any, a program runs as a singleton, rank 0 of 1.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use nf_sys::setting::Setting;
use nf_transport::shm::layout::{self, FAST_DATA};
use nf_transport::shm::ShmConfig;

use crate::error::CoreError;
use crate::netroute::NetRoute;
use crate::peers::Allowed;
use crate::tune::Tuned;

/// The core's settings, as `nf config` lists them: those parsed below, the tune
/// cache's path (read by [`crate::tune`]) and the log filter (read by [`crate::log`]
/// for every program).
pub const SETTINGS: &[Setting] = &[
    s("NF_SHM_DIR", "directory (a tmpfs) for shared-memory segments", "/dev/shm"),
    s("NF_SHM_RINGS", "receive rings per receiver, 1 ..= local ranks", "1"),
    s("NF_SHM_FRAMES", "frames per ring, a power of two up to 2^20", "128"),
    s("NF_SHM_FRAME_SIZE", "bytes per frame including its 64 B header: the eager and fragment size (equal on every rank of a host; the default carries 16 KiB of payload)", "what `nf tune` cached, else 16448"),
    s("NF_SHM_FAST_LIMIT", "largest packet (metadata + payload) a rank sends through a fast box, 0 ..= 496; 0: fast boxes off", "what `nf tune` cached, else 496"),
    s("NF_RNDV_THRESHOLD", "payloads of at least this many bytes go single-copy after a handshake", "what `nf tune` cached, else what the host's first job measured (NF_RNDV_CALIBRATE), else 4194304"),
    s("NF_RNDV_CALIBRATE", "when neither NF_RNDV_THRESHOLD nor `nf tune` gives the single-copy threshold, the first job on a host measures it between two of its ranks within this many ms and caches it per host (a day, so a choice a busy moment skewed does not last; an inconclusive run is retried after an hour); off: keep the default", "400"),
    s("NF_TUNE_FILE", "where `nf tune` caches its measurements", "$XDG_CACHE_HOME/ninefold/tune.json or ~/.cache/ninefold/tune.json"),
    s("NF_MAX_PAYLOAD", "largest active-message payload accepted, sent or received", "1073741824"),
    s("NF_WAIT", "spin, yield (spin, then yield, then nap) or auto (spin unless this host's ranks outnumber NF_JOB_CPUS)", "auto"),
    s("NF_JOB_CPUS", "CPUs this job's ranks on a host share, for NF_WAIT=auto (nf run sets it from its affinity mask and cgroup CPU quota)", "this process's affinity mask and cgroup CPU quota"),
    s("NF_PARK_US", "a non-spinning rank sleeps (shm doorbell or poll(2)) after a wait found nothing this many µs (never: no parking)", "50"),
    s("NF_PEER_CHECK_MS", "how often a waiting rank checks that its peers are alive", "250"),
    s("NF_TRANSPORTS", "transports a job may use, comma-separated: shm, ofi, tcp", "shm,ofi,tcp"),
    s("NF_TCP_BIND", "address the network transports bind", "loopback if all peers are local, else the first non-loopback IPv4"),
    s("NF_TCP_HOT_US", "a busy tcp connection is read by the rank's own polls for this long after its last traffic", "500 with shm peers, else what `nf tune` cached, else 20000"),
    s("NF_TCP_LANES", "tcp connections per pair of ranks on different hosts, 1 ..= 16 (equal on every rank); from 2, messages over tcp of at least NF_TCP_STRIPE bytes are striped across them", "1"),
    s("NF_TCP_STRIPE", "with NF_TCP_LANES above 1, payloads over tcp of at least this many bytes are cut across the connections", "1048576"),
    s("NF_NET_ROUTE", "transport between hosts by message size: tcp, ofi, or SMALL/LARGE@BYTES (tcp/ofi@65536)", "what `nf tune --route` cached when every other host has the same, else tcp when the ofi provider runs over sockets (tcp, sockets, udp), else ofi"),
    s("NF_OFI_PROVIDER", "libfabric provider of the ofi transport and native RMA", "tcp"),
    s("NF_OFI_NODE", "source address the ofi endpoint binds", "as NF_TCP_BIND for IP providers"),
    s("NF_OFI_PACKET", "largest payload of one ofi packet, bytes, 1024 ..= 16777216 (equal on every rank)", "what `nf tune` cached, else 15872"),
    s("NF_OFI_RNDV", "payloads of at least this many bytes to ranks on other hosts over ofi are read by the receiver with the provider's RMA (when it has RMA)", "65536"),
    s("NF_OFI_POLL_EVERY", "with shm routes, the ofi completion queue is read every Nth empty poll", "1024"),
    s("NF_DEAD_AFTER_MS", "a peer over tcp or ofi (messaging, rma's native RMA and its service connections) that stops answering is lost after about this long, at least 100", "tcp 20000, ofi 30000"),
    s("NF_SHOW_TRANSPORTS", "if set (not 0), rank 0 prints the peer × transport matrix", "unset"),
    // Every program sets up its logging through the core.
    Setting::new("NF_LOG", "all", "log filter (tracing directives: warn, info, debug, target=level); else RUST_LOG", "warn (nf serve, nf gateway: info)"),
];

/// A setting of the core layer.
const fn s(name: &'static str, meaning: &'static str, default: &'static str) -> Setting {
    Setting::new(name, "core", meaning, default)
}

/// What `NF_SHM_FAST_LIMIT` accepts; the assertion keeps the text true.
const FAST_LIMIT_EXPECTED: &str = "bytes, 0 ..= 496";
const _: () = assert!(FAST_DATA == 496);

/// How a rank waits for something to arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Busy-poll: lowest latency, one core per rank.
    Spin,
    /// Poll, then yield the core, then take short naps: for more ranks than cores.
    Yield,
    /// `Spin` when ranks on this host ≤ the CPUs the job may use there, else `Yield`.
    Auto,
}

/// The runtime's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Shared-memory transport geometry and location.
    pub shm: ShmConfig,
    /// Payload size from which messages go single-copy (rendezvous).
    pub rndv_threshold: usize,
    /// `rndv_threshold` came from the environment or `nf tune`, not the default: the
    /// start-up measurement (`calibrate.rs`) leaves it alone.
    pub rndv_given: bool,
    /// Time budget of the start-up measurement of the single-copy threshold
    /// (`NF_RNDV_CALIBRATE`); `None`: off.
    pub rndv_calibrate: Option<Duration>,
    /// Largest payload accepted.
    pub max_payload: usize,
    /// Waiting policy.
    pub wait: WaitMode,
    /// How long an idle wait spins before it may park (`None`: never).
    pub park_after: Option<Duration>,
    /// The CPUs this job's ranks on this host share (`NF_JOB_CPUS`, which `nf run`
    /// sets); `None`: the CPUs this process may run on ([`nf_sys::cpus::usable`]).
    pub job_cpus: Option<usize>,
    /// Period of peer liveness checks while waiting.
    pub peer_check: Duration,
    /// Transports the job may use.
    pub transports: Allowed,
    /// Address for the tcp listener, if set.
    pub tcp_bind: Option<IpAddr>,
    /// How long a busy tcp connection stays read directly by this rank's polls; the
    /// transport's default when `None`.
    pub tcp_hot_for: Option<Duration>,
    /// `nf tune`'s hold time for ranks without shm peers (`tcp_hot_for` wins).
    pub tcp_hot_tuned: Option<Duration>,
    /// The libfabric provider of the ofi transport.
    pub ofi_provider: String,
    /// Source address of the ofi endpoint, if set.
    pub ofi_node: Option<String>,
    /// With shm routes, the ofi completion queue is read on every Nth empty poll.
    pub ofi_poll_every: u32,
    /// Largest payload of one ofi packet.
    pub ofi_packet: usize,
    /// Payload size from which messages over ofi routes are read by the receiver
    /// with the provider's RMA (rendezvous) instead of sent in packets.
    pub ofi_rndv: usize,
    /// How soon a silent network peer is lost; the transports' defaults when `None`.
    pub dead_after: Option<Duration>,
    /// Rank 0 prints the peer × transport matrix after wire-up (`NF_SHOW_TRANSPORTS`).
    pub show_transports: bool,
    /// Which transport carries which sizes between hosts (`NF_NET_ROUTE`); `None`:
    /// measured or default (`netroute.rs`).
    pub net_route: Option<NetRoute>,
    /// `nf tune`'s routes to other hosts, by host identity (`NF_NET_ROUTE` wins).
    pub net_route_tuned: BTreeMap<String, NetRoute>,
    /// tcp connections per pair of ranks on different hosts (`NF_TCP_LANES`): 1 is
    /// the transport's own; each further one is a lane that large messages are
    /// striped across (`proto/stripe.rs`).
    pub tcp_lanes: usize,
    /// Payload size from which messages over tcp are striped across the lanes
    /// (`NF_TCP_STRIPE`; only with more than one lane).
    pub tcp_stripe: usize,
}

/// Default single-copy threshold, measured with `nf tune` on the development machine
/// (2-core EPYC VM): copying through frames, pipelined across both cores, won up to
/// 2 MiB; single-copy won at 4 MiB and tied above.
pub const DEFAULT_RNDV_THRESHOLD: usize = 4 << 20;

/// Default `NF_OFI_RNDV`: measured across two namespace hosts over libfabric's tcp
/// provider (`nf bench pingpong`, a loaded 2-core VM, so compared by the fastest
/// round trips): packets won up to 32 KiB (48–53 µs against the read's 54–80 µs at
/// 32 KiB), 48 KiB was a tie, and the read won from 64 KiB up (58–81 µs against
/// 116–372 µs).
pub const DEFAULT_OFI_RNDV: usize = 64 << 10;

/// Default `NF_TCP_STRIPE`: below a megabyte a message's frame costs little next to
/// the round trip, and each piece must stay large enough to amortise its frame.
pub const DEFAULT_TCP_STRIPE: usize = 1 << 20;

/// `NF_TCP_LANES`'s range: 16 connections per pair is already more streams than
/// any host here has cores to copy with.
pub const TCP_LANES_RANGE: std::ops::RangeInclusive<usize> = 1..=16;
const TCP_LANES_EXPECTED: &str = "a count of tcp connections per pair, 1 ..= 16";

impl Default for Config {
    fn default() -> Self {
        Config {
            shm: ShmConfig::default(),
            rndv_threshold: DEFAULT_RNDV_THRESHOLD,
            rndv_given: false,
            rndv_calibrate: Some(DEFAULT_RNDV_CALIBRATE),
            max_payload: 1 << 30,
            wait: WaitMode::Auto,
            park_after: Some(Duration::from_micros(50)),
            job_cpus: None,
            peer_check: Duration::from_millis(250),
            transports: Allowed::default(),
            tcp_bind: None,
            tcp_hot_for: None,
            tcp_hot_tuned: None,
            ofi_provider: "tcp".into(),
            ofi_node: None,
            ofi_poll_every: 1024,
            ofi_packet: crate::netconf::OFI_PACKET,
            ofi_rndv: DEFAULT_OFI_RNDV,
            dead_after: None,
            show_transports: false,
            net_route: None,
            net_route_tuned: BTreeMap::new(),
            tcp_lanes: 1,
            tcp_stripe: DEFAULT_TCP_STRIPE,
        }
    }
}

/// Default `NF_RNDV_CALIBRATE`: a quiet 2-core VM measures in about 120 ms; a busy
/// one runs out of time and keeps the default rather than delay every start.
pub const DEFAULT_RNDV_CALIBRATE: Duration = Duration::from_millis(400);

/// A measurement budget in milliseconds, or `off`.
struct Calibrate(Option<Duration>);

impl FromStr for Calibrate {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(Calibrate(None));
        }
        Ok(Calibrate(Some(Duration::from_millis(s.parse()?))))
    }
}

/// A spin time before parking in microseconds, or `never`.
struct ParkAfter(Option<Duration>);

impl FromStr for ParkAfter {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "never" {
            return Ok(ParkAfter(None));
        }
        s.parse()
            .map(|us| ParkAfter(Some(Duration::from_micros(us))))
    }
}

/// Where settings come from: the environment, or a test's table.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn var<T: FromStr>(
    env: Lookup,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<T>, CoreError> {
    match env(name) {
        Some(v) => v.trim().parse().map(Some).map_err(|_| CoreError::Config {
            var: name,
            value: v,
            expected,
        }),
        None => Ok(None),
    }
}

/// `value` of setting `name` if it lies in `range`, else the error saying what was
/// `expected`.
fn within(
    name: &'static str,
    value: usize,
    range: std::ops::RangeInclusive<usize>,
    expected: &'static str,
) -> Result<usize, CoreError> {
    if range.contains(&value) {
        return Ok(value);
    }
    Err(CoreError::Config {
        var: name,
        value: value.to_string(),
        expected,
    })
}

/// `NF_OFI_PACKET`'s range.
const OFI_PACKET_RANGE: std::ops::RangeInclusive<usize> = 1024..=16 << 20;

impl Config {
    /// Reads every `NF_*` setting, then `nf tune`'s cache, then the defaults above.
    pub fn from_env() -> Result<Config, CoreError> {
        Config::from_sources(
            &|name| std::env::var(name).ok(),
            crate::tune::cached().as_ref(),
        )
    }

    /// [`Config::from_env`] over any environment `env` and tune cache `tuned`.
    pub fn from_sources(env: Lookup, tuned: Option<&Tuned>) -> Result<Config, CoreError> {
        let mut c = Config::default();
        let tuned = tuned.cloned().unwrap_or_default();
        if let Some(dir) = env("NF_SHM_DIR") {
            c.shm.dir = PathBuf::from(dir);
        }
        let count = "a positive integer";
        if let Some(v) = var(env, "NF_SHM_RINGS", count)? {
            c.shm.rings = v;
        }
        if let Some(v) = var(env, "NF_SHM_FRAMES", "a power of two")? {
            c.shm.frames = v;
        }
        c.shm.frame_size = tuned.shm_frame_size.unwrap_or(c.shm.frame_size);
        if let Some(v) = var(env, "NF_SHM_FRAME_SIZE", "a byte count, multiple of 64")? {
            c.shm.frame_size = v;
        }
        // The segment's own checks, so a bad geometry is refused where it is read, not
        // when a rank maps its first segment.
        for (name, value, check) in [
            (
                "NF_SHM_FRAMES",
                c.shm.frames,
                layout::check_frames as fn(usize) -> _,
            ),
            (
                "NF_SHM_FRAME_SIZE",
                c.shm.frame_size,
                layout::check_frame_size,
            ),
        ] {
            check(value).map_err(|why| CoreError::ConfigWhy {
                var: name,
                value: value.to_string(),
                why,
            })?;
        }
        c.shm.fast_limit = tuned.shm_fast_limit.unwrap_or(c.shm.fast_limit);
        if let Some(v) = var(env, "NF_SHM_FAST_LIMIT", FAST_LIMIT_EXPECTED)? {
            c.shm.fast_limit = v;
        }
        if c.shm.fast_limit > FAST_DATA {
            return Err(CoreError::Config {
                var: "NF_SHM_FAST_LIMIT",
                value: c.shm.fast_limit.to_string(),
                expected: FAST_LIMIT_EXPECTED,
            });
        }
        c.rndv_threshold = tuned.rndv_threshold.unwrap_or(c.rndv_threshold);
        c.rndv_given = tuned.rndv_threshold.is_some();
        if let Some(v) = var(env, "NF_RNDV_THRESHOLD", "a byte count")? {
            c.rndv_threshold = v;
            c.rndv_given = true;
        }
        if let Some(v) = var::<Calibrate>(env, "NF_RNDV_CALIBRATE", "milliseconds, or `off`")? {
            c.rndv_calibrate = v.0;
        }
        if let Some(v) = var(env, "NF_MAX_PAYLOAD", "a byte count")? {
            c.max_payload = v;
        }
        if let Some(v) = var::<ParkAfter>(env, "NF_PARK_US", "microseconds, or `never`")? {
            c.park_after = v.0;
        }
        if let Some(ms) = var::<u64>(env, "NF_PEER_CHECK_MS", "milliseconds")? {
            c.peer_check = Duration::from_millis(ms.max(1));
        }
        if let Some(n) = var::<usize>(env, "NF_JOB_CPUS", count)? {
            if n == 0 {
                return Err(CoreError::Config {
                    var: "NF_JOB_CPUS",
                    value: n.to_string(),
                    expected: count,
                });
            }
            c.job_cpus = Some(n);
        }
        if let Some(v) = env("NF_WAIT") {
            c.wait = match v.as_str() {
                "spin" => WaitMode::Spin,
                "yield" => WaitMode::Yield,
                "auto" => WaitMode::Auto,
                _ => {
                    return Err(CoreError::Config {
                        var: "NF_WAIT",
                        value: v,
                        expected: "spin, yield or auto",
                    })
                }
            };
        }
        if let Some(v) = env("NF_TRANSPORTS") {
            c.transports = parse_transports(&v)?;
        }
        if let Some(ip) = var(env, "NF_TCP_BIND", "an IP address")? {
            c.tcp_bind = Some(ip);
        }
        c.tcp_hot_tuned = tuned.tcp_hot_us.map(|us| Duration::from_micros(us as u64));
        if let Some(us) = var::<u64>(env, "NF_TCP_HOT_US", "microseconds")? {
            c.tcp_hot_for = Some(Duration::from_micros(us));
        }
        if let Some(p) = env("NF_OFI_PROVIDER") {
            if p.trim().is_empty() {
                return Err(CoreError::Config {
                    var: "NF_OFI_PROVIDER",
                    value: p,
                    expected: "a libfabric provider name such as tcp, verbs or efa",
                });
            }
            c.ofi_provider = p.trim().to_owned();
        }
        c.ofi_node = env("NF_OFI_NODE");
        if let Some(k) = var::<u32>(env, "NF_OFI_POLL_EVERY", "a positive integer")? {
            c.ofi_poll_every = k.max(1);
        }
        c.ofi_packet = tuned.ofi_packet.unwrap_or(c.ofi_packet);
        let packet = "bytes, 1024 ..= 16777216";
        let n = var(env, "NF_OFI_PACKET", packet)?.unwrap_or(c.ofi_packet);
        c.ofi_packet = within("NF_OFI_PACKET", n, OFI_PACKET_RANGE, packet)?;
        if let Some(v) = var(env, "NF_OFI_RNDV", "a byte count")? {
            c.ofi_rndv = v;
        }
        if let Some(ms) = var::<u64>(env, "NF_DEAD_AFTER_MS", "milliseconds")? {
            c.dead_after = Some(Duration::from_millis(ms.max(100)));
        }
        c.show_transports = env("NF_SHOW_TRANSPORTS").is_some_and(|v| v != "0");
        for (host, route) in &tuned.net_route {
            match route.parse() {
                Ok(r) => {
                    c.net_route_tuned.insert(host.clone(), r);
                }
                Err(why) => tracing::warn!(host, route, why, "ignoring a cached network route"),
            }
        }
        if let Some(v) = env("NF_NET_ROUTE") {
            c.net_route = Some(v.parse().map_err(|_| CoreError::Config {
                var: "NF_NET_ROUTE",
                value: v,
                expected: "tcp, ofi, or SMALL/LARGE@BYTES such as tcp/ofi@65536",
            })?);
        }
        let n = var(env, "NF_TCP_LANES", TCP_LANES_EXPECTED)?.unwrap_or(c.tcp_lanes);
        c.tcp_lanes = within("NF_TCP_LANES", n, TCP_LANES_RANGE, TCP_LANES_EXPECTED)?;
        let stripe = "a byte count, at least 1";
        let n = var(env, "NF_TCP_STRIPE", stripe)?.unwrap_or(c.tcp_stripe);
        c.tcp_stripe = within("NF_TCP_STRIPE", n, 1..=usize::MAX, stripe)?;
        if c.shm.rings == 0 {
            return Err(CoreError::Config {
                var: "NF_SHM_RINGS",
                value: "0".into(),
                expected: count,
            });
        }
        Ok(c)
    }
}

/// `NF_TRANSPORTS`'s value; the error quotes the value alone and says why after it.
fn parse_transports(v: &str) -> Result<Allowed, CoreError> {
    v.parse().map_err(|why: String| CoreError::ConfigWhy {
        var: "NF_TRANSPORTS",
        value: v.to_owned(),
        why: format!("{why}; expected a comma-separated list of shm, ofi, tcp"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config of environment `env` (name, value pairs) and tune cache `tuned`.
    fn config(env: &[(&str, &str)], tuned: Option<&Tuned>) -> Config {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let lookup = move |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        Config::from_sources(&lookup, tuned).unwrap()
    }

    #[test]
    fn the_listed_defaults_are_the_parsers() {
        let c = Config::default();
        let listed = |name: &str| {
            SETTINGS
                .iter()
                .find(|s| s.name == name)
                .unwrap_or_else(|| panic!("{name} is not listed"))
                .default
        };
        let tuned = |n: usize| format!("what `nf tune` cached, else {n}");
        for (name, default) in [
            ("NF_SHM_DIR", c.shm.dir.display().to_string()),
            ("NF_SHM_RINGS", c.shm.rings.to_string()),
            ("NF_SHM_FRAMES", c.shm.frames.to_string()),
            ("NF_SHM_FRAME_SIZE", tuned(c.shm.frame_size)),
            ("NF_SHM_FAST_LIMIT", tuned(c.shm.fast_limit)),
            (
                "NF_RNDV_THRESHOLD",
                format!(
                    "what `nf tune` cached, else what the host's first job measured \
                     (NF_RNDV_CALIBRATE), else {}",
                    c.rndv_threshold
                ),
            ),
            (
                "NF_RNDV_CALIBRATE",
                c.rndv_calibrate.unwrap().as_millis().to_string(),
            ),
            ("NF_MAX_PAYLOAD", c.max_payload.to_string()),
            ("NF_PARK_US", c.park_after.unwrap().as_micros().to_string()),
            ("NF_PEER_CHECK_MS", c.peer_check.as_millis().to_string()),
            ("NF_OFI_PROVIDER", c.ofi_provider.clone()),
            ("NF_OFI_PACKET", tuned(c.ofi_packet)),
            ("NF_OFI_RNDV", c.ofi_rndv.to_string()),
            ("NF_OFI_POLL_EVERY", c.ofi_poll_every.to_string()),
            ("NF_TCP_LANES", c.tcp_lanes.to_string()),
            ("NF_TCP_STRIPE", c.tcp_stripe.to_string()),
        ] {
            assert_eq!(listed(name), default, "{name}");
        }
        assert_eq!(c.wait, WaitMode::Auto);
        assert_eq!(listed("NF_WAIT"), "auto");
        let (tcp, ofi) = (
            nf_transport::tcp::TcpConfig::default().dead_after,
            nf_transport::ofi::OfiConfig::default().dead_after,
        );
        assert_eq!(
            listed("NF_DEAD_AFTER_MS"),
            format!("tcp {}, ofi {}", tcp.as_millis(), ofi.as_millis())
        );
    }

    #[test]
    fn every_tuned_value_lies_between_the_environment_and_the_default() {
        let tuned = Tuned {
            rndv_threshold: Some(65536),
            shm_frame_size: Some(8192),
            shm_fast_limit: Some(128),
            tcp_hot_us: Some(100),
            ofi_packet: Some(4096),
            ..Tuned::default()
        };
        // (setting, what the env says, how the config shows it, default, tuned, env)
        type Read = fn(&Config) -> String;
        let cases: [(&str, &str, Read, String, String, String); 5] = [
            (
                "NF_RNDV_THRESHOLD",
                "7",
                |c| c.rndv_threshold.to_string(),
                DEFAULT_RNDV_THRESHOLD.to_string(),
                "65536".into(),
                "7".into(),
            ),
            (
                "NF_SHM_FRAME_SIZE",
                "4096",
                |c| c.shm.frame_size.to_string(),
                "16448".into(),
                "8192".into(),
                "4096".into(),
            ),
            (
                "NF_SHM_FAST_LIMIT",
                "0",
                |c| c.shm.fast_limit.to_string(),
                FAST_DATA.to_string(),
                "128".into(),
                "0".into(),
            ),
            (
                "NF_TCP_HOT_US",
                "5",
                |c| format!("{:?}/{:?}", c.tcp_hot_for, c.tcp_hot_tuned),
                "None/None".into(),
                "None/Some(100µs)".into(),
                "Some(5µs)/Some(100µs)".into(),
            ),
            (
                "NF_OFI_PACKET",
                "2048",
                |c| c.ofi_packet.to_string(),
                crate::netconf::OFI_PACKET.to_string(),
                "4096".into(),
                "2048".into(),
            ),
        ];
        for (name, value, read, default, cached, env) in cases {
            assert_eq!(read(&config(&[], None)), default, "{name} default");
            assert_eq!(read(&config(&[], Some(&tuned))), cached, "{name} cached");
            assert_eq!(
                read(&config(&[(name, value)], Some(&tuned))),
                env,
                "{name} env"
            );
        }
    }

    #[test]
    fn out_of_range_sizes_name_their_setting() {
        let lookup = |n: &str| (n == "NF_SHM_FAST_LIMIT").then(|| "497".to_string());
        let e = Config::from_sources(&lookup, None).unwrap_err().to_string();
        assert!(e.contains("NF_SHM_FAST_LIMIT"), "{e}");
        let bad = Tuned {
            ofi_packet: Some(1),
            ..Tuned::default()
        };
        let e = Config::from_sources(&|_| None, Some(&bad))
            .unwrap_err()
            .to_string();
        assert!(e.contains("NF_OFI_PACKET"), "{e}");
    }

    #[test]
    fn the_start_up_measurement_runs_only_where_nothing_gives_the_threshold() {
        let from = |env: &[(&str, &str)], tuned: Option<&Tuned>| {
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Config::from_sources(
                &|n| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()),
                tuned,
            )
        };
        let c = from(&[], None).unwrap();
        assert!(!c.rndv_given);
        assert_eq!(c.rndv_calibrate, Some(DEFAULT_RNDV_CALIBRATE));
        assert!(
            from(&[("NF_RNDV_THRESHOLD", "8")], None)
                .unwrap()
                .rndv_given
        );
        let tuned = Tuned {
            rndv_threshold: Some(65536),
            ..Tuned::default()
        };
        assert!(from(&[], Some(&tuned)).unwrap().rndv_given);
        let off = from(&[("NF_RNDV_CALIBRATE", "off")], None).unwrap();
        assert_eq!(off.rndv_calibrate, None);
        let ms = from(&[("NF_RNDV_CALIBRATE", "25")], None).unwrap();
        assert_eq!(ms.rndv_calibrate, Some(Duration::from_millis(25)));
        let e = from(&[("NF_RNDV_CALIBRATE", "soon")], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("NF_RNDV_CALIBRATE") && e.contains("off"), "{e}");
    }

    #[test]
    fn a_shm_geometry_the_segments_would_refuse_is_refused_naming_its_setting() {
        for (name, bad) in [
            ("NF_SHM_FRAME_SIZE", "100"),
            ("NF_SHM_FRAME_SIZE", "64"),
            ("NF_SHM_FRAMES", "100"),
        ] {
            let e = Config::from_sources(&|n| (n == name).then(|| bad.to_owned()), None)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("{name}=\"{bad}\" is invalid: ")),
                "{e}"
            );
        }
        let c = config(
            &[("NF_SHM_FRAME_SIZE", "128"), ("NF_SHM_FRAMES", "64")],
            None,
        );
        assert_eq!((c.shm.frame_size, c.shm.frames), (128, 64));
    }

    #[test]
    fn tcp_lanes_outside_one_to_sixteen_are_refused_naming_the_range() {
        let env = |v: &'static str| move |n: &str| (n == "NF_TCP_LANES").then(|| v.to_owned());
        for bad in ["0", "17", "-1", "many"] {
            let e = Config::from_sources(&env(bad), None)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("NF_TCP_LANES=\"{bad}\" is invalid"))
                    && e.contains("1 ..= 16"),
                "{e}"
            );
        }
        assert_eq!(config(&[], None).tcp_lanes, 1);
        let c = config(&[("NF_TCP_LANES", "16"), ("NF_TCP_STRIPE", "65536")], None);
        assert_eq!((c.tcp_lanes, c.tcp_stripe), (16, 65536));
        let e = Config::from_sources(&|n| (n == "NF_TCP_STRIPE").then(|| "0".into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("NF_TCP_STRIPE"), "{e}");
    }

    #[test]
    fn a_bad_transport_list_is_quoted_whole_then_explained() {
        let e = parse_transports("bogus").unwrap_err().to_string();
        assert!(e.starts_with("NF_TRANSPORTS=\"bogus\" is invalid: "), "{e}");
        assert!(e.contains("shm, ofi, tcp"), "{e}");
        assert!(parse_transports("shm,tcp").is_ok());
    }

    #[test]
    fn the_network_route_comes_from_the_environment_and_bad_cached_ones_are_ignored() {
        let env = |v: &'static str| move |n: &str| (n == "NF_NET_ROUTE").then(|| v.to_owned());
        let c = Config::from_sources(&env("tcp/ofi@65536"), None).unwrap();
        assert_eq!(c.net_route.unwrap().to_string(), "tcp/ofi@65536");
        let e = Config::from_sources(&env("tcp/ofi"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("NF_NET_ROUTE") && e.contains("SMALL/LARGE@BYTES"),
            "{e}"
        );
        let cached = Tuned {
            net_route: BTreeMap::from([
                ("h1".to_owned(), "ofi".to_owned()),
                ("h2".to_owned(), "pigeon".to_owned()),
            ]),
            ..Tuned::default()
        };
        let c = Config::from_sources(&|_| None, Some(&cached)).unwrap();
        assert_eq!(c.net_route, None);
        assert_eq!(c.net_route_tuned.len(), 1);
        assert_eq!(c.net_route_tuned["h1"].to_string(), "ofi");
    }
}
