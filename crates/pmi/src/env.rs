//! The environment contract between the launcher and every rank.
//!
//! | variable | meaning | required |
//! |---|---|---|
//! | `NF_RANK` | this rank, `0..NF_SIZE` | yes |
//! | `NF_SIZE` | ranks in the job, ≥ 1 | yes |
//! | `NF_LOCAL_RANK` | this rank's index among the ranks on its host | no, defaults to `NF_RANK` |
//! | `NF_LOCAL_SIZE` | ranks on this host | no, defaults to `NF_SIZE` |
//! | `NF_JOB_ID` | unique per job, safe in file names (see [`is_valid_job_id`]) | yes |
//! | `NF_PMI_ADDR` | the launcher's PMI server: `tcp:IP:PORT`, else the path of a unix socket (see [`PmiAddr`]); unset means a singleton run | — |
//! | `NF_PMI_SECRET` | the job's secret, shown in the hello (see [`crate::secret`]) | with a `tcp:` address |
//! | `NF_PMI_TIMEOUT` | deadline of every PMI call, in seconds (fractions allowed) | no, default 60 |
//! | `NF_HOST` | the name of this rank's host as the launcher was given it (`nf run --hosts`); ranks with equal values share memory | no; set only for multi-host launches |
//!
//! The other variables are only read when `NF_PMI_ADDR` is set.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use nf_sys::setting::Setting;

use crate::addr::PmiAddr;
use crate::error::PmiError;
use crate::secret::is_valid_secret;

/// Name of the variable holding this rank's number.
pub const RANK: &str = "NF_RANK";
/// Name of the variable holding the number of ranks in the job.
pub const SIZE: &str = "NF_SIZE";
/// Name of the variable holding this rank's index among the ranks on its host.
pub const LOCAL_RANK: &str = "NF_LOCAL_RANK";
/// Name of the variable holding the number of ranks on this host.
pub const LOCAL_SIZE: &str = "NF_LOCAL_SIZE";
/// Name of the variable holding the job id.
pub const JOB_ID: &str = "NF_JOB_ID";
/// Name of the variable holding the address of the launcher's PMI server.
pub const PMI_ADDR: &str = "NF_PMI_ADDR";
/// Name of the variable holding the job's PMI secret.
pub const PMI_SECRET: &str = "NF_PMI_SECRET";
/// Name of the variable holding the name of this rank's host (multi-host launches).
pub const HOST: &str = "NF_HOST";
/// Name of the variable holding the PMI call deadline in seconds.
pub const PMI_TIMEOUT: &str = "NF_PMI_TIMEOUT";

/// Deadline of a PMI call when `NF_PMI_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// `NF_PMI_TIMEOUT`, as `nf config` lists it (in [`crate::SETTINGS`]); the rest of
/// the contract is the launcher's to set, not the user's.
pub(crate) const TIMEOUT_SETTING: Setting = Setting::new(
    PMI_TIMEOUT,
    "pmi",
    "seconds any call to the launcher (nf run, PMIx, PMI-2) may take; fractions allowed",
    "60",
);
/// Longest job id accepted, in bytes.
pub const MAX_JOB_ID_LEN: usize = 64;

/// Everything a rank learns from the launcher's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    /// This rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// This rank's index among the ranks on its host.
    pub local_rank: usize,
    /// Ranks on this host.
    pub local_size: usize,
    /// Job id, unique per job and safe in file names.
    pub job_id: String,
    /// Address of the launcher's PMI server.
    pub pmi_addr: PmiAddr,
    /// The job's secret, required when `pmi_addr` is TCP.
    pub secret: Option<String>,
    /// This rank's host as the launcher named it; `None` unless the job spans hosts.
    pub host: Option<String>,
    /// Deadline of every PMI call.
    pub timeout: Duration,
}

