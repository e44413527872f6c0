//! The wire format: one JSON object per line, requests tagged by `op`, responses by `status`.
//!
//! See the crate documentation for the message table. This module only encodes, decodes
//! and frames; it knows nothing about sockets or job state.

use std::io::{self, BufRead, Read};

use serde::{Deserialize, Serialize};

use crate::error::PmiError;

/// Longest key, in bytes.
pub const MAX_KEY_LEN: usize = 256;
/// Longest value (and abort message), in bytes.
pub const MAX_VALUE_LEN: usize = 64 * 1024;
/// Longest line, in bytes without the newline. JSON escapes a byte as at most six
/// (`\u001f`), so every request with a valid key and value fits.
pub const MAX_LINE_LEN: usize = 6 * (MAX_KEY_LEN + MAX_VALUE_LEN) + 1024;
/// Longest first line a server that requires a secret reads from a connection that has
/// not shown it yet: a hello with the longest job id and secret fits.
pub const MAX_HELLO_LEN: usize = 1024;

/// A message from a rank to the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Introduces the connection: which rank of which job it is. Must come first.
    Hello {
        /// The rank.
        rank: usize,
        /// Ranks in the job, as the rank was told.
        size: usize,
        /// Job id, as the rank was told.
        job_id: String,
        /// The job's secret (`NF_PMI_SECRET`); required by TCP servers, left out when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<String>,
    },
    /// Stores `value` under `key`.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Waits until every rank has reached fence `epoch` (1, 2, …).
    Fence {
        /// The fence's number, one more than the rank's previous fence.
        epoch: u64,
    },
    /// Reads the value under `key`.
    Get {
        /// The key.
        key: String,
    },
    /// Asks the launcher to tear the job down.
    Abort {
        /// Why, for the user.
        message: String,
        /// The job's exit status, when the rank ends the job on purpose
        /// (`shmem_global_exit`); left out, the launcher's own for an abort.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<i32>,
    },
    /// Says goodbye; the server closes the connection after answering.
    Finalize,
}

impl Request {
    /// The request's name, as used in error messages.
    pub fn op(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::Put { .. } => "put",
            Request::Fence { .. } => "fence",
            Request::Get { .. } => "get",
            Request::Abort { .. } => "abort",
            Request::Finalize => "finalize",
        }
    }

    /// Checks the size limits of the strings the request carries.
    pub fn check_limits(&self) -> Result<(), PmiError> {
        match self {
            Request::Put { key, value } => {
                check_key(key)?;
                check_value(key, value)
            }
            Request::Get { key } => check_key(key),
            Request::Abort { message, .. } => check_value("<abort message>", message),
            Request::Hello { job_id, secret, .. } => {
                check_value("<job id>", job_id)?;
                check_value("<secret>", secret.as_deref().unwrap_or(""))
            }
            Request::Fence { .. } | Request::Finalize => Ok(()),
        }
    }
}

/// A message from the launcher to a rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Response {
    /// The request succeeded.
    Ok,
    /// The value a get asked for.
    Value {
        /// The value.
        value: String,
    },
    /// A get asked for a key that nobody has put.
    NotFound {
        /// The key.
        key: String,
    },
    /// The request failed.
    Error {
        /// Why.
        message: String,
    },
}

