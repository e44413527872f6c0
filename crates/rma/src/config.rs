//! Every setting of the rma layer, read once from the environment.
//!
//! The layer's own settings, with meaning and default, are [`SETTINGS`] (`nf config`
//! prints them with every other layer's). It shares others, parsed where they are
//! declared: the core's ([`nf_core::Config`]) `NF_SHM_DIR` (segment files), `NF_WAIT`,
//! `NF_JOB_CPUS`, `NF_PEER_CHECK_MS`, `NF_TCP_BIND` (under `NF_RMA_BIND`),
//! `NF_OFI_PROVIDER` (native RMA's ofi endpoint) and `NF_DEAD_AFTER_MS` (native RMA's
//! stuck operations, and the service connections' tcp user timeout, 20 s when unset);
//! the memory registry's
//! `NF_MEM_REGISTRY` ([`nf_memreg::default_dir`]), where `off`, read here, publishes
//! nothing; and `NF_HOST`, the host identity that decides who shares memory.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use nf_core::WaitMode;
use nf_sys::setting::Setting;

use crate::error::RmaError;

/// The rma layer's own settings, as `nf config` lists them.
pub const SETTINGS: &[Setting] = &[
    // Read by libarmci's C side (`crates/armci/csrc/coll.c`), which runs its node
    // collectives on this layer: listed here, since `nf` does not link libarmci.
    Setting::new(
        "NF_ARMCI_COLL_MAX",
        "armci",
        "largest armci_msg reduction or broadcast (bytes) that runs through the node's shared memory; larger ones, and all with 0, use MPI",
        "131072 for reductions, 16384 for broadcasts",
    ),
    // Read by libshmem (`crates/shmem/src/size.rs`), whose heap is one allocation of
    // this layer: listed here for the same reason. The name is the specification's.
    Setting::new(
        "SHMEM_SYMMETRIC_SIZE",
        "shmem",
        "bytes of each PE's symmetric heap (shmem_malloc and friends carve it): a count, or with K, M, G, T (powers of 1024; 1.5G)",
        "256M",
    ),
    Setting::new(
        "NF_RMA_DIRECT",
        "rma",
        "1: same-host procs map each other's segments and use load / store; 0: every other proc goes through its service thread (for tests and comparisons)",
        "1",
    ),
    Setting::new(
        "NF_RMA_OFI",
        "rma",
        "put / get to procs on other hosts: auto uses the ofi transport's native RMA where every end has an endpoint with FI_RMA and a wait fd, except with a provider carried over sockets (tcp, sockets, udp: the service thread is as fast and starts in no time), else the service thread; on: native RMA or start-up fails, naming the proc and why; off: always the service thread",
        "auto",
    ),
    Setting::new(
        "NF_RMA_BIND",
        "rma",
        "address the rma service thread listens on and native RMA's ofi endpoint binds (IP providers); an interface address, not a wildcard",
        "NF_TCP_BIND, else loopback when every proc is on this host, else the first non-loopback IPv4",
    ),
    Setting::new(
        "NF_RMA_CHUNK",
        "rma",
        "largest payload of one rma service request or reply, bytes, 4096 ..= 67108864",
        "1048576",
    ),
];

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
    /// Reads the settings from the environment (see the module doc).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_defaults_are_the_parsers() {
        let c = RmaConfig::from_sources(&|_| None, None).unwrap();
        let listed = |name: &str| SETTINGS.iter().find(|s| s.name == name).unwrap().default;
        assert_eq!((listed("NF_RMA_DIRECT"), c.direct), ("1", true));
        assert_eq!((listed("NF_RMA_OFI"), c.ofi), ("auto", OfiMode::Auto));
        assert_eq!(listed("NF_RMA_CHUNK"), c.chunk.to_string());
        // Unset, the service binds as the core's network transports do.
        assert_eq!(c.bind, None);
        assert!(listed("NF_RMA_BIND").starts_with("NF_TCP_BIND, else"));
    }

    #[test]
    fn off_publishes_no_segments() {
        let off = |n: &str| (n == nf_memreg::ENV).then(|| "off".to_owned());
        assert_eq!(
            RmaConfig::from_sources(&off, None).unwrap().mem_registry,
            None
        );
    }
}
