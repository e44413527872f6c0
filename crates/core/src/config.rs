//! Every setting of the runtime, read once from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `NF_SHM_DIR` | directory (a tmpfs) for shared-memory segments | `/dev/shm` |
//! | `NF_SHM_RINGS` | receive rings per receiver, 1 ..= local ranks (seed 002's M) | `1` |
//! | `NF_SHM_FRAMES` | frames per ring, a power of two | `128` |
//! | `NF_SHM_FRAME_SIZE` | bytes per frame including its 64 B header | `16384` |
//! | `NF_RNDV_THRESHOLD` | payloads of at least this many bytes go single-copy after a handshake | what `nf tune` cached, else `4194304` |
//! | `NF_TUNE_FILE` | where `nf tune` caches its measurements | `$XDG_CACHE_HOME/ninefold/tune.json` or `~/.cache/ninefold/tune.json` |
//! | `NF_MAX_PAYLOAD` | largest active-message payload accepted, sent or received | `1073741824` |
//! | `NF_WAIT` | `spin`, `yield` (spin, then yield, then nap) or `auto` (spin unless oversubscribed) | `auto` |
//! | `NF_PARK_US` | a rank that does not busy-poll (see `NF_WAIT`) sleeps in `poll(2)` after a wait found nothing for this many microseconds, until a network arrival may be waiting, when every peer is reached over tcp and it reads no connection itself (see `wait.rs`); `never` keeps the spin / yield / nap escalation | `50` |
//! | `NF_PEER_CHECK_MS` | how often a waiting rank checks that its peers are alive | `250` |
//! | `NF_TRANSPORTS` | transports a job may use, comma-separated: `shm`, `ofi`, `tcp`; same host → shm, other hosts → ofi when both ends open it, else tcp | `shm,ofi,tcp` |
//! | `NF_TCP_BIND` | address the network transports bind (tcp listener; ofi's node for IP providers) | loopback if all peers are local, else the first non-loopback IPv4 |
//! | `NF_TCP_HOT_US` | a tcp connection this rank sent on or received from is read directly by its polls for this long after its last traffic (then the progress thread serves it again); `0` leaves every arrival to the progress thread | `500` with same-host (shm) peers, else `20000` |
//! | `NF_OFI_PROVIDER` | libfabric provider of the ofi transport (`tcp`, `verbs`, `efa`, …; `fi_info -l` lists them) | `tcp` |
//! | `NF_OFI_NODE` | source address (node) the ofi endpoint binds | for `tcp`/`sockets`/`udp`: as `NF_TCP_BIND`; else the provider's choice |
//! | `NF_OFI_PACKET` | largest payload of one ofi packet, bytes; every rank must use the same (see `netconf.rs`) | `15872` |
//! | `NF_OFI_POLL_EVERY` | while shm routes exist, the ofi completion queue is read on every Nth empty poll (reading it costs system calls with the tcp provider); 1 reads it on every poll | `1024` |
//! | `NF_DEAD_AFTER_MS` | a network peer that stops answering (host down, link cut) is lost after about this long: tcp user timeout and keepalive, ofi `dead_after` | tcp `20000`, ofi `30000` |
//! | `NF_SHOW_TRANSPORTS` | if set (not `0`), rank 0 prints the peer × transport matrix after wire-up | unset |
//! | `NF_HOST` | this host's identity (set by multi-host launchers; ranks with equal values share memory) | host name + boot id |
//!
//! The rank, size and wire-up come from the launcher: `nf run` (`NF_RANK`, `NF_SIZE`,
//! `NF_PMI_ADDR` …), a PMIx launcher (`PMIX_NAMESPACE`, `PMIX_RANK`) or a PMI-2 one
//! (`PMI_FD`, `PMI_RANK`, `PMI_SIZE`), with `NF_PMI_TIMEOUT` bounding every call (see
//! `nf_pmi::bootstrap`); without any, a program runs as a singleton, rank 0 of 1.

use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use nf_transport::shm::ShmConfig;

use crate::error::CoreError;
use crate::peers::Allowed;

/// How a rank waits for something to arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Busy-poll: lowest latency, one core per rank.
    Spin,
    /// Poll, then yield the core, then take short naps: for more ranks than cores.
    Yield,
    /// `Spin` when ranks on this host ≤ cores, else `Yield`.
    Auto,
}

/// The runtime's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Shared-memory transport geometry and location.
    pub shm: ShmConfig,
    /// Payload size from which messages go single-copy (rendezvous).
    pub rndv_threshold: usize,
    /// Largest payload accepted.
    pub max_payload: usize,
    /// Waiting policy.
    pub wait: WaitMode,
    /// How long an idle wait spins before it may park (`None`: never).
    pub park_after: Option<Duration>,
    /// Period of peer liveness checks while waiting.
    pub peer_check: Duration,
    /// Transports the job may use.
    pub transports: Allowed,
    /// Address for the tcp listener, if set.
    pub tcp_bind: Option<IpAddr>,
    /// How long a busy tcp connection stays read directly by this rank's polls; the
    /// transport's default when `None`.
    pub tcp_hot_for: Option<Duration>,
    /// The libfabric provider of the ofi transport.
    pub ofi_provider: String,
    /// Source address of the ofi endpoint, if set.
    pub ofi_node: Option<String>,
    /// With shm routes, the ofi completion queue is read on every Nth empty poll.
    pub ofi_poll_every: u32,
    /// Largest payload of one ofi packet.
    pub ofi_packet: usize,
    /// How soon a silent network peer is lost; the transports' defaults when `None`.
    pub dead_after: Option<Duration>,
    /// Rank 0 prints the peer × transport matrix after wire-up (`NF_SHOW_TRANSPORTS`).
    pub show_transports: bool,
}

