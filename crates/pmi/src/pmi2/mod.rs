//! The rank's side of the PMI-2 wire protocol: wire-up for a program started by
//! Slurm's `srun --mpi=pmi2` or MPICH's hydra (`mpiexec.hydra`), with no `nf run` and
//! no PMI library involved — the protocol is plain text on an inherited socket.
//!
//! 1. **Detect.** The launcher passes a connected socket as `PMI_FD` and the rank as
//!    `PMI_RANK` (`PMI_ID` on some), `PMI_SIZE`, sometimes `PMI_JOBID`.
//!    [`Client::from_env`] answers `Ok(None)` without `PMI_FD`, and an error naming
//!    the variable when the rest is missing or is not a number / not a socket.
//! 2. **Init.** A PMI-1 style `cmd=init pmi_version=2` line, then `fullinit` (our
//!    rank) → rank, size; `job-getid` → the job's key-value space; the job attribute
//!    `PMI_process_mapping` → our place on this node ([`mapping`]).
//! 3. **Exchange.** `kvs-put`, `kvs-fence`, `kvs-get`. The job has one key-value
//!    space, so rank r's value of `key` is stored as `key.r`.
//! 4. **Leave.** `finalize`, or `abort` (no answer).
//!
//! **Fences.** Launchers differ in what `kvs-fence` means: Slurm's is a barrier after
//! which every put is visible; MPICH's hydra (4.0) answers it at once and instead
//! holds a `kvs-get` until its key is put. So [`Bootstrap::fence`] puts an arrival
//! key, sends `kvs-fence`, and reads every other rank's arrival key: a barrier under
//! either reading (size − 1 gets per rank).
//!
//! Every call has a deadline (`NF_PMI_TIMEOUT`): a silent launcher is
//! [`PmiError::Timeout`], a closed socket [`PmiError::Closed`], a malformed answer
//! [`PmiError::Protocol`] — after either of the last two the connection is not used
//! again. The wire format is in [`wire`].

pub mod mapping;
pub mod wire;

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::bootstrap::{global_key, Bootstrap, Identity};
use crate::env::{call_timeout, job_id_from};
use crate::error::PmiError;
use crate::session::Session;
use wire::Command;

/// The variable holding the launcher's socket.
pub const FD: &str = "PMI_FD";
/// The variable holding this process's rank.
pub const RANK: &str = "PMI_RANK";
/// The variable some launchers use for the rank instead.
pub const ID: &str = "PMI_ID";
/// The variable holding the job's size.
pub const SIZE: &str = "PMI_SIZE";
/// The variable holding the launcher's job id, when it sets one.
pub const JOBID: &str = "PMI_JOBID";
/// Who sets these variables, for error messages.
const LAUNCHER: &str = "a PMI-2 launcher (srun --mpi=pmi2, MPICH's mpiexec.hydra)";

/// What the environment says about a PMI-2 launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmi2Env {
    /// The launcher's socket.
    pub fd: RawFd,
    /// Our rank as the environment gives it (sent in `fullinit`).
    pub rank: String,
    /// The launcher's job id, if given.
    pub jobid: Option<String>,
    /// Deadline of every call.
    pub timeout: Duration,
}

/// Reads the PMI-2 variables through `lookup`: `Ok(None)` without `PMI_FD`; an error
/// naming the variable when the rest is missing or garbled.
pub fn detect(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Option<Pmi2Env>, PmiError> {
    let Some(fd) = lookup(FD) else {
        return Ok(None);
    };
    let bad = |var: &'static str, problem: String| PmiError::LauncherEnv {
        var,
        problem,
        present: FD,
        launcher: LAUNCHER,
    };
    let number = |var: &'static str, v: &OsString| {
        v.to_str()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .ok_or_else(|| bad(var, format!("{:?}, not a number", v.to_string_lossy())))
    };
    let fd = number(FD, &fd)? as RawFd;
    let (var, rank) = match (lookup(ID), lookup(RANK)) {
        (Some(id), _) => (ID, id),
        (None, Some(r)) => (RANK, r),
        (None, None) => return Err(bad(RANK, "not set (nor PMI_ID)".into())),
    };
    let rank = number(var, &rank)?.to_string();
    match lookup(SIZE) {
        None => return Err(bad(SIZE, "not set".into())),
        Some(v) => {
            number(SIZE, &v)?;
        }
    }
    let jobid = lookup(JOBID).map(|v| v.to_string_lossy().into_owned());
    Ok(Some(Pmi2Env {
        fd,
        rank,
        jobid,
        timeout: call_timeout(&lookup)?,
    }))
}

