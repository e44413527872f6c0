//! Self-tuning results (seed 002's idea of measuring, not guessing): `nf tune` measures
//! thresholds on this host and caches them here; [`crate::Config`] reads the cache.
//!
//! The cache is a small JSON object, e.g. `{"rndv_threshold": 32768}`; unknown keys
//! are ignored and a missing or unreadable file means "not tuned".

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Tuned values; `None` means not measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tuned {
    /// Payload size from which single-copy beats copying through frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rndv_threshold: Option<usize>,
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

/// Writes the cache, creating its directory.
pub fn store(t: &Tuned) -> std::io::Result<PathBuf> {
    let path = cache_path()
        .ok_or_else(|| std::io::Error::other("no HOME, XDG_CACHE_HOME or NF_TUNE_FILE"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(
        &path,
        serde_json::to_string_pretty(t).map_err(std::io::Error::other)? + "\n",
    )?;
    Ok(path)
}