/// Checks that a key is 1 to [`MAX_KEY_LEN`] bytes.
pub fn check_key(key: &str) -> Result<(), PmiError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        let key_start: String = key.chars().take(32).collect();
        return Err(PmiError::BadKey {
            key_start,
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

/// Checks that a value is at most [`MAX_VALUE_LEN`] bytes.
pub fn check_value(key: &str, value: &str) -> Result<(), PmiError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(PmiError::ValueTooLong {
            key: key.to_owned(),
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// Encodes a message as one line, newline included.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // Serialising these plain enums of strings and integers cannot fail.
    let mut line = serde_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

/// Why a line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the limit; the stream is no longer framed.
    TooLong,
    /// The stream ended in the middle of a line.
    Truncated,
    /// The underlying read failed.
    Io(io::Error),
}

/// Reads one line of at most `max` bytes (newline excluded) into `buf`, without the newline.
/// Returns `Ok(false)` at a clean end of stream. Never buffers more than `max + 1` bytes.
pub fn read_line<R: BufRead>(
    reader: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<bool, LineError> {
    buf.clear();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let n = reader
        .take(limit)
        .read_until(b'\n', buf)
        .map_err(LineError::Io)?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(true);
    }
    if buf.len() > max {
        Err(LineError::TooLong)
    } else {
        Err(LineError::Truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_round_trips() {
        let reqs = [
            Request::Hello {
                rank: 3,
                size: 4,
                job_id: "1x2".into(),
                secret: None,
            },
            Request::Hello {
                rank: 0,
                size: 1,
                job_id: "1x2".into(),
                secret: Some("00ff".into()),
            },
            Request::Put {
                key: "k".into(),
                value: "v\n\"\u{1}é".into(),
            },
            Request::Fence { epoch: 7 },
            Request::Get { key: "k".into() },
            Request::Abort {
                message: "bye".into(),
                status: None,
            },
            Request::Abort {
                message: "done".into(),
                status: Some(0),
            },
            Request::Finalize,
        ];
        for req in reqs {
            let line = encode(&req);
            assert_eq!(
                line.iter().filter(|&&b| b == b'\n').count(),
                1,
                "one line: {req:?}"
            );
            let back: Request = serde_json::from_slice(&line[..line.len() - 1]).unwrap();
            assert_eq!(back, req);
        }
    }

    #[test]
    fn every_response_round_trips() {
        let resps = [
            Response::Ok,
            Response::Value { value: "x".into() },
            Response::NotFound { key: "k".into() },
            Response::Error {
                message: "no".into(),
            },
        ];
        for resp in resps {
            let line = encode(&resp);
            let back: Response = serde_json::from_slice(&line[..line.len() - 1]).unwrap();
            assert_eq!(back, resp);
        }
    }

    #[test]
    fn wire_format_is_as_documented() {
        assert_eq!(
            encode(&Request::Fence { epoch: 2 }),
            b"{\"op\":\"fence\",\"epoch\":2}\n"
        );
        assert_eq!(encode(&Response::Ok), b"{\"status\":\"ok\"}\n");
        let hello = Request::Hello {
            rank: 1,
            size: 2,
            job_id: "j".into(),
            secret: None,
        };
        assert_eq!(
            encode(&hello),
            b"{\"op\":\"hello\",\"rank\":1,\"size\":2,\"job_id\":\"j\"}\n"
        );
    }

    #[test]
    fn worst_case_request_fits_a_line() {
        let req = Request::Put {
            key: "\u{1}".repeat(MAX_KEY_LEN),
            value: "\u{1}".repeat(MAX_VALUE_LEN),
        };
        req.check_limits().unwrap();
        assert!(encode(&req).len() <= MAX_LINE_LEN + 1);
    }

    #[test]
    fn worst_case_hello_fits_the_hello_limit() {
        let hello = Request::Hello {
            rank: usize::MAX,
            size: usize::MAX,
            job_id: "j".repeat(crate::env::MAX_JOB_ID_LEN),
            secret: Some("s".repeat(crate::secret::MAX_SECRET_LEN)),
        };
        assert!(encode(&hello).len() <= MAX_HELLO_LEN + 1);
    }

    #[test]
    fn limits_are_enforced() {
        assert!(check_key("").is_err());
        assert!(check_key(&"k".repeat(MAX_KEY_LEN + 1)).is_err());
        assert!(check_value("k", &"v".repeat(MAX_VALUE_LEN + 1)).is_err());
    }

    #[test]
    fn read_line_frames_and_bounds() {
        let mut buf = Vec::new();
        let mut r = io::Cursor::new(b"ab\ncd\nxyz".to_vec());
        assert!(read_line(&mut r, 8, &mut buf).unwrap());
        assert_eq!(buf, b"ab");
        assert!(read_line(&mut r, 8, &mut buf).unwrap());
        assert_eq!(buf, b"cd");
        assert!(matches!(
            read_line(&mut r, 8, &mut buf),
            Err(LineError::Truncated)
        ));
        let mut r = io::Cursor::new(vec![b'x'; 100]);
        assert!(matches!(
            read_line(&mut r, 8, &mut buf),
            Err(LineError::TooLong)
        ));
        assert!(buf.len() <= 9);
        let mut r = io::Cursor::new(Vec::new());
        assert!(!read_line(&mut r, 8, &mut buf).unwrap());
    }
}