/// Default single-copy threshold, measured with `nf tune` on the development machine
/// (2-core EPYC VM): copying through frames, pipelined across both cores, won up to
/// 2 MiB; single-copy won at 4 MiB and tied above.
pub const DEFAULT_RNDV_THRESHOLD: usize = 4 << 20;

impl Default for Config {
    fn default() -> Self {
        Config {
            shm: ShmConfig::default(),
            rndv_threshold: DEFAULT_RNDV_THRESHOLD,
            max_payload: 1 << 30,
            wait: WaitMode::Auto,
            park_after: Some(Duration::from_micros(50)),
            peer_check: Duration::from_millis(250),
            transports: Allowed::default(),
            tcp_bind: None,
            tcp_hot_for: None,
            ofi_provider: "tcp".into(),
            ofi_node: None,
            ofi_poll_every: 1024,
            ofi_packet: crate::netconf::OFI_PACKET,
            dead_after: None,
            show_transports: false,
        }
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

fn var<T: FromStr>(name: &'static str, expected: &'static str) -> Result<Option<T>, CoreError> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map(Some).map_err(|_| CoreError::Config {
            var: name,
            value: v,
            expected,
        }),
        Err(_) => Ok(None),
    }
}

impl Config {
    /// Reads every `NF_*` setting, falling back to the defaults above.
    pub fn from_env() -> Result<Config, CoreError> {
        let mut c = Config::default();
        if let Ok(dir) = std::env::var("NF_SHM_DIR") {
            c.shm.dir = PathBuf::from(dir);
        }
        let count = "a positive integer";
        if let Some(v) = var("NF_SHM_RINGS", count)? {
            c.shm.rings = v;
        }
        if let Some(v) = var("NF_SHM_FRAMES", "a power of two")? {
            c.shm.frames = v;
        }
        if let Some(v) = var("NF_SHM_FRAME_SIZE", "a byte count, multiple of 64")? {
            c.shm.frame_size = v;
        }
        if let Some(t) = crate::tune::cached().and_then(|t| t.rndv_threshold) {
            c.rndv_threshold = t;
        }
        if let Some(v) = var("NF_RNDV_THRESHOLD", "a byte count")? {
            c.rndv_threshold = v;
        }
        if let Some(v) = var("NF_MAX_PAYLOAD", "a byte count")? {
            c.max_payload = v;
        }
        if let Some(v) = var::<ParkAfter>("NF_PARK_US", "microseconds, or `never`")? {
            c.park_after = v.0;
        }
        if let Some(ms) = var::<u64>("NF_PEER_CHECK_MS", "milliseconds")? {
            c.peer_check = Duration::from_millis(ms.max(1));
        }
        if let Ok(v) = std::env::var("NF_WAIT") {
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
        if let Ok(v) = std::env::var("NF_TRANSPORTS") {
            c.transports = parse_transports(&v)?;
        }
        if let Some(ip) = var("NF_TCP_BIND", "an IP address")? {
            c.tcp_bind = Some(ip);
        }
        if let Some(us) = var::<u64>("NF_TCP_HOT_US", "microseconds")? {
            c.tcp_hot_for = Some(Duration::from_micros(us));
        }
        if let Ok(p) = std::env::var("NF_OFI_PROVIDER") {
            if p.trim().is_empty() {
                return Err(CoreError::Config {
                    var: "NF_OFI_PROVIDER",
                    value: p,
                    expected: "a libfabric provider name such as tcp, verbs or efa",
                });
            }
            c.ofi_provider = p.trim().to_owned();
        }
        c.ofi_node = std::env::var("NF_OFI_NODE").ok();
        if let Some(k) = var::<u32>("NF_OFI_POLL_EVERY", "a positive integer")? {
            c.ofi_poll_every = k.max(1);
        }
        if let Some(n) = var::<usize>("NF_OFI_PACKET", "bytes, 1024 ..= 16777216")? {
            if !(1024..=16 << 20).contains(&n) {
                return Err(CoreError::Config {
                    var: "NF_OFI_PACKET",
                    value: n.to_string(),
                    expected: "bytes, 1024 ..= 16777216",
                });
            }
            c.ofi_packet = n;
        }
        if let Some(ms) = var::<u64>("NF_DEAD_AFTER_MS", "milliseconds")? {
            c.dead_after = Some(Duration::from_millis(ms.max(100)));
        }
        c.show_transports = std::env::var_os("NF_SHOW_TRANSPORTS").is_some_and(|v| v != "0");
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

    #[test]
    fn a_bad_transport_list_is_quoted_whole_then_explained() {
        let e = parse_transports("bogus").unwrap_err().to_string();
        assert!(e.starts_with("NF_TRANSPORTS=\"bogus\" is invalid: "), "{e}");
        assert!(e.contains("shm, ofi, tcp"), "{e}");
        assert!(parse_transports("shm,tcp").is_ok());
    }
}
