//! The rma layer's error type: every refusal names the operation and the argument.

use std::path::PathBuf;

use crate::wireup::WireupError;

/// Everything that can go wrong with one-sided memory.
///
/// `op` fields name the public call (`"put_strided"`, `"lock"`, …) and `arg` fields
/// the argument as the caller wrote it (`"count[2]"`, `"remote"`), so an ABI layer
/// can pass the text straight to its user.
#[derive(Debug, thiserror::Error)]
pub enum RmaError {
    /// The wire-up services (allgather, barrier) failed.
    #[error("rma wire-up: {0}")]
    Wireup(#[from] WireupError),
    /// A setting or service of the core failed.
    #[error(transparent)]
    Core(#[from] nf_core::CoreError),
    /// An `NF_RMA_*` (or shared `NF_*`) environment setting could not be parsed.
    #[error("{var}={value:?} is invalid: expected {expected}")]
    Config {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },
    /// A proc (world rank) outside the job, or outside the team asked for.
    #[error("{op}: proc {proc} does not exist (valid: 0..{size})")]
    NoSuchProc {
        /// The call.
        op: &'static str,
        /// The proc asked for.
        proc: usize,
        /// Number of procs.
        size: usize,
    },
    /// A remote range that is not inside one segment the proc allocated.
    #[error(
        "{op}: {arg} range {addr:#x}+{len} B is not inside any segment of proc {proc}; use \
         addresses from that proc's entry of a collective allocation"
    )]
    OutOfSegment {
        /// The call.
        op: &'static str,
        /// The argument holding the address.
        arg: String,
        /// The proc whose memory was named.
        proc: usize,
        /// First byte.
        addr: u64,
        /// Length in bytes.
        len: u64,
    },
    /// A null pointer where memory is needed.
    #[error("{op}: {arg} is a null pointer")]
    Null {
        /// The call.
        op: &'static str,
        /// The argument.
        arg: String,
    },
    /// A size, count or length that must not be zero (or negative in the C ABI).
    #[error("{op}: {arg} must be at least 1 (got {value})")]
    Zero {
        /// The call.
        op: &'static str,
        /// The argument.
        arg: String,
        /// The value given.
        value: i64,
    },
    /// More stride levels than [`crate::MAX_STRIDE_LEVELS`].
    #[error("{op}: {levels} stride levels exceed the limit of {max}")]
    StrideLevels {
        /// The call.
        op: &'static str,
        /// Levels asked for.
        levels: usize,
        /// The limit.
        max: usize,
    },
    /// A strided or vector description that does not hang together.
    #[error("{op}: {arg}: {why}")]
    BadShape {
        /// The call.
        op: &'static str,
        /// The argument at fault.
        arg: String,
        /// What is wrong with it.
        why: String,
    },
    /// An atomic operation on an address not aligned to its operand.
    #[error("{op}: {arg} address {addr:#x} is not aligned to {align} B")]
    Misaligned {
        /// The call.
        op: &'static str,
        /// The argument.
        arg: String,
        /// The address.
        addr: u64,
        /// The alignment required.
        align: usize,
    },
    /// A handle that was never issued, or was already waited for.
    #[error("{op}: handle {handle} is unknown (never issued, or already completed and waited)")]
    UnknownHandle {
        /// The call.
        op: &'static str,
        /// The handle's number.
        handle: u64,
    },
    /// A mutex number outside what `create_mutexes` made on that proc.
    #[error("{op}: mutex {mutex} of proc {proc} does not exist (that proc has {count})")]
    NoSuchMutex {
        /// The call.
        op: &'static str,
        /// The mutex asked for.
        mutex: usize,
        /// The proc hosting it.
        proc: usize,
        /// Mutexes that proc has.
        count: usize,
    },
    /// Unlocking a mutex this proc does not hold.
    #[error("{op}: mutex {mutex} of proc {proc} is not held by this proc")]
    NotHeld {
        /// The call.
        op: &'static str,
        /// The mutex.
        mutex: usize,
        /// The proc hosting it.
        proc: usize,
    },
    /// An address that `free` / `free_local` did not hand out (or already freed).
    #[error("{op}: {addr:#x} is not the start of a live allocation of this proc")]
    NotAllocated {
        /// The call.
        op: &'static str,
        /// The address.
        addr: u64,
    },
    /// Members of a collective call disagree (different sizes, different mutex counts…).
    #[error("{op}: {why}")]
    Collective {
        /// The call.
        op: &'static str,
        /// What differed.
        why: String,
    },
    /// A collective allocation the host of `proc` cannot hold: its procs would place
    /// `need` bytes in segments where only `room` fit. Every member of the
    /// allocation gets this error; nothing was allocated.
    #[error(
        "{op}: the host of proc {proc} cannot hold this allocation: its procs would place \
         {} in shared-memory segments, but only {} are {limit}; ask for less, spread the \
         job over more hosts, or free memory there",
        bytes(*need),
        bytes(*room)
    )]
    NoRoom {
        /// The call.
        op: &'static str,
        /// The first proc (in team order) whose host is short.
        proc: usize,
        /// Bytes that host's procs asked for together.
        need: u64,
        /// Bytes that fit there.
        room: u64,
        /// What limits it.
        limit: crate::Limit,
    },
    /// A system call on shared memory failed.
    #[error("{what} {path}: {source}")]
    Shm {
        /// What was being done.
        what: &'static str,
        /// The segment file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A network or system operation of the service path failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, to what.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The connection to a proc's service broke; operations to it cannot complete.
    #[error("proc {proc} unreachable: {why}")]
    PeerLost {
        /// The proc.
        proc: usize,
        /// What happened.
        why: String,
    },
    /// A same-host proc holding a lock or mutex we wait for has died.
    #[error("{op}: proc {proc} (pid {pid}) died while holding {what}; the job cannot continue")]
    PeerDied {
        /// The call that was waiting.
        op: &'static str,
        /// The dead proc.
        proc: usize,
        /// Its pid.
        pid: u32,
        /// What it held.
        what: String,
    },
    /// A proc of our node died while we waited for it in a node collective.
    #[error("{op}: proc {proc} (pid {pid}) died before {what}; the job cannot continue")]
    PeerLeft {
        /// The collective that was waiting.
        op: &'static str,
        /// The dead proc.
        proc: usize,
        /// Its pid.
        pid: u32,
        /// What it did not do.
        what: String,
    },
    /// A peer sent bytes that break the rma protocol; they were dropped.
    #[error("rma protocol violation by proc {proc}: {why}")]
    Protocol {
        /// The sender.
        proc: usize,
        /// What was wrong.
        why: String,
    },
    /// The target refused a request (it names the call and argument).
    #[error("proc {proc} refused the request: {why}")]
    Remote {
        /// The target.
        proc: usize,
        /// Its reason.
        why: String,
    },
    /// A feature this build does not have.
    #[error("{0} is not supported by this build of the rma layer")]
    Unsupported(String),
}

/// `n` bytes as people read them: `34359738368 B (32.0 GiB)`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = None;
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = Some(u);
    }
    match unit {
        Some(u) => format!("{n} B ({v:.1} {u})"),
        None => format!("{n} B"),
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = RmaError> = std::result::Result<T, E>;
