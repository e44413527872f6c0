//! What every launcher client tracks about its own connection: whether it failed in a
//! way that leaves it unusable, and whether the rank has finalized.

use crate::error::PmiError;

/// The state of a rank's session with its launcher.
#[derive(Debug, Default)]
pub(crate) struct Session {
    /// The first failure that left the connection in an unknown state.
    broken: Option<String>,
    finalized: bool,
}

impl Session {
    /// Refuses `op` after finalize or after a failure that broke the connection.
    pub(crate) fn usable(&self, op: &'static str) -> Result<(), PmiError> {
        if self.finalized {
            return Err(PmiError::Finalized { op });
        }
        if let Some(first) = &self.broken {
            return Err(PmiError::Broken {
                op,
                first: first.clone(),
            });
        }
        Ok(())
    }

    /// Records `err` as the failure that broke the connection (the first one wins).
    pub(crate) fn poison(&mut self, err: PmiError) -> PmiError {
        self.broken.get_or_insert_with(|| err.to_string());
        err
    }

    /// Whether finalize has run.
    pub(crate) fn finalized(&self) -> bool {
        self.finalized
    }

    /// Marks the session finalized: every later call is refused.
    pub(crate) fn finish(&mut self) {
        self.finalized = true;
    }
}
