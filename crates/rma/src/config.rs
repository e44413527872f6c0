//! Every setting of the rma layer, read once from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `NF_RMA_DIRECT` | `1`: same-host procs map each other's segments and use load / store; `0`: every other proc goes through its service thread (for tests and comparisons) | `1` |
//! | `NF_RMA_OFI` | put / get to other domains: `auto` uses the ofi transport's native RMA (`fi_write` / `fi_read`) where every end opens an endpoint with `FI_RMA` and a wait fd, else the service thread; `on` fails start-up, naming the proc and why, unless every proc with remote peers can; `off` always uses the service thread | `auto` |
//! | `NF_OFI_PROVIDER` | the libfabric provider for native RMA (shared with the core) | `tcp` |
//! | `NF_DEAD_AFTER_MS` | a remote proc whose RMA operations make no progress this long is lost (shared with the core) | `30000` |
//! | `NF_RMA_BIND` | address the service thread listens on (and the ofi endpoint binds, for IP providers) | `NF_TCP_BIND`, else loopback when every proc is on this host, else the first non-loopback IPv4 |
//! | `NF_RMA_CHUNK` | largest payload of one service request or reply, bytes | `1048576` |
//! | `NF_SHM_DIR` | directory (a tmpfs) for segment files (shared with the core) | `/dev/shm` |
//! | `NF_WAIT` | waiting policy, as for the core: `spin`, `yield`, `auto` | `auto` |
//! | `NF_PEER_CHECK_MS` | how often a waiter checks that the procs it waits for are alive | `250` |
//! | `NF_MEM_REGISTRY` | directory where each proc publishes its segments for `nf serve`'s `/mem` (`nf_memreg`); `off`: publish nothing | `$XDG_RUNTIME_DIR/ninefold/mem`, else `/tmp/ninefold-UID/mem` |
//! | `NF_HOST` | host identity: procs with equal values share memory | host name + boot id (+ network namespace outside `nf run`) |

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use nf_core::WaitMode;

use crate::error::RmaError;

/// Whether put / get to other domains use the ofi transport's native RMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfiMode {
    /// Where every end can; the service thread elsewhere.
    Auto,
    /// Everywhere, or start-up fails saying why not.
    On,
    /// Never: the service thread carries everything.
    Off,
}

/// The rma layer's settings.
#[derive(Debug, Clone)]
pub struct RmaConfig {
    /// Native RMA over ofi for put / get to other domains.
    pub ofi: OfiMode,
    /// The libfabric provider for native RMA.
    pub ofi_provider: String,
    /// A remote proc whose operations make no progress this long is lost (`None`:
    /// the transport's default).
    pub dead_after: Option<Duration>,
    /// Same-host procs access each other's memory directly.
    pub direct: bool,
    /// Address of the service listener, if set.
    pub bind: Option<IpAddr>,
    /// Largest payload of one request or reply on the service path.
    pub chunk: usize,
    /// Directory for segment files.
    pub shm_dir: PathBuf,
    /// Waiting policy.
    pub wait: WaitMode,
    /// The CPUs this job's ranks on this host share (`NF_JOB_CPUS`; `None`: count).
    pub job_cpus: Option<usize>,
    /// Period of liveness checks while waiting.
    pub peer_check: Duration,
    /// Where segments are published for the node's `/mem` (`None`: nowhere).
    pub mem_registry: Option<PathBuf>,
}

impl Default for RmaConfig {
    fn default() -> Self {
        RmaConfig {
            ofi: OfiMode::Auto,
            ofi_provider: "tcp".into(),
            dead_after: None,
            direct: true,
            bind: None,
            chunk: 1 << 20,
            shm_dir: PathBuf::from("/dev/shm"),
            wait: WaitMode::Auto,
            job_cpus: None,
            peer_check: Duration::from_millis(250),
            mem_registry: None,
        }
    }
}

impl RmaConfig {
    /// Reads the settings from the environment (see the table above).
    pub fn from_env() -> Result<RmaConfig, RmaError> {
        RmaConfig::from_sources(
            &|name| std::env::var(name).ok(),
            nf_core::tune::cached().as_ref(),
        )
    }

    /// [`RmaConfig::from_env`] over any environment `env` and tune cache `tuned` (the
    /// launcher checks a job's settings with it before any proc starts).
    pub fn from_sources(
        env: &dyn Fn(&str) -> Option<String>,
        tuned: Option<&nf_core::tune::Tuned>,
    ) -> Result<RmaConfig, RmaError> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let core = nf_core::Config::from_sources(env, tuned)?;
        let mut cfg = RmaConfig {
            shm_dir: core.shm.dir.clone(),
            wait: core.wait,
            job_cpus: core.job_cpus,
            peer_check: core.peer_check,
            bind: core.tcp_bind,
            ofi_provider: core.ofi_provider.clone(),
            dead_after: core.dead_after,
            mem_registry: Some(nf_memreg::default_dir()),
            ..RmaConfig::default()
        };
        if let Some(v) = var("NF_RMA_OFI") {
            cfg.ofi = match v.as_str() {
                "auto" => OfiMode::Auto,
                "on" => OfiMode::On,
                "off" => OfiMode::Off,
                _ => return Err(bad("NF_RMA_OFI", v, "auto, on or off")),
            };
        }
        if var(nf_memreg::ENV).as_deref() == Some("off") {
            cfg.mem_registry = None;
        }
        if let Some(v) = var("NF_RMA_DIRECT") {
            cfg.direct = match v.as_str() {
                "1" => true,
                "0" => false,
                _ => return Err(bad("NF_RMA_DIRECT", v, "0 or 1")),
            };
        }
        if let Some(v) = var("NF_RMA_BIND") {
            let ip: IpAddr = v
                .parse()
                .map_err(|_| bad("NF_RMA_BIND", v.clone(), "an IP address"))?;
            if ip.is_unspecified() {
                return Err(bad(
                    "NF_RMA_BIND",
                    v,
                    "an interface address, not a wildcard",
                ));
            }
            cfg.bind = Some(ip);
        }
        if let Some(v) = var("NF_RMA_CHUNK") {
            cfg.chunk = v
                .parse()
                .ok()
                .filter(|&c: &usize| (4096..=(64 << 20)).contains(&c))
                .ok_or_else(|| bad("NF_RMA_CHUNK", v, "bytes, 4096 ..= 67108864"))?;
        }
        Ok(cfg)
    }
}

fn bad(var: &'static str, value: String, expected: &'static str) -> RmaError {
    RmaError::Config {
        var,
        value,
        expected,
    }
}
