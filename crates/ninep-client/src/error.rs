//! [`ClientError`]: everything a client call can fail with.

use std::fmt;
use std::io;

use nf_ninep::errno::{EACCES, EAGAIN, EMFILE, ENOENT, ENOSYS, EPERM, ETIMEDOUT};
use nf_ninep::{DecodeError, EncodeError};

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server could not be reached. The OS error is shown once, in this message,
    /// with the hint that fits it (`connect_hint`), so it is not also a `source`:
    /// a chain printer would repeat it.
    #[error("connecting to {addr}: {error}{}", connect_hint(.error))]
    Connect {
        /// The address or socket path.
        addr: String,
        /// The OS error.
        error: io::Error,
    },
    /// A host name did not resolve.
    #[error("resolving {addr}: {error}; check the host name (and that a resolver is reachable)")]
    Resolve {
        /// The address as given.
        addr: String,
        /// The resolver's error.
        error: io::Error,
    },
    /// Reading from or writing to the connection failed.
    #[error("9P connection failed: {0}")]
    Io(#[from] io::Error),
    /// The server does not speak 9P2000.L (or not at the msize offered).
    #[error("9P server refused version 9P2000.L (it answered {answered:?}, msize {msize}); is it a 9P2000.L server?")]
    VersionRefused {
        /// The version string the server answered.
        answered: String,
        /// The msize it answered.
        msize: u32,
    },
    /// The server answered `Rlerror`.
    #[error("{}", Remote { op, path, errno: *errno })]
    Remote {
        /// The operation (`"walk"`, `"open"`, …).
        op: &'static str,
        /// The path it concerned, if any.
        path: String,
        /// The Linux errno the server sent.
        errno: u32,
    },
    /// The server answered with a reply of the wrong type.
    #[error("{op}: the server answered {got} (protocol error)")]
    UnexpectedReply {
        /// The operation.
        op: &'static str,
        /// The reply's message type.
        got: &'static str,
    },
    /// A reply could not be decoded; the connection is closed.
    #[error("decoding a 9P reply: {0} (the connection was closed)")]
    Decode(#[from] DecodeError),
    /// A request could not be encoded (a name over 65535 bytes, a frame over msize).
    #[error("{op}: request cannot be sent: {source}")]
    Encode {
        /// The operation.
        op: &'static str,
        /// Why.
        source: EncodeError,
    },
    /// The connection is closed; no more calls can be made on this client.
    #[error("9P connection closed: {reason}; reconnect to go on")]
    Disconnected {
        /// Why it closed.
        reason: String,
    },
    /// A path cannot be used for the operation (e.g. creating `/` or `..`).
    #[error("{op} {path:?}: {reason}")]
    BadPath {
        /// The operation.
        op: &'static str,
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The server did not answer in time.
    #[error("{what}: no answer from the 9P server within {after:?}; is it a 9P server, and is it alive? (connecting to the shm socket with a plain address, or the plain socket with shm:, waits like this)")]
    TimedOut {
        /// What waited (`"version"`, `"attach"`, a request).
        what: &'static str,
        /// How long it waited.
        after: std::time::Duration,
    },
    /// All 65535 tags are in use by calls in flight.
    #[error("too many 9P calls in flight on one connection (65535 tags in use); wait for some to finish")]
    NoFreeTag,
    /// A write moved fewer bytes than asked and then none.
    #[error("write {path}: the server took {written} of {len} bytes, then none")]
    ShortWrite {
        /// The file.
        path: String,
        /// Bytes written.
        written: u64,
        /// Bytes asked.
        len: u64,
    },
    /// A read returned fewer bytes than asked where the caller needed them all.
    #[error("read {path}: {got} of {asked} bytes at offset {offset} of the range (the file ended or shrank)")]
    ShortRead {
        /// The file.
        path: String,
        /// Offset of the short message within the range read.
        offset: u64,
        /// Bytes returned.
        got: u64,
        /// Bytes asked.
        asked: u64,
    },
}

/// What to check when connecting failed with `e`: a hint for the errors a user can act
/// on, by errno; nothing for the rest.
fn connect_hint(e: &io::Error) -> &'static str {
    const ECONNREFUSED: u32 = 111;
    const ENETUNREACH: u32 = 101;
    const EHOSTUNREACH: u32 = 113;
    let errno = e.raw_os_error().and_then(|n| u32::try_from(n).ok());
    match errno {
        Some(ENOENT | ECONNREFUSED) => " — is `nf serve` running there, at this address?",
        Some(EACCES | EPERM) => " — check the permissions of the socket and of its directories",
        Some(ETIMEDOUT) => " — is the host reachable (up, routed, the port not filtered)?",
        Some(ENETUNREACH | EHOSTUNREACH) => {
            " — no route to it: is the host up and the address right?"
        }
        _ if e.kind() == io::ErrorKind::TimedOut => {
            " — is the host reachable (up, routed, the port not filtered)?"
        }
        _ => "",
    }
}

/// Display helper for [`ClientError::Remote`].
struct Remote<'a> {
    op: &'a str,
    path: &'a str,
    errno: u32,
}

