//! The rank's side of PMIx: wire-up for a program that Open MPI's `mpirun` (or
//! `prterun`, or `srun --mpi=pmix`) started, with no `nf run` involved.
//!
//! libpmix is reached through a small C shim (`shim/`, built by `build.rs`, loaded with
//! `dlopen` by `ffi.rs`), so machines without PMIx build and run everything else.
//!
//! 1. **Detect.** A PMIx launcher sets `PMIX_NAMESPACE` and `PMIX_RANK` (and the
//!    server's address in `PMIX_SERVER_URI*`). [`Client::from_env`] answers `Ok(None)`
//!    without `PMIX_NAMESPACE`, and an error naming the variable when only part of
//!    the environment is there or the shim cannot be loaded.
//! 2. **Join.** `PMIx_Init`; our rank and namespace; `PMIX_JOB_SIZE` and
//!    `PMIX_LOCAL_SIZE` of the job, `PMIX_LOCAL_RANK` of this process. The job id is
//!    the namespace made file-name safe ([`crate::env::job_id_from`]).
//! 3. **Exchange.** [`Client::put`] is `PMIx_Put(PMIX_GLOBAL)`; [`Client::fence`]
//!    commits and runs a data-collecting `PMIx_Fence` over the job; [`Client::get`]
//!    reads what rank r put under a key. Fence and get carry `PMIX_TIMEOUT`
//!    (`NF_PMI_TIMEOUT`), so a dead peer is an error, never a hang.
//! 4. **Leave.** `finalize` (`PMIx_Finalize`) or [`Client::abort`].
//!
//! `NF_PMIX_SHIM` overrides the path of the shim that `build.rs` built.

mod ffi;

use std::ffi::OsString;
use std::time::Duration;

use crate::bootstrap::{Bootstrap, Identity};
use crate::env::{call_timeout, job_id_from};
use crate::error::PmiError;
use crate::protocol::check_key;
use crate::session::Session;

pub(crate) use ffi::SHIM_SETTING;

/// The variable naming the job's PMIx namespace.
pub const NAMESPACE: &str = "PMIX_NAMESPACE";
/// The variable holding this process's PMIx rank.
pub const RANK: &str = "PMIX_RANK";
/// Who sets these variables, for error messages.
const LAUNCHER: &str = "a PMIx launcher (Open MPI's mpirun, prterun, srun --mpi=pmix)";

/// A joined PMIx client (at most one per process).
#[derive(Debug)]
pub struct Client {
    id: Identity,
    nspace: String,
    timeout: Duration,
    session: Session,
}

/// Whether the environment read through `lookup` says a PMIx launcher started us:
/// `Ok(false)` without `PMIX_NAMESPACE`; an error when it is half set.
pub fn detect(lookup: impl Fn(&str) -> Option<OsString>) -> Result<bool, PmiError> {
    if lookup(NAMESPACE).is_none() {
        return Ok(false);
    }
    let bad = |problem: String| PmiError::LauncherEnv {
        var: RANK,
        problem,
        present: NAMESPACE,
        launcher: LAUNCHER,
    };
    match lookup(RANK) {
        None => Err(bad("not set".into())),
        Some(v) if v.to_str().and_then(|s| s.parse::<u32>().ok()).is_none() => {
            Err(bad(format!("{:?}, not a rank number", v.to_string_lossy())))
        }
        Some(_) => Ok(true),
    }
}

fn launcher_error(op: &'static str, f: ffi::Fail, hint: &str) -> PmiError {
    PmiError::Launcher {
        via: "PMIx",
        op,
        detail: format!("{} ({}); {hint}", f.text, f.status),
    }
}

impl Client {
    /// Joins the job if a PMIx launcher started this process (step 1 and 2).
    pub fn from_env() -> Result<Option<Client>, PmiError> {
        let lookup = |n: &str| std::env::var_os(n);
        if !detect(lookup)? {
            return Ok(None);
        }
        let timeout = call_timeout(&lookup)?;
        let joined = ffi::init()
            .map_err(|why| PmiError::Unavailable { via: "PMIx", why })?
            .map_err(|(step, f)| {
                let hint = format!(
                    "reading {step} failed; was this process started by the PMIx server \
                     whose address is in PMIX_SERVER_URI*, and is it still running?"
                );
                launcher_error("init", f, &hint)
            })?;
        let client = Client {
            id: Identity {
                rank: joined.rank as usize,
                size: joined.size as usize,
                local_rank: joined.local_rank as usize,
                local_size: joined.local_size as usize,
                job_id: job_id_from("pmix", &joined.nspace),
            },
            nspace: joined.nspace,
            timeout,
            session: Session::default(),
        };
        let (rank, size) = (client.id.rank, client.id.size);
        if size == 0 || rank >= size {
            return Err(PmiError::Launcher {
                via: "PMIx",
                op: "init",
                detail: format!("the launcher says rank {rank} of a job of {size} processes"),
            });
        }
        tracing::debug!(rank, nspace = %client.nspace, "PMIx joined");
        Ok(Some(client))
    }

