//! [`Bootstrap`]: where a rank learns who it is and exchanges its wire-up data.
//!
//! The runtime needs little from a launcher: rank, size, place on the host, a job id,
//! and a key-value exchange with fences (each rank publishes values under names;
//! after a fence any rank reads what rank r published). Sources, picked by
//! [`from_env`] in this order:
//! 1. `nf run` (`NF_PMI_ADDR` set): its PMI server ([`crate::Client`]);
//! 2. a PMIx launcher such as Open MPI's `mpirun` (`PMIX_NAMESPACE` set)
//!    ([`crate::pmix::Client`]);
//! 3. a PMI-2 launcher such as `srun --mpi=pmi2` or MPICH's hydra (`PMI_FD` set)
//!    ([`crate::pmi2::Client`]);
//! 4. none of them: a [`Singleton`], rank 0 of 1.
//!
//! A launcher's half-set environment (say `PMIX_NAMESPACE` without `PMIX_RANK`) is an
//! error naming the variable, not a silent singleton. A layer with wire-up of its own
//! (a library started under MPI, wiring up through `MPI_COMM_WORLD`) implements
//! [`Bootstrap`] itself and hands it to the core (`nf_core::World::init_from`).

use std::collections::HashMap;
use std::ffi::OsString;

use crate::error::PmiError;

/// Who a rank is in its job, as its launcher says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// This rank, `0..size`.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// This rank's index among the job's ranks on its host (as the launcher sees it).
    pub local_rank: usize,
    /// The job's ranks on this host (as the launcher sees it).
    pub local_size: usize,
    /// The job's id: equal on every rank, unique per run, safe in file names
    /// ([`crate::env::is_valid_job_id`]).
    pub job_id: String,
}

/// A source of wire-up: who this rank is, and a key-value exchange with fences.
pub trait Bootstrap {
    /// Where the wire-up comes from, for messages ("nf run", "PMIx", …).
    fn source(&self) -> &str;
    /// Who this rank is.
    fn identity(&self) -> &Identity;
    /// This rank, `0..size()`.
    fn rank(&self) -> usize {
        self.identity().rank
    }
    /// Ranks in the job.
    fn size(&self) -> usize {
        self.identity().size
    }
    /// This rank's index among the job's ranks on its host.
    fn local_rank(&self) -> usize {
        self.identity().local_rank
    }
    /// The job's ranks on this host.
    fn local_size(&self) -> usize {
        self.identity().local_size
    }
    /// The job's id (see [`Identity::job_id`]).
    fn job_id(&self) -> &str {
        &self.identity().job_id
    }
    /// Publishes `value` under `key` as this rank's (seen by others after a fence).
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError>;
    /// Waits until every rank has reached this fence; bounded in time.
    fn fence(&mut self) -> Result<(), PmiError>;
    /// What `rank` published under `key` before the last fence.
    fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError>;
    /// Leaves the launcher's service; the last call.
    fn finalize(&mut self) -> Result<(), PmiError>;
    /// Asks the launcher to end the whole job now with exit `status` (every other rank
    /// is stopped), saying `message`; the caller exits next. A launcher whose
    /// protocol carries no status (PMI-2) ends the job with its own.
    fn end_job(&mut self, status: i32, message: &str) -> Result<(), PmiError>;
}

/// The global key under which `rank` stores its value of `key`, for launchers whose
/// key-value space is one for the whole job (`nf run`, PMI-2).
pub(crate) fn global_key(key: &str, rank: usize) -> String {
    format!("{key}.{rank}")
}

/// A launcher that can start this process as a rank of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// ninefold's own `nf run` (`NF_PMI_ADDR`).
    NfRun,
    /// A PMIx launcher such as Open MPI's `mpirun` (`PMIX_NAMESPACE`).
    Pmix,
    /// A PMI-2 launcher such as `srun --mpi=pmi2` or MPICH's hydra (`PMI_FD`).
    Pmi2,
}

impl Launcher {
    /// The launcher's name in messages, as [`Bootstrap::source`] gives it.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::NfRun => "nf run",
            Launcher::Pmix => "PMIx",
            Launcher::Pmi2 => "PMI-2",
        }
    }
}

/// A launcher found in the environment, and this process's rank as it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    /// Which launcher.
    pub launcher: Launcher,
    /// This process's rank, from the launcher's variables.
    pub rank: usize,
}