impl fmt::Display for Remote<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = io::Error::from_raw_os_error(i32::try_from(self.errno).unwrap_or(i32::MAX));
        if self.path.is_empty() {
            write!(f, "{}: {what}", self.op)?;
        } else {
            write!(f, "{} {}: {what}", self.op, self.path)?;
        }
        match self.errno {
            EAGAIN => f.write_str(
                " — the server is at a limit (clients or requests in flight); retry later",
            ),
            EMFILE => f.write_str(
                " — the server's fid limit for this connection is reached; clunk unused fids",
            ),
            ENOSYS => f.write_str(" — the server does not provide this (yet); see its README"),
            _ => Ok(()),
        }
    }
}

impl ClientError {
    /// The errno the server sent, for [`ClientError::Remote`].
    pub fn errno(&self) -> Option<u32> {
        match self {
            ClientError::Remote { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// The same error with `path` filled in, if it concerns the server's answer.
    pub(crate) fn at(self, where_: &str) -> Self {
        match self {
            ClientError::Remote { op, path, errno } if path.is_empty() => ClientError::Remote {
                op,
                path: where_.to_string(),
                errno,
            },
            ClientError::ShortWrite { written, len, .. } => ClientError::ShortWrite {
                path: where_.to_string(),
                written,
                len,
            },
            ClientError::ShortRead {
                offset, got, asked, ..
            } => ClientError::ShortRead {
                path: where_.to_string(),
                offset,
                got,
                asked,
            },
            other => other,
        }
    }
}

impl From<ClientError> for io::Error {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Io(e) => e,
            ClientError::Remote { errno, .. } => {
                let os = io::Error::from_raw_os_error(i32::try_from(errno).unwrap_or(i32::MAX));
                io::Error::new(os.kind(), e)
            }
            other => io::Error::other(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connect(errno: i32) -> String {
        ClientError::Connect {
            addr: String::from("tcp:10.0.0.1:564"),
            error: io::Error::from_raw_os_error(errno),
        }
        .to_string()
    }

    #[test]
    fn each_connect_error_gets_the_hint_of_its_errno_and_its_cause_once() {
        let running = "is `nf serve` running there";
        for (errno, hint) in [
            (2, running),                      // ENOENT
            (111, running),                    // ECONNREFUSED
            (13, "permissions of the socket"), // EACCES
            (110, "is the host reachable"),    // ETIMEDOUT
            (113, "no route to it"),           // EHOSTUNREACH
        ] {
            let text = connect(errno);
            assert!(text.contains(hint), "errno {errno}: {text}");
            assert_eq!(
                text.matches(running).count(),
                usize::from(hint == running),
                "{text}"
            );
            let cause = io::Error::from_raw_os_error(errno).to_string();
            assert_eq!(text.matches(&cause).count(), 1, "{text}");
        }
        // A timeout of connect_timeout's own (no errno) too.
        let timed_out = ClientError::Connect {
            addr: String::from("tcp:10.0.0.1:564"),
            error: io::Error::new(io::ErrorKind::TimedOut, "connection timed out"),
        };
        assert!(
            timed_out.to_string().contains("is the host reachable"),
            "{timed_out}"
        );
        // The OS error is not also a source: a chain printer would say it twice.
        assert!(std::error::Error::source(&timed_out).is_none());
    }
}
