//! The rank's side: put, fence, get, abort and finalize against the launcher.

use std::time::Duration;

use tracing::debug;

use crate::bootstrap::{global_key, Bootstrap, Identity};
use crate::conn::Conn;
use crate::env::JobEnv;
use crate::error::PmiError;
use crate::protocol::{check_key, check_value, Request, Response, MAX_VALUE_LEN};
use crate::session::Session;

/// A rank's connection to the launcher's key-value service.
pub struct Client {
    env: JobEnv,
    id: Identity,
    conn: Conn,
    epoch: u64,
    session: Session,
}

impl Client {
    /// Connects using the launcher's environment; `Ok(None)` for a singleton run (no `NF_PMI_ADDR`).
    pub fn from_env() -> Result<Option<Client>, PmiError> {
        match JobEnv::from_env()? {
            Some(env) => Client::connect(env).map(Some),
            None => Ok(None),
        }
    }

    /// Connects to the server named in `env` and introduces this rank.
    pub fn connect(env: JobEnv) -> Result<Client, PmiError> {
        let conn = Conn::connect(&env.pmi_addr, env.timeout)?;
        let id = Identity {
            rank: env.rank,
            size: env.size,
            local_rank: env.local_rank,
            local_size: env.local_size,
            job_id: env.job_id.clone(),
        };
        let mut client = Client {
            env,
            id,
            conn,
            epoch: 0,
            session: Session::default(),
        };
        let hello = Request::Hello {
            rank: client.env.rank,
            size: client.env.size,
            job_id: client.env.job_id.clone(),
            secret: client.env.secret.clone(),
        };
        client.expect_ok(&hello)?;
        debug!(rank = client.env.rank, job = %client.env.job_id, "PMI connected");
        Ok(client)
    }

    /// This rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.env.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.env.size
    }

    /// This rank's index among the ranks on its host.
    pub fn local_rank(&self) -> usize {
        self.env.local_rank
    }

    /// Ranks on this host.
    pub fn local_size(&self) -> usize {
        self.env.local_size
    }

    /// This rank's host as the launcher named it (`NF_HOST`); `None` for single-host jobs.
    pub fn host(&self) -> Option<&str> {
        self.env.host.as_deref()
    }

    /// The job id: unique per job, safe in file names.
    pub fn job_id(&self) -> &str {
        &self.env.job_id
    }

    /// The deadline of every call.
    pub fn timeout(&self) -> Duration {
        self.env.timeout
    }

    /// Fences this rank has completed.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Stores `value` under `key`; other ranks see it after the next fence.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        check_key(key)?;
        check_value(key, value)?;
        self.expect_ok(&Request::Put {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// Waits until every rank has reached this fence (bounded by the timeout).
    pub fn fence(&mut self) -> Result<(), PmiError> {
        self.expect_ok(&Request::Fence {
            epoch: self.epoch + 1,
        })?;
        self.epoch += 1;
        Ok(())
    }

    /// Reads the value under `key`; [`PmiError::KeyNotFound`] when no rank has put it.
    pub fn get(&mut self, key: &str) -> Result<String, PmiError> {
        check_key(key)?;
        match self.call(&Request::Get {
            key: key.to_owned(),
        })? {
            Response::Value { value } => Ok(value),
            Response::NotFound { key } => Err(PmiError::KeyNotFound { key }),
            other => Err(unexpected("get", other)),
        }
    }

    /// Asks the launcher to tear the whole job down, this rank included, reporting `msg`.
    ///
    /// Returns once the launcher has the request; the rank should then exit (or wait to be
    /// killed). A message over [`MAX_VALUE_LEN`] bytes is cut short.
    pub fn abort(&mut self, msg: &str) -> Result<(), PmiError> {
        self.end(None, msg)
    }

    /// [`Client::abort`], or with `Some(status)` the job ending on purpose with that
    /// exit status (`shmem_global_exit`).
    fn end(&mut self, status: Option<i32>, msg: &str) -> Result<(), PmiError> {
        let mut end = msg.len().min(MAX_VALUE_LEN);
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        self.expect_ok(&Request::Abort {
            message: msg[..end].to_owned(),
            status,
        })
    }

    /// Says goodbye to the launcher; must be the last call. Calling it again does nothing.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        if self.session.finalized() {
            return Ok(());
        }
        self.expect_ok(&Request::Finalize)?;
        self.session.finish();
        Ok(())
    }

    fn expect_ok(&mut self, req: &Request) -> Result<(), PmiError> {
        match self.call(req)? {
            Response::Ok => Ok(()),
            other => Err(unexpected(req.op(), other)),
        }
    }

    /// Sends one request; error responses become [`PmiError::Refused`].
    fn call(&mut self, req: &Request) -> Result<Response, PmiError> {
        let op = req.op();
        self.session.usable(op)?;
        match self.conn.call(req) {
            Ok(Response::Error { message }) => Err(PmiError::Refused { op, message }),
            Ok(resp) => Ok(resp),
            Err(e) if e.poisons_connection() => Err(self.session.poison(e)),
            Err(e) => Err(e),
        }
    }
}

fn unexpected(op: &'static str, resp: Response) -> PmiError {
    match resp {
        Response::Error { message } => PmiError::Refused { op, message },
        other => PmiError::Protocol {
            op,
            detail: format!("answer {other:?} does not fit the request"),
        },
    }
}

/// `nf run`'s key-value space is global: rank r's value of `key` is stored as `key.r`.
impl Bootstrap for Client {
    fn source(&self) -> &str {
        "nf run"
    }
    fn identity(&self) -> &Identity {
        &self.id
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        Client::put(self, &global_key(key, self.env.rank), value)
    }
    fn fence(&mut self) -> Result<(), PmiError> {
        Client::fence(self)
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError> {
        Client::get(self, &global_key(key, rank))
    }
    fn finalize(&mut self) -> Result<(), PmiError> {
        Client::finalize(self)
    }
    fn end_job(&mut self, status: i32, message: &str) -> Result<(), PmiError> {
        self.end(Some(status), message)
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("env", &self.env)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}
