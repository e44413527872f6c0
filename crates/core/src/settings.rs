//! The list of every `NF_*` setting of ninefold's layers — core, rma, node, launcher,
//! benchmarks — with meaning and default: what `nf config` prints and the README's
//! settings table is generated from. Each layer parses its own settings (core:
//! [`crate::config`]; rma: `nf_rma::config`); this list is the one place they are
//! named for users, and a test keeps the README in step with it.

use std::path::PathBuf;

use crate::tune::Tuned;

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Which layer reads it.
    pub layer: &'static str,
    /// What it does.
    pub meaning: &'static str,
    /// Its value when unset.
    pub default: &'static str,
}

const fn s(
    name: &'static str,
    layer: &'static str,
    meaning: &'static str,
    default: &'static str,
) -> Setting {
    Setting {
        name,
        layer,
        meaning,
        default,
    }
}

/// Every setting, by layer.
pub const SETTINGS: &[Setting] = &[
    s("NF_SHM_DIR", "core", "directory (a tmpfs) for shared-memory segments", "/dev/shm"),
    s("NF_SHM_RINGS", "core", "receive rings per receiver, 1 ..= local ranks", "1"),
    s("NF_SHM_FRAMES", "core", "frames per ring, a power of two", "128"),
    s("NF_SHM_FRAME_SIZE", "core", "bytes per frame including its 64 B header: the eager and fragment size (equal on every rank of a host)", "what `nf tune` cached, else 16384"),
    s("NF_SHM_FAST_LIMIT", "core", "largest packet (metadata + payload) a rank sends through a fast box, 0 ..= 496; 0: fast boxes off", "what `nf tune` cached, else 496"),
    s("NF_RNDV_THRESHOLD", "core", "payloads of at least this many bytes go single-copy after a handshake", "what `nf tune` cached, else 4194304"),
    s("NF_TUNE_FILE", "core", "where `nf tune` caches its measurements", "$XDG_CACHE_HOME/ninefold/tune.json or ~/.cache/ninefold/tune.json"),
    s("NF_MAX_PAYLOAD", "core", "largest active-message payload accepted, sent or received", "1073741824"),
    s("NF_WAIT", "core", "spin, yield (spin, then yield, then nap) or auto (spin unless this host's ranks outnumber NF_JOB_CPUS)", "auto"),
    s("NF_JOB_CPUS", "core", "CPUs this job's ranks on a host share, for NF_WAIT=auto (nf run sets it from its affinity mask and cgroup CPU quota)", "this process's affinity mask and cgroup CPU quota"),
    s("NF_PARK_US", "core", "a non-spinning rank sleeps in poll(2) after a wait found nothing this many µs (never: no parking)", "50"),
    s("NF_PEER_CHECK_MS", "core", "how often a waiting rank checks that its peers are alive", "250"),
    s("NF_TRANSPORTS", "core", "transports a job may use, comma-separated: shm, ofi, tcp", "shm,ofi,tcp"),
    s("NF_TCP_BIND", "core", "address the network transports bind", "loopback if all peers are local, else the first non-loopback IPv4"),
    s("NF_TCP_HOT_US", "core", "a busy tcp connection is read by the rank's own polls for this long after its last traffic", "500 with shm peers, else what `nf tune` cached, else 20000"),
    s("NF_TCP_LANES", "core", "tcp connections per pair of ranks on different hosts, 1 ..= 16 (equal on every rank); from 2, messages over tcp of at least NF_TCP_STRIPE bytes are striped across them", "1"),
    s("NF_TCP_STRIPE", "core", "with NF_TCP_LANES above 1, payloads over tcp of at least this many bytes are cut across the connections", "1048576"),
    s("NF_NET_ROUTE", "core", "transport between hosts by message size: tcp, ofi, or SMALL/LARGE@BYTES (tcp/ofi@65536)", "what `nf tune --route` cached for the other hosts, else tcp when the ofi provider runs over sockets (tcp, sockets, udp), else ofi"),
    s("NF_OFI_PROVIDER", "core", "libfabric provider of the ofi transport and native RMA", "tcp"),
    s("NF_OFI_NODE", "core", "source address the ofi endpoint binds", "as NF_TCP_BIND for IP providers"),
    s("NF_OFI_PACKET", "core", "largest payload of one ofi packet, bytes (equal on every rank)", "what `nf tune` cached, else 15872"),
    s("NF_OFI_RNDV", "core", "payloads of at least this many bytes to ranks on other hosts over ofi are read by the receiver with the provider's RMA (when it has RMA)", "65536"),
    s("NF_OFI_POLL_EVERY", "core", "with shm routes, the ofi completion queue is read every Nth empty poll", "1024"),
    s("NF_DEAD_AFTER_MS", "core", "a network peer that stops answering is lost after about this long", "tcp 20000, ofi 30000"),
    s("NF_SHOW_TRANSPORTS", "core", "if set (not 0), rank 0 prints the peer × transport matrix", "unset"),
    s("NF_HOST", "core", "this host's identity: ranks with equal values share memory", "host name + boot id"),
    s("NF_PMI_TIMEOUT", "pmi", "seconds any launcher call may take", "60"),
    s("NF_RMA_DIRECT", "rma", "1: same-host procs use load / store; 0: everything through the service thread", "1"),
    s("NF_RMA_OFI", "rma", "put / get to other hosts over ofi native RMA: auto, on, off", "auto"),
    s("NF_RMA_BIND", "rma", "address the rma service thread listens on", "NF_TCP_BIND, else as the core"),
    s("NF_RMA_CHUNK", "rma", "largest payload of one rma service request or reply, bytes", "1048576"),
    s("NF_MEM_REGISTRY", "rma", "where procs publish their segments for nf serve's /mem; off: nowhere", "$XDG_RUNTIME_DIR/ninefold/mem"),
    s("NF_ADDR", "node", "the server :/path means in the nf file commands", "nf serve's default socket"),
    s("NF_ALLOW_MPI", "launch", "1: nf run starts programs that link MPI (each rank a 1-rank MPI job)", "unset"),
    s("NF_PLOT_FONT", "bench", "TrueType font for benchmark plots", "DejaVu Sans or Liberation Sans"),
    s("NF_LOG", "all", "log filter (tracing directives: warn, info, debug, target=level); else RUST_LOG", "warn (nf serve: info)"),
];

