//! Wire-up from an mpi4py communicator, for programs that already run under MPI: the
//! ranks are the communicator's, and the launcher's key-value exchange becomes one
//! `comm.allgather` per fence (as `libarmci` wires up over `MPI_COMM_WORLD`).
//!
//! A second PMIx client beside MPI's own is thus never needed.

use std::collections::HashMap;

use nf_pmi::bootstrap::{Bootstrap, Identity};
use nf_pmi::PmiError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A [`Bootstrap`] whose collectives are a Python communicator's (`allgather`, `bcast`).
pub(crate) struct CommBootstrap {
    comm: Py<PyAny>,
    id: Identity,
    /// What this rank put since the last fence.
    pending: HashMap<String, String>,
    /// What every rank had put, by rank, as of the last fence.
    table: Vec<HashMap<String, String>>,
}

fn comm_err(op: &'static str, e: PyErr) -> PmiError {
    PmiError::Launcher {
        via: "mpi4py",
        op,
        detail: format!("the MPI communicator's collective raised {e}"),
    }
}

impl CommBootstrap {
    /// Reads rank and size from `comm`, and which ranks share this host (collective).
    pub(crate) fn new(comm: Bound<'_, PyAny>) -> PyResult<CommBootstrap> {
        let rank: usize = comm.call_method0("Get_rank")?.extract()?;
        let size: usize = comm.call_method0("Get_size")?.extract()?;
        let host = nf_sys::host::host_identity();
        let hosts: Vec<String> = comm.call_method1("allgather", (host.clone(),))?.extract()?;
        let local_rank = hosts[..rank].iter().filter(|h| **h == host).count();
        let local_size = hosts.iter().filter(|h| **h == host).count();
        // Rank 0's process id names the job, as a singleton's does.
        let mine = format!("mpi4py-{}", std::process::id());
        let job_id: String = comm.call_method1("bcast", (mine, 0))?.extract()?;
        Ok(CommBootstrap {
            comm: comm.unbind(),
            id: Identity {
                rank,
                size,
                local_rank,
                local_size,
                job_id,
            },
            pending: HashMap::new(),
            table: vec![HashMap::new(); size],
        })
    }
}

impl Bootstrap for CommBootstrap {
    fn source(&self) -> &str {
        "mpi4py"
    }

    fn identity(&self) -> &Identity {
        &self.id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.pending.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    fn fence(&mut self) -> Result<(), PmiError> {
        let mine = std::mem::take(&mut self.pending);
        Python::attach(|py| {
            let d = PyDict::new(py);
            for (k, v) in &mine {
                d.set_item(k, v).map_err(|e| comm_err("fence", e))?;
            }
            let all: Vec<HashMap<String, String>> = self
                .comm
                .bind(py)
                .call_method1("allgather", (d,))
                .and_then(|r| r.extract())
                .map_err(|e| comm_err("fence (allgather)", e))?;
            for (slot, got) in self.table.iter_mut().zip(all) {
                slot.extend(got);
            }
            Ok(())
        })
    }

    fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError> {
        self.table
            .get(rank)
            .and_then(|t| t.get(key))
            .cloned()
            .ok_or_else(|| PmiError::KeyNotFound {
                key: format!("{key} (of rank {rank})"),
            })
    }

    fn finalize(&mut self) -> Result<(), PmiError> {
        // MPI owns the job's end (MPI_Finalize, at mpi4py's exit).
        Ok(())
    }

    /// `comm.Abort(status)`: MPI ends every process of the job with that code.
    fn end_job(&mut self, status: i32, _message: &str) -> Result<(), PmiError> {
        Python::attach(|py| {
            self.comm
                .bind(py)
                .call_method1("Abort", (status,))
                .map(drop)
                .map_err(|e| comm_err("end_job (Abort)", e))
        })
    }
}