/// A rank's connection to a PMI-2 launcher.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    id: Identity,
    /// The launcher's name for the job's key-value space (`job-getid`).
    kvs: String,
    timeout: Duration,
    session: Session,
    /// Fences completed.
    epoch: u64,
}

fn launcher_error(op: &'static str, detail: String) -> PmiError {
    PmiError::Launcher {
        via: "PMI-2",
        op,
        detail,
    }
}

impl Client {
    /// Connects through the socket a PMI-2 launcher gave this process, if it did.
    pub fn from_env() -> Result<Option<Client>, PmiError> {
        let Some(env) = detect(|n| std::env::var_os(n))? else {
            return Ok(None);
        };
        let stream = adopt_socket(env.fd)?;
        Client::connect(stream, &env.rank, env.jobid.as_deref(), env.timeout).map(Some)
    }

    /// Steps 2 over an already connected `stream`: `rank` as the environment gave it,
    /// the launcher's `jobid` if it set one, `timeout` for every call.
    pub fn connect(
        stream: UnixStream,
        rank: &str,
        jobid: Option<&str>,
        timeout: Duration,
    ) -> Result<Client, PmiError> {
        let io = |op: &'static str, source: io::Error| PmiError::Io { op, source };
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| io("init", e))?;
        stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| io("init", e))?;
        let mut c = Client {
            stream,
            id: Identity {
                rank: 0,
                size: 1,
                local_rank: 0,
                local_size: 1,
                job_id: String::new(),
            },
            kvs: String::new(),
            timeout,
            session: Session::default(),
            epoch: 0,
        };
        c.handshake()?;
        let mut pairs = vec![("pmirank", rank), ("threaded", "FALSE")];
        if let Some(j) = jobid {
            pairs.push(("pmijobid", j));
        }
        let r = c.call("fullinit", &pairs, "fullinit-response")?;
        let num = |key: &str| -> Result<usize, PmiError> {
            r.get(key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| PmiError::Protocol {
                    op: "fullinit",
                    detail: format!("the answer {r:?} has no numeric {key}"),
                })
        };
        (c.id.rank, c.id.size) = (num("rank")?, num("size")?);
        if c.id.size == 0 || c.id.rank >= c.id.size {
            return Err(launcher_error(
                "fullinit",
                format!(
                    "the launcher says rank {} of {} processes",
                    c.id.rank, c.id.size
                ),
            ));
        }
        let r = c.call("job-getid", &[], "job-getid-response")?;
        c.kvs = r.get("jobid").unwrap_or_default().to_owned();
        c.id.job_id = job_id_from("pmi2", &c.kvs);
        let r = c.call(
            "info-getjobattr",
            &[("key", "PMI_process_mapping")],
            "info-getjobattr-response",
        )?;
        (c.id.local_rank, c.id.local_size) = match r.get("value").filter(|_| found(&r)) {
            Some(m) => {
                let nodes = mapping::nodes(m, c.id.size)
                    .map_err(|detail| PmiError::Protocol { op: "init", detail })?;
                mapping::local(&nodes, c.id.rank)
            }
            None => {
                tracing::debug!("PMI-2 launcher gave no PMI_process_mapping");
                (c.id.rank, c.id.size)
            }
        };
        Ok(c)
    }

    /// The PMI-1 style version handshake that opens the conversation.
    fn handshake(&mut self) -> Result<(), PmiError> {
        self.write("init", wire::init_line())?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while byte[0] != b'\n' {
            self.read("init", &mut byte)?;
            line.push(byte[0]);
            if line.len() > wire::MAX_LINE_LEN {
                return Err(self.poison(PmiError::Protocol {
                    op: "init",
                    detail: format!("init answer longer than {} B", wire::MAX_LINE_LEN),
                }));
            }
        }
        let text = String::from_utf8_lossy(&line);
        let cmd = wire::decode_line(text.trim_end())
            .map_err(|detail| self.poison(PmiError::Protocol { op: "init", detail }))?;
        if cmd.name != "response_to_init" || cmd.get("rc") != Some("0") {
            return Err(launcher_error(
                "init",
                format!(
                    "the launcher answered {:?} to a PMI-2 init; does it speak PMI-2 \
                     (srun needs --mpi=pmi2)?",
                    text.trim_end()
                ),
            ));
        }
        Ok(())
    }

    /// Asks the launcher to end the whole job, reporting `msg` (it sends no answer).
    pub fn abort(&mut self, msg: &str) -> Result<(), PmiError> {
        let mut end = msg.len().min(wire::MAX_VALUE_LEN);
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        let m = wire::encode("abort", &[("isworld", "TRUE"), ("msg", &msg[..end])]);
        self.write("abort", &m)
    }

    /// Sends one command and reads its answer, which must be `expect` with rc=0.
    fn call(
        &mut self,
        op: &'static str,
        pairs: &[(&str, &str)],
        expect: &str,
    ) -> Result<Command, PmiError> {
        self.session.usable(op)?;
        self.write(op, &wire::encode(op, pairs))?;
        let mut prefix = [0u8; wire::LEN_DIGITS];
        self.read(op, &mut prefix)?;
        let len = wire::decode_len(&prefix)
            .map_err(|detail| self.poison(PmiError::Protocol { op, detail }))?;
        let mut body = vec![0u8; len];
        self.read(op, &mut body)?;
        let cmd =
            wire::decode(&body).map_err(|detail| self.poison(PmiError::Protocol { op, detail }))?;
        if cmd.name != expect {
            return Err(self.poison(PmiError::Protocol {
                op,
                detail: format!("expected {expect}, got {}", cmd.name),
            }));
        }
        match cmd.get("rc") {
            Some("0") => Ok(cmd),
            rc => Err(launcher_error(
                op,
                format!(
                    "the launcher answered rc={}: {}",
                    rc.unwrap_or("(none)"),
                    cmd.get("errmsg").unwrap_or("no message")
                ),
            )),
        }
    }

    fn write(&mut self, op: &'static str, bytes: &[u8]) -> Result<(), PmiError> {
        let r = self.stream.write_all(bytes);
        r.map_err(|e| self.io_error(op, e))
    }

    fn read(&mut self, op: &'static str, buf: &mut [u8]) -> Result<(), PmiError> {
        let r = self.stream.read_exact(buf);
        r.map_err(|e| self.io_error(op, e))
    }

    /// An I/O failure as a PMI error; the connection is unusable afterwards.
    fn io_error(&mut self, op: &'static str, e: io::Error) -> PmiError {
        let err = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => PmiError::Timeout {
                op,
                after: self.timeout,
            },
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset => PmiError::Closed { op },
            _ => PmiError::Io { op, source: e },
        };
        self.poison(err)
    }

    fn poison(&mut self, err: PmiError) -> PmiError {
        self.session.poison(err)
    }
}