/// Where a setting's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Unset: the default applies.
    Default,
    /// The environment.
    Env,
    /// `nf tune`'s cache file.
    TuneCache(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Env => f.write_str("env"),
            Source::TuneCache(p) => write!(f, "tune cache {}", p.display()),
        }
    }
}

/// A setting's value here and now, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The setting.
    pub setting: Setting,
    /// Its value (the default's text when unset).
    pub value: String,
    /// Where the value came from.
    pub source: Source,
}

/// Every setting's value: the environment's (through `lookup`), else what `nf tune`
/// cached (`tuned`, with its file), else the default.
pub fn resolve(
    lookup: impl Fn(&str) -> Option<String>,
    tuned: Option<(Tuned, PathBuf)>,
) -> Vec<Resolved> {
    let cached: Vec<(&str, usize)> = tuned.as_ref().map(|t| t.0.settings()).unwrap_or_default();
    SETTINGS
        .iter()
        .map(|&setting| {
            let in_cache = cached.iter().find(|(name, _)| *name == setting.name);
            let (value, source) = match (lookup(setting.name), in_cache, &tuned) {
                (Some(v), _, _) => (v, Source::Env),
                (None, Some((_, v)), Some((_, path))) => {
                    (v.to_string(), Source::TuneCache(path.clone()))
                }
                _ => (setting.default.to_owned(), Source::Default),
            };
            Resolved {
                setting,
                value,
                source,
            }
        })
        .collect()
}

/// [`resolve`] for this process: its environment and this user's tune cache.
pub fn resolve_here() -> Vec<Resolved> {
    let tuned = crate::tune::cached().zip(crate::tune::cache_path());
    resolve(|n| std::env::var(n).ok(), tuned)
}

/// The settings as a Markdown table (the README's).
pub fn markdown() -> String {
    let mut out = String::from("| variable | layer | meaning | default |\n|---|---|---|---|\n");
    for s in SETTINGS {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.name,
            s.layer,
            s.meaning.replace('|', "\\|"),
            s.default
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_nf_prefixed() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        assert!(names.iter().all(|n| n.starts_with("NF_")));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SETTINGS.len());
    }

    #[test]
    fn values_come_from_env_then_tune_cache_then_default() {
        let env = |n: &str| (n == "NF_WAIT").then(|| "spin".to_string());
        let tuned = Tuned {
            rndv_threshold: Some(65536),
            ofi_packet: Some(4096),
            ..Tuned::default()
        };
        let r = resolve(env, Some((tuned, PathBuf::from("/c/tune.json"))));
        let get = |n: &str| r.iter().find(|x| x.setting.name == n).unwrap().clone();
        assert_eq!(
            (get("NF_WAIT").value, get("NF_WAIT").source),
            ("spin".into(), Source::Env)
        );
        let rndv = get("NF_RNDV_THRESHOLD");
        assert_eq!(rndv.value, "65536");
        assert_eq!(rndv.source.to_string(), "tune cache /c/tune.json");
        assert_eq!(get("NF_OFI_PACKET").value, "4096");
        assert_eq!(get("NF_SHM_FRAME_SIZE").source, Source::Default);
        assert_eq!(get("NF_SHM_FRAMES").source, Source::Default);
        assert_eq!(get("NF_SHM_FRAMES").value, "128");
    }

    #[test]
    fn every_core_setting_the_parser_reads_is_listed() {
        // config.rs is the parser; every NF_ name in it must be in the list.
        // (Comments also name the launcher's variables, which users do not set.)
        let code = include_str!("config.rs")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for word in code.split(|c: char| !(c.is_ascii_uppercase() || c == '_')) {
            if word.starts_with("NF_") && word.len() > 3 {
                assert!(
                    SETTINGS.iter().any(|s| s.name == word),
                    "{word} is read in config.rs but not listed"
                );
            }
        }
    }
}