    /// Whether the PMIx shim loads here (for diagnostics; `from_env` says it too).
    pub fn available() -> Result<(), String> {
        ffi::available()
    }

    /// The deadline of fences and gets, in whole seconds for PMIx (at least 1).
    fn timeout_s(&self) -> i32 {
        self.timeout.as_secs().clamp(1, i32::MAX as u64) as i32
    }

    /// Asks the launcher to end the whole job, reporting `msg`.
    pub fn abort(&mut self, msg: &str) -> Result<(), PmiError> {
        self.abort_with(1, msg)
    }

    /// `PMIx_Abort` with `status`, the exit status the launcher reports.
    fn abort_with(&mut self, status: i32, msg: &str) -> Result<(), PmiError> {
        self.session.usable("abort")?;
        ffi::abort(status, msg).map_err(|f| launcher_error("abort", f, "the job may linger"))
    }
}

impl Bootstrap for Client {
    fn source(&self) -> &str {
        "PMIx"
    }

    fn identity(&self) -> &Identity {
        &self.id
    }

    /// Publishes `value` under `key`; the other processes see it after the next fence.
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.session.usable("put")?;
        check_key(key)?;
        ffi::put(key, value)
            .map_err(|f| launcher_error("put", f, "the PMIx server refused the value"))
    }

    /// Commits our puts and waits for every process of the job (bounded by the timeout).
    fn fence(&mut self) -> Result<(), PmiError> {
        self.session.usable("fence")?;
        ffi::fence(self.timeout_s()).map_err(|f| {
            let hint = format!(
                "not every process reached the fence within {:?}: one may be stuck or dead \
                 (raise NF_PMI_TIMEOUT if they legitimately need longer)",
                self.timeout
            );
            launcher_error("fence", f, &hint)
        })
    }

    /// Reads what `rank` put under `key` before the last fence.
    fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError> {
        self.session.usable("get")?;
        check_key(key)?;
        let r = u32::try_from(rank).map_err(|_| PmiError::Launcher {
            via: "PMIx",
            op: "get",
            detail: format!("rank {rank} does not fit PMIx's 32-bit ranks"),
        })?;
        ffi::get(r, key, self.timeout_s()).map_err(|f| {
            let hint = format!("rank {rank} has not put {key:?} before the last fence");
            launcher_error("get", f, &hint)
        })
    }

    /// Leaves the job; must be the last call. Calling it again does nothing.
    fn finalize(&mut self) -> Result<(), PmiError> {
        if self.session.finalized() {
            return Ok(());
        }
        self.session.finish();
        ffi::finalize().map_err(|f| launcher_error("finalize", f, "the launcher may report us"))
    }

    fn end_job(&mut self, status: i32, message: &str) -> Result<(), PmiError> {
        self.abort_with(status, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::env::fake_lookup as lookup;

    #[test]
    fn detection_needs_the_namespace_and_a_numeric_rank() {
        assert!(!detect(lookup(&[(RANK, "1")])).unwrap());
        assert!(detect(lookup(&[(NAMESPACE, "42"), (RANK, "1")])).unwrap());
        let err = detect(lookup(&[(NAMESPACE, "42")])).unwrap_err();
        assert!(err.to_string().contains("PMIX_RANK is not set"), "{err}");
        let err = detect(lookup(&[(NAMESPACE, "42"), (RANK, "x")])).unwrap_err();
        assert!(
            err.to_string().contains("PMIX_RANK") && err.to_string().contains("\"x\""),
            "{err}"
        );
    }

    #[test]
    fn the_shim_was_built_and_loads() {
        // scripts/setup.sh installs libpmix-dev; without it this says what is missing.
        Client::available().unwrap();
    }
}
