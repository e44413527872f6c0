//! A setting's value here and now, and where it came from: the environment, what
//! `nf tune` cached, or the default. Each layer declares its own settings beside the
//! code that parses them (the core's: [`crate::SETTINGS`]); `nf config` gathers every
//! layer's list and resolves it here.

use std::path::PathBuf;

use nf_sys::setting::Setting;

use crate::tune::Tuned;

/// Where a setting's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Unset: the default applies.
    Default,
    /// The environment.
    Env,
    /// `nf tune`'s cache file.
    TuneCache(PathBuf),
    /// Measured at start-up by an earlier job on this host, kept in the tune cache
    /// (`crate::calibrate`).
    Measured(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Env => f.write_str("env"),
            Source::TuneCache(p) => write!(f, "tune cache {}", p.display()),
            Source::Measured(p) => write!(f, "measured on this host, tune cache {}", p.display()),
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

/// The value of each of `settings`: the environment's (through `lookup`), else what
/// `nf tune` cached (`tuned`, with its file), else the default.
pub fn resolve(
    settings: &[Setting],
    lookup: impl Fn(&str) -> Option<String>,
    tuned: Option<(Tuned, PathBuf)>,
) -> Vec<Resolved> {
    let cached: Vec<(&str, usize)> = tuned.as_ref().map(|t| t.0.settings()).unwrap_or_default();
    settings
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

/// [`resolve`] for this process: its environment and this user's tune cache, with the
/// single-copy threshold an earlier job measured on this host where nothing else
/// gives it.
pub fn resolve_here(settings: &[Setting]) -> Vec<Resolved> {
    let tuned = crate::tune::cached().zip(crate::tune::cache_path());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let measured = tuned.as_ref().and_then(|(t, path)| {
        let host = nf_sys::host::host_identity();
        Some((crate::calibrate::cached_for(t, &host, now)??, path.clone()))
    });
    let mut all = resolve(settings, |n| std::env::var(n).ok(), tuned);
    if let Some((threshold, path)) = measured {
        for r in &mut all {
            if r.setting.name == "NF_RNDV_THRESHOLD" && r.source == Source::Default {
                r.value = threshold.to_string();
                r.source = Source::Measured(path.clone());
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_from_env_then_tune_cache_then_default() {
        let env = |n: &str| (n == "NF_WAIT").then(|| "spin".to_string());
        let tuned = Tuned {
            rndv_threshold: Some(65536),
            ofi_packet: Some(4096),
            ..Tuned::default()
        };
        let r = resolve(
            crate::SETTINGS,
            env,
            Some((tuned, PathBuf::from("/c/tune.json"))),
        );
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
}
