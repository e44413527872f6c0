//! Self-tuning results (measured, not guessed): `nf tune` measures
//! thresholds and sizes on this host and caches them here; [`crate::Config`] reads the
//! cache, and a setting in the environment overrides it.
//!
//! The cache is a small JSON object, e.g. `{"rndv_threshold": 32768, "shm_frame_size":
//! 16448}`; unknown keys are ignored, a missing key means "not measured", and a missing
//! or unreadable file means "not tuned". It is a file on this host, so the values are
//! per host (a shared home directory shares them: set `NF_TUNE_FILE` per host then).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Tuned values; `None` means not measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tuned {
    /// Payload size from which single-copy beats copying through frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rndv_threshold: Option<usize>,
    /// Bytes per shm frame (`NF_SHM_FRAME_SIZE`): the eager and fragment size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_frame_size: Option<usize>,
    /// Largest packet a rank sends through a fast box (`NF_SHM_FAST_LIMIT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_fast_limit: Option<usize>,
    /// Tcp hold time of ranks without shm peers, µs (`NF_TCP_HOT_US`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_hot_us: Option<usize>,
    /// Largest payload of one ofi packet (`NF_OFI_PACKET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ofi_packet: Option<usize>,
    /// The network route to each other host measured (`NF_NET_ROUTE`'s syntax, e.g.
    /// `tcp/ofi@65536`), keyed by that host's identity (`NF_HOST`, or host name and
    /// boot id).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub net_route: BTreeMap<String, String>,
    /// The single-copy threshold a job measured at start-up (`calibrate.rs`), keyed by
    /// the identity of the host it ran on (host name and boot id unless `NF_HOST`), so
    /// a home shared by many hosts keeps each one's, and a reboot measures again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rndv_measured: BTreeMap<String, Measured>,
}

/// One host's start-up measurement of the single-copy threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// The threshold chosen; `None`: the measurement was inconclusive (out of time, or
    /// the peer refused single copy), so the default stands until it is retried.
    pub threshold: Option<usize>,
    /// When it was measured, seconds since the Unix epoch.
    pub at: u64,
}

impl Tuned {
    /// Each measured value with the setting it stands for, e.g.
    /// `("NF_SHM_FRAME_SIZE", 16448)`: what `nf config` shows and what `nf tune --check`
    /// sets in the environment of a job to run with a tuned value.
    pub fn settings(&self) -> Vec<(&'static str, usize)> {
        [
            ("NF_RNDV_THRESHOLD", self.rndv_threshold),
            ("NF_SHM_FRAME_SIZE", self.shm_frame_size),
            ("NF_SHM_FAST_LIMIT", self.shm_fast_limit),
            ("NF_TCP_HOT_US", self.tcp_hot_us),
            ("NF_OFI_PACKET", self.ofi_packet),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, v)))
        .collect()
    }

    /// These values, with each one `newer` measured replacing ours.
    pub fn updated(self, newer: &Tuned) -> Tuned {
        Tuned {
            rndv_threshold: newer.rndv_threshold.or(self.rndv_threshold),
            shm_frame_size: newer.shm_frame_size.or(self.shm_frame_size),
            shm_fast_limit: newer.shm_fast_limit.or(self.shm_fast_limit),
            tcp_hot_us: newer.tcp_hot_us.or(self.tcp_hot_us),
            ofi_packet: newer.ofi_packet.or(self.ofi_packet),
            net_route: {
                let mut m = self.net_route;
                m.extend(newer.net_route.clone());
                m
            },
            rndv_measured: {
                let mut m = self.rndv_measured;
                m.extend(newer.rndv_measured.clone());
                m
            },
        }
    }
}

/// Where the cache lives (`NF_TUNE_FILE`, else the user's cache directory).
pub fn cache_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NF_TUNE_FILE") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ninefold").join("tune.json"))
}

/// Largest cache file read: far more than any cache written.
const MAX_CACHE_BYTES: u64 = 64 * 1024;

/// Reads the cache, if there is a usable one. The path is a setting, so it is read
/// bounded ([`nf_sys::file::read_regular_text`]): a device or FIFO there is
/// reported once and ignored, never read until memory runs out or waited on.
pub fn cached() -> Option<Tuned> {
    let path = cache_path()?;
    let text = match nf_sys::file::read_regular_text(&path, MAX_CACHE_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(error = %e, "ignoring the tune cache (NF_TUNE_FILE); `nf tune` writes a new one");
            return None;
        }
    };
    serde_json::from_str(&text).ok()
}

/// Writes the cache, creating its directory. The file is replaced in one step (a
/// new file renamed over it): jobs starting beside each other read it while one of
/// them writes.
pub fn store(t: &Tuned) -> std::io::Result<PathBuf> {
    let path = cache_path()
        .ok_or_else(|| std::io::Error::other("no HOME, XDG_CACHE_HOME or NF_TUNE_FILE"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let text = serde_json::to_string_pretty(t).map_err(std::io::Error::other)? + "\n";
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Tuned {
        Tuned {
            rndv_threshold: Some(65536),
            shm_frame_size: Some(8192),
            shm_fast_limit: Some(128),
            tcp_hot_us: Some(100),
            ofi_packet: Some(4096),
            net_route: BTreeMap::from([("h1".to_owned(), "tcp/ofi@65536".to_owned())]),
            rndv_measured: BTreeMap::from([(
                "h1".to_owned(),
                Measured {
                    threshold: Some(262144),
                    at: 1,
                },
            )]),
        }
    }

    #[test]
    fn every_field_round_trips_and_unknown_keys_are_ignored() {
        let t = all();
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Tuned>(&text).unwrap(), t);
        let old: Tuned = serde_json::from_str(r#"{"rndv_threshold": 1, "later": true}"#).unwrap();
        assert_eq!(
            old,
            Tuned {
                rndv_threshold: Some(1),
                ..Tuned::default()
            }
        );
        assert_eq!(serde_json::to_string(&Tuned::default()).unwrap(), "{}");
    }

    #[test]
    fn settings_name_each_measured_value_and_updates_keep_the_rest() {
        assert_eq!(all().settings().len(), 5);
        assert!(all().settings().contains(&("NF_TCP_HOT_US", 100)));
        let newer = Tuned {
            shm_frame_size: Some(4096),
            ..Tuned::default()
        };
        let u = all().updated(&newer);
        assert_eq!(u.shm_frame_size, Some(4096));
        assert_eq!(u.ofi_packet, Some(4096));
        assert_eq!(
            Tuned::default().updated(&newer).settings(),
            [("NF_SHM_FRAME_SIZE", 4096)]
        );
    }
}
