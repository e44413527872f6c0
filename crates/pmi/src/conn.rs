//! The client's connection to the launcher: one request, one response, within a deadline.

use std::io::{self, BufReader, Read};
use std::time::{Duration, Instant};

use crate::addr::PmiAddr;
use crate::error::PmiError;
use crate::protocol::{self, LineError, Request, Response, MAX_LINE_LEN};
use crate::sock::{send_all, Stream};

/// A stream whose reads fail with `TimedOut` once a deadline has passed.
struct TimedStream {
    stream: Stream,
    deadline: Instant,
}

impl Read for TimedStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        (&self.stream).read(buf)
    }
}

/// A connection to the PMI server.
pub(crate) struct Conn {
    reader: BufReader<TimedStream>,
    line: Vec<u8>,
    timeout: Duration,
}

impl Conn {
    /// Connects to the server at `addr` (a TCP connect within `timeout`); every later
    /// call must finish within `timeout` too.
    pub(crate) fn connect(addr: &PmiAddr, timeout: Duration) -> Result<Conn, PmiError> {
        let stream = Stream::connect(addr, timeout).map_err(|source| PmiError::Connect {
            addr: addr.clone(),
            source,
        })?;
        let reader = BufReader::new(TimedStream {
            stream,
            deadline: Instant::now(),
        });
        Ok(Conn {
            reader,
            line: Vec::new(),
            timeout,
        })
    }

    /// Sends `req` and waits for its response, at most the connection's timeout.
    pub(crate) fn call(&mut self, req: &Request) -> Result<Response, PmiError> {
        let op = req.op();
        let deadline = Instant::now() + self.timeout;
        self.reader.get_mut().deadline = deadline;
        let line = protocol::encode(req);
        self.write(op, &line, deadline)?;
        match protocol::read_line(&mut self.reader, MAX_LINE_LEN, &mut self.line) {
            Ok(true) => serde_json::from_slice(&self.line).map_err(|e| PmiError::Protocol {
                op,
                detail: format!("not a PMI response: {e}"),
            }),
            Ok(false) | Err(LineError::Truncated) => Err(PmiError::Closed { op }),
            Err(LineError::TooLong) => Err(PmiError::Protocol {
                op,
                detail: format!("response line longer than {MAX_LINE_LEN} bytes"),
            }),
            Err(LineError::Io(e)) => Err(io_error(op, e, self.timeout)),
        }
    }

    fn write(&mut self, op: &'static str, line: &[u8], deadline: Instant) -> Result<(), PmiError> {
        let stream = &self.reader.get_ref().stream;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        stream
            .set_write_timeout(Some(left))
            .map_err(|source| PmiError::Io { op, source })?;
        send_all(stream, line).map_err(|e| io_error(op, e, self.timeout))
    }
}

/// Sorts an I/O failure into timeout, closed connection, or other.
fn io_error(op: &'static str, e: io::Error, timeout: Duration) -> PmiError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            PmiError::Timeout { op, after: timeout }
        }
        io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::UnexpectedEof => PmiError::Closed { op },
        _ => PmiError::Io { op, source: e },
    }
}