impl Bootstrap for Client {
    fn source(&self) -> &str {
        "PMI-2"
    }

    fn identity(&self) -> &Identity {
        &self.id
    }

    /// Stores `value` under `key`; other ranks see it after the next fence.
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let key = global_key(key, self.id.rank);
        check(&key, value)?;
        self.call(
            "kvs-put",
            &[("key", &key), ("value", value)],
            "kvs-put-response",
        )
        .map(drop)
    }

    /// Waits until every rank has reached this fence (bounded by the timeout).
    /// A barrier: every rank puts an arrival key, `kvs-fence`, then reads every other
    /// rank's arrival (see "Fences" in the module doc).
    fn fence(&mut self) -> Result<(), PmiError> {
        self.epoch += 1;
        let arrived = format!("nf-fence-{}", self.epoch);
        self.put(&arrived, "1")?;
        self.call("kvs-fence", &[], "kvs-fence-response")?;
        let me = self.id.rank;
        for r in (0..self.id.size).filter(|&r| r != me) {
            self.get(r, &arrived)?;
        }
        Ok(())
    }

    /// Reads the value rank `src` put under `key`.
    fn get(&mut self, src: usize, key: &str) -> Result<String, PmiError> {
        let key = global_key(key, src);
        check(&key, "")?;
        let (src, kvs) = (src.to_string(), self.kvs.clone());
        let r = self.call(
            "kvs-get",
            &[("jobid", &kvs), ("srcid", &src), ("key", &key)],
            "kvs-get-response",
        )?;
        match r.get("value") {
            Some(v) if found(&r) => Ok(v.to_owned()),
            _ => Err(PmiError::KeyNotFound { key }),
        }
    }

    /// Leaves the job; must be the last call. Calling it again does nothing.
    fn finalize(&mut self) -> Result<(), PmiError> {
        if self.session.finalized() {
            return Ok(());
        }
        self.call("finalize", &[], "finalize-response")?;
        self.session.finish();
        Ok(())
    }

    /// PMI-2's abort carries no status: the launcher's own ends the job.
    fn end_job(&mut self, _status: i32, message: &str) -> Result<(), PmiError> {
        self.abort(message)
    }
}