impl JobEnv {
    /// Reads the contract from this process's environment; `Ok(None)` when `NF_PMI_ADDR` is unset.
    pub fn from_env() -> Result<Option<JobEnv>, PmiError> {
        JobEnv::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the contract through `lookup` (a variable name to its value); `Ok(None)` without `NF_PMI_ADDR`.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<JobEnv>, PmiError> {
        let Some(addr_os) = lookup(PMI_ADDR) else {
            return Ok(None);
        };
        let pmi_addr = PmiAddr::parse(&addr_os).ok_or_else(|| {
            invalid(
                PMI_ADDR,
                &addr_os,
                "tcp:IP:PORT (port above 0) or the path of the launcher's unix socket",
            )
        })?;
        let size = required_number(&lookup, SIZE, "a rank count of at least 1")?;
        if size == 0 {
            return Err(invalid(SIZE, OsStr::new("0"), "a rank count of at least 1"));
        }
        let rank = required_number(&lookup, RANK, &format!("a rank below NF_SIZE={size}"))?;
        if rank >= size {
            return Err(invalid(
                RANK,
                OsStr::new(&rank.to_string()),
                &format!("a rank below NF_SIZE={size}"),
            ));
        }
        let local_size =
            optional_number(&lookup, LOCAL_SIZE, "a rank count of at least 1")?.unwrap_or(size);
        if local_size == 0 {
            return Err(invalid(
                LOCAL_SIZE,
                OsStr::new("0"),
                "a rank count of at least 1",
            ));
        }
        let expect_local = format!("a local rank below NF_LOCAL_SIZE={local_size}");
        let local_rank = optional_number(&lookup, LOCAL_RANK, &expect_local)?.unwrap_or(rank);
        if local_rank >= local_size {
            return Err(invalid(
                LOCAL_RANK,
                OsStr::new(&local_rank.to_string()),
                &expect_local,
            ));
        }
        let job_os = lookup(JOB_ID).ok_or(PmiError::EnvMissing { var: JOB_ID })?;
        let job_id = match job_os.to_str() {
            Some(s) if is_valid_job_id(s) => s.to_owned(),
            _ => return Err(invalid(JOB_ID, &job_os, JOB_ID_RULE)),
        };
        let secret = match lookup(PMI_SECRET) {
            Some(v) => match v.to_str() {
                Some(s) if is_valid_secret(s) => Some(s.to_owned()),
                _ => return Err(invalid(PMI_SECRET, &v, SECRET_RULE)),
            },
            None if matches!(pmi_addr, PmiAddr::Tcp(_)) => {
                return Err(PmiError::EnvMissing { var: PMI_SECRET })
            }
            None => None,
        };
        let host = match lookup(HOST) {
            Some(v) => match v.to_str() {
                Some(s) if !s.is_empty() => Some(s.to_owned()),
                _ => return Err(invalid(HOST, &v, "a non-empty host name in UTF-8")),
            },
            None => None,
        };
        let timeout = call_timeout(&lookup)?;
        Ok(Some(JobEnv {
            rank,
            size,
            local_rank,
            local_size,
            job_id,
            pmi_addr,
            secret,
            host,
            timeout,
        }))
    }

    /// The variables a launcher sets for this rank: all of the contract except
    /// `NF_PMI_TIMEOUT`, which passes through from the user's environment;
    /// `NF_PMI_SECRET` and `NF_HOST` only when set.
    pub fn vars(&self) -> Vec<(&'static str, OsString)> {
        let mut vars = vec![
            (RANK, self.rank.to_string().into()),
            (SIZE, self.size.to_string().into()),
            (LOCAL_RANK, self.local_rank.to_string().into()),
            (LOCAL_SIZE, self.local_size.to_string().into()),
            (JOB_ID, self.job_id.clone().into()),
            (PMI_ADDR, self.pmi_addr.to_os_string()),
        ];
        if let Some(s) = &self.secret {
            vars.push((PMI_SECRET, s.into()));
        }
        if let Some(h) = &self.host {
            vars.push((HOST, h.into()));
        }
        vars
    }
}

const SECRET_RULE: &str = "1 to 128 printable ASCII characters without spaces";

const JOB_ID_RULE: &str = "1 to 64 characters from A-Z a-z 0-9 . _ -, not starting with '.'";

/// Whether `id` is usable as a job id: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.`.
pub fn is_valid_job_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_JOB_ID_LEN
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The deadline of every call to a launcher: `NF_PMI_TIMEOUT`, else [`DEFAULT_TIMEOUT`]
/// (read by every wire-up source, not only `nf run`'s).
pub fn call_timeout(lookup: &impl Fn(&str) -> Option<OsString>) -> Result<Duration, PmiError> {
    match lookup(PMI_TIMEOUT) {
        None => Ok(DEFAULT_TIMEOUT),
        Some(v) => parse_timeout(&v)
            .ok_or_else(|| invalid(PMI_TIMEOUT, &v, "a positive number of seconds")),
    }
}

/// A job id made from a launcher's name for the job (a PMIx namespace, a PMI-2 job
/// id): `prefix-` and the name with every character outside `A-Z a-z 0-9 . _ -`
/// replaced by `_`, cut to [`MAX_JOB_ID_LEN`]. Every rank of a job gets the same id.
pub fn job_id_from(prefix: &str, name: &str) -> String {
    let mut id: String = format!("{prefix}-{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    id.truncate(MAX_JOB_ID_LEN);
    id
}

/// Parses a positive, finite number of seconds.
pub fn parse_timeout(value: &OsStr) -> Option<Duration> {
    let secs: f64 = value.to_str()?.trim().parse().ok()?;
    if secs > 0.0 {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

fn invalid(var: &'static str, value: &OsStr, expected: &str) -> PmiError {
    PmiError::EnvInvalid {
        var,
        value: value.to_string_lossy().into_owned(),
        expected: expected.to_owned(),
    }
}

fn optional_number(
    lookup: &impl Fn(&str) -> Option<OsString>,
    var: &'static str,
    expected: &str,
) -> Result<Option<usize>, PmiError> {
    match lookup(var) {
        None => Ok(None),
        Some(v) => match v.to_str().and_then(|s| s.trim().parse::<usize>().ok()) {
            Some(n) => Ok(Some(n)),
            None => Err(invalid(var, &v, expected)),
        },
    }
}

fn required_number(
    lookup: &impl Fn(&str) -> Option<OsString>,
    var: &'static str,
    expected: &str,
) -> Result<usize, PmiError> {
    optional_number(lookup, var, expected)?.ok_or(PmiError::EnvMissing { var })
}

/// An environment of `vars` only, for tests of the readers above and of launchers'.
#[cfg(test)]
pub(crate) fn fake_lookup<'a>(
    vars: &'a [(&'a str, &'a str)],
) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::env::fake_lookup as lookup;

    const GOOD: [(&str, &str); 4] = [
        (PMI_ADDR, "/tmp/x.sock"),
        (RANK, "2"),
        (SIZE, "4"),
        (JOB_ID, "12x0badf00d"),
    ];

    #[test]
    fn no_addr_means_singleton() {
        assert_eq!(JobEnv::from_lookup(lookup(&[(RANK, "zz")])).unwrap(), None);
    }

    /// What `vars` exports parses back to the same contract.
    fn assert_round_trips(env: JobEnv) {
        let vars: Vec<(String, String)> = env
            .vars()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_string().unwrap()))
            .collect();
        let again =
            JobEnv::from_lookup(|n| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.into()))
                .unwrap();
        assert_eq!(again, Some(env));
    }

    #[test]
    fn full_contract_parses_and_round_trips() {
        let env = JobEnv::from_lookup(lookup(&GOOD)).unwrap().unwrap();
        assert_eq!(
            (env.rank, env.size, env.local_rank, env.local_size),
            (2, 4, 2, 4)
        );
        assert_eq!(env.timeout, DEFAULT_TIMEOUT);
        assert_round_trips(env);
    }

    #[test]
    fn bad_values_name_the_variable_and_value() {
        let cases: &[(&str, &str, &str)] = &[
            (RANK, "4", "NF_RANK"),
            (RANK, "-1", "NF_RANK"),
            (SIZE, "0", "NF_SIZE"),
            (JOB_ID, "a/b", "NF_JOB_ID"),
            (PMI_TIMEOUT, "0", "NF_PMI_TIMEOUT"),
            (PMI_TIMEOUT, "soon", "NF_PMI_TIMEOUT"),
            (LOCAL_RANK, "9", "NF_LOCAL_RANK"),
            (PMI_ADDR, "tcp:nohost:1", "NF_PMI_ADDR"),
            (PMI_SECRET, "has space", "NF_PMI_SECRET"),
            (HOST, "", "NF_HOST"),
        ];
        for (var, value, named) in cases {
            let mut vars: Vec<(&str, &str)> =
                GOOD.iter().copied().filter(|(k, _)| k != var).collect();
            vars.push((var, value));
            let err = JobEnv::from_lookup(lookup(&vars)).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.contains(named) && msg.contains(value),
                "{var}={value}: {msg}"
            );
        }
    }

    #[test]
    fn tcp_address_needs_a_secret_and_round_trips_with_host() {
        let tcp: Vec<(&str, &str)> = GOOD
            .iter()
            .copied()
            .filter(|(k, _)| *k != PMI_ADDR)
            .chain([(PMI_ADDR, "tcp:10.0.0.1:4000")])
            .collect();
        let err = JobEnv::from_lookup(lookup(&tcp)).unwrap_err();
        assert!(
            matches!(err, PmiError::EnvMissing { var: PMI_SECRET }),
            "{err}"
        );
        let mut full = tcp.clone();
        full.extend([(PMI_SECRET, "0123abcd"), (HOST, "h1"), (LOCAL_RANK, "1")]);
        let env = JobEnv::from_lookup(lookup(&full)).unwrap().unwrap();
        assert_eq!(env.pmi_addr, PmiAddr::Tcp("10.0.0.1:4000".parse().unwrap()));
        assert_eq!(env.secret.as_deref(), Some("0123abcd"));
        assert_eq!(env.host.as_deref(), Some("h1"));
        assert_round_trips(env);
    }

    #[test]
    fn missing_rank_is_reported() {
        let vars: Vec<_> = GOOD.iter().copied().filter(|(k, _)| *k != RANK).collect();
        let err = JobEnv::from_lookup(lookup(&vars)).unwrap_err();
        assert!(matches!(err, PmiError::EnvMissing { var: RANK }), "{err}");
    }

    #[test]
    fn launcher_names_become_valid_job_ids() {
        for name in [
            "623050753",
            "kvs_1234_0",
            "prterun-vm-4711@1",
            "x".repeat(100).as_str(),
            "",
        ] {
            let id = job_id_from("pmix", name);
            assert!(is_valid_job_id(&id), "{name:?} -> {id:?}");
        }
        assert_eq!(job_id_from("pmix", "a@b:c"), "pmix-a_b_c");
    }

    #[test]
    fn fractional_timeout_is_accepted() {
        assert_eq!(
            parse_timeout(OsStr::new("0.25")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_timeout(OsStr::new("inf")), None);
    }
}