/// Which launcher the environment read through `lookup` says started this process, in
/// [`from_env`]'s order, without contacting it: `Ok(None)` for none (a singleton), an
/// error naming the variable when a launcher's environment is half set.
pub fn detect_launcher(
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<Option<Detected>, PmiError> {
    // Each detect below has checked that the rank it reads is a number.
    let number = |v: Option<OsString>| {
        v.and_then(|v| v.to_str().and_then(|s| s.trim().parse().ok()))
            .unwrap_or(0)
    };
    if let Some(env) = crate::JobEnv::from_lookup(&lookup)? {
        return Ok(Some(Detected {
            launcher: Launcher::NfRun,
            rank: env.rank,
        }));
    }
    if crate::pmix::detect(&lookup)? {
        return Ok(Some(Detected {
            launcher: Launcher::Pmix,
            rank: number(lookup("PMIX_RANK")),
        }));
    }
    if let Some(env) = crate::pmi2::detect(&lookup)? {
        return Ok(Some(Detected {
            launcher: Launcher::Pmi2,
            rank: env.rank.parse().unwrap_or(0),
        }));
    }
    Ok(None)
}

/// The wire-up this process's environment describes (see the module doc for the order).
pub fn from_env() -> Result<Box<dyn Bootstrap>, PmiError> {
    let found = detect_launcher(|n| std::env::var_os(n))?.map(|d| d.launcher);
    let joined: Option<Box<dyn Bootstrap>> = match found {
        None => None,
        Some(Launcher::NfRun) => crate::Client::from_env()?.map(|c| Box::new(c) as _),
        Some(Launcher::Pmix) => crate::pmix::Client::from_env()?.map(|c| Box::new(c) as _),
        Some(Launcher::Pmi2) => crate::pmi2::Client::from_env()?.map(|c| Box::new(c) as _),
    };
    Ok(joined.unwrap_or_else(|| Box::new(Singleton::new())))
}

/// A job of one rank: nothing to exchange with, so puts are kept for our own gets.
#[derive(Debug)]
pub struct Singleton {
    id: Identity,
    kv: HashMap<String, String>,
}

impl Singleton {
    /// Rank 0 of 1, with a job id from the process id.
    pub fn new() -> Singleton {
        Singleton {
            id: Identity {
                rank: 0,
                size: 1,
                local_rank: 0,
                local_size: 1,
                job_id: format!("single{}", std::process::id()),
            },
            kv: HashMap::new(),
        }
    }
}

impl Default for Singleton {
    fn default() -> Self {
        Singleton::new()
    }
}

impl Bootstrap for Singleton {
    fn source(&self) -> &str {
        "singleton"
    }
    fn identity(&self) -> &Identity {
        &self.id
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.kv.insert(key.to_owned(), value.to_owned());
        Ok(())
    }
    fn fence(&mut self) -> Result<(), PmiError> {
        Ok(())
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError> {
        match (rank, self.kv.get(key)) {
            (0, Some(v)) => Ok(v.clone()),
            _ => Err(PmiError::KeyNotFound {
                key: format!("{key} of rank {rank} (a singleton has only rank 0)"),
            }),
        }
    }
    fn finalize(&mut self) -> Result<(), PmiError> {
        Ok(())
    }
    /// Alone, there is no one else to stop.
    fn end_job(&mut self, _status: i32, _message: &str) -> Result<(), PmiError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_singleton_reads_back_what_it_put() {
        let mut s = Singleton::new();
        s.put("nf.host", "h").unwrap();
        s.fence().unwrap();
        assert_eq!(s.get(0, "nf.host").unwrap(), "h");
        assert!(s.get(1, "nf.host").is_err());
        assert!(s.get(0, "nf.other").is_err());
        assert!(crate::env::is_valid_job_id(s.job_id()));
    }

    #[test]
    fn launchers_are_detected_in_from_envs_order() {
        use crate::env::fake_lookup as lookup;
        let nf = [
            ("NF_PMI_ADDR", "/tmp/x.sock"),
            ("NF_SIZE", "2"),
            ("NF_RANK", "1"),
            ("NF_JOB_ID", "j1"),
        ];
        let pmix = [("PMIX_NAMESPACE", "ns"), ("PMIX_RANK", "1")];
        let pmi2 = [("PMI_FD", "7"), ("PMI_RANK", "1"), ("PMI_SIZE", "2")];
        assert_eq!(detect_launcher(lookup(&[])).unwrap(), None);
        let found = |vars: &[(&str, &str)]| {
            detect_launcher(lookup(vars))
                .unwrap()
                .map(|d| (d.launcher, d.rank))
        };
        assert_eq!(found(&pmi2), Some((Launcher::Pmi2, 1)));
        let both: Vec<_> = pmix.iter().chain(&pmi2).copied().collect();
        assert_eq!(found(&both), Some((Launcher::Pmix, 1)));
        let all: Vec<_> = nf.iter().chain(&both).copied().collect();
        assert_eq!(found(&all), Some((Launcher::NfRun, 1)));
        let err = detect_launcher(lookup(&[("PMIX_NAMESPACE", "ns")])).unwrap_err();
        assert!(err.to_string().contains("PMIX_RANK"), "{err}");
    }
}