fn found(cmd: &Command) -> bool {
    cmd.get("found")
        .is_some_and(|f| f.eq_ignore_ascii_case("true"))
}

/// Refuses keys and values the launcher would refuse, before sending them.
fn check(key: &str, value: &str) -> Result<(), PmiError> {
    if key.is_empty() || key.len() > wire::MAX_KEY_LEN {
        return Err(PmiError::BadKey {
            key_start: key.chars().take(16).collect(),
            len: key.len(),
            max: wire::MAX_KEY_LEN,
        });
    }
    if value.len() > wire::MAX_VALUE_LEN {
        return Err(PmiError::ValueTooLong {
            key: key.into(),
            len: value.len(),
            max: wire::MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// Takes ownership of the launcher's socket `fd` after checking it is an open socket.
fn adopt_socket(fd: RawFd) -> Result<UnixStream, PmiError> {
    let bad = |problem: String| PmiError::LauncherEnv {
        var: FD,
        problem,
        present: FD,
        launcher: LAUNCHER,
    };
    // SAFETY: `stat` is plain old data; all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes the stat buffer, a live local; an invalid fd is an
    // error return, not undefined behaviour.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(bad(format!(
            "{fd}, which is not an open file descriptor ({})",
            io::Error::last_os_error()
        )));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(bad(format!("{fd}, which is not a socket")));
    }
    // SAFETY: the launcher passed this descriptor to us for PMI and nothing else in
    // the process uses it (a second PMI client in the same process, e.g. an MPI
    // library, must not be started: see the module doc); it is open and a socket.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    // Children (ranks that start programs) must not inherit the launcher's socket.
    // SAFETY: fcntl on an fd we own, with an integer argument.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::env::fake_lookup as lookup;

    #[test]
    fn detection_names_what_is_missing() {
        assert_eq!(detect(lookup(&[(RANK, "1")])).unwrap(), None);
        let env = detect(lookup(&[(FD, "7"), (RANK, "1"), (SIZE, "4")]))
            .unwrap()
            .unwrap();
        assert_eq!((env.fd, env.rank.as_str(), env.jobid), (7, "1", None));
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[(FD, "7"), (SIZE, "4")], "PMI_RANK is not set"),
            (&[(FD, "7"), (RANK, "1")], "PMI_SIZE is not set"),
            (&[(FD, "x"), (RANK, "1"), (SIZE, "4")], "PMI_FD is \"x\""),
            (
                &[(FD, "7"), (RANK, "-1"), (SIZE, "4")],
                "PMI_RANK is \"-1\"",
            ),
        ];
        for (vars, want) in cases {
            let err = detect(lookup(vars)).unwrap_err().to_string();
            assert!(err.contains(want) && err.contains("PMI-2"), "{err}");
        }
    }

    #[test]
    fn a_descriptor_that_is_not_a_socket_is_refused() {
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let err = adopt_socket(fd).unwrap_err().to_string();
        assert!(
            err.contains("not a socket") && err.contains("PMI_FD"),
            "{err}"
        );
        let err = adopt_socket(987_654).unwrap_err().to_string();
        assert!(err.contains("not an open file descriptor"), "{err}");
    }
}
