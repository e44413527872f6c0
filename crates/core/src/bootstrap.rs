//! Where a rank learns who it is: the launcher's wire-up, or nothing (a singleton).

use crate::error::CoreError;

/// What a rank knows about the job before any transport exists.
pub struct Boot {
    /// This rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// This rank's index among the ranks on its host.
    pub local_rank: usize,
    /// Ranks on this host.
    pub local_size: usize,
    /// Job id, unique per run and safe in file names.
    pub job: String,
    /// The launcher's key-value service; `None` for a singleton.
    pub pmi: Option<nf_pmi::Client>,
}

impl Boot {
    /// Reads the launcher's environment (`nf run`), or makes a singleton.
    pub fn from_env() -> Result<Boot, CoreError> {
        match nf_pmi::Client::from_env()? {
            Some(pmi) => Ok(Boot {
                rank: pmi.rank(),
                size: pmi.size(),
                local_rank: pmi.local_rank(),
                local_size: pmi.local_size(),
                job: pmi.job_id().to_owned(),
                pmi: Some(pmi),
            }),
            None => Ok(Boot {
                rank: 0,
                size: 1,
                local_rank: 0,
                local_size: 1,
                job: format!("single{}", std::process::id()),
                pmi: None,
            }),
        }
    }

    /// Publishes `value` under `key` for the other ranks (no-op for a singleton).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), CoreError> {
        if let Some(p) = self.pmi.as_mut() {
            p.put(key, value)?;
        }
        Ok(())
    }

    /// Reads what some rank published under `key` before the last fence.
    pub fn get(&mut self, key: &str) -> Result<String, CoreError> {
        match self.pmi.as_mut() {
            Some(p) => Ok(p.get(key)?),
            None => Err(CoreError::Unsupported(format!(
                "key {key:?}: a singleton has no launcher to read it from"
            ))),
        }
    }

    /// A job-wide fence (no-op for a singleton).
    pub fn fence(&mut self) -> Result<(), CoreError> {
        if let Some(p) = self.pmi.as_mut() {
            p.fence()?;
        }
        Ok(())
    }
}
