//! One origin's connection on the service side: reading requests, applying them in
//! order (the first must be the hello), queueing and writing replies (step 3 of
//! `server.rs`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::Token;

use super::request::Ctx;
use super::server::{LockWait, Shared};
use super::wire::{Hello, Req, HELLO_LEN, REQ_LEN};

/// Unsent reply bytes per connection before we stop reading its requests.
pub(crate) const OUT_LIMIT: usize = 16 << 20;
/// Smallest read buffer growth.
const READ_CHUNK: usize = 256 << 10;

/// Why a connection ends.
pub(crate) enum End {
    /// The origin closed it between requests.
    Closed,
    /// Something broke; the reason is logged.
    Fault(String),
}

/// One origin's connection: its unread bytes and unsent replies.
pub(crate) struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub origin: Option<usize>,
    /// Bytes `lo..hi` are received and not yet applied.
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    /// Bytes of the frame being assembled, once its header is known.
    want: usize,
    /// Unsent reply bytes are `out[sent..]`.
    out: Vec<u8>,
    sent: usize,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr) -> Conn {
        Conn {
            stream,
            peer,
            origin: None,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
            want: HELLO_LEN,
            out: Vec::new(),
            sent: 0,
        }
    }

    fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Step 3 of the loop for this connection.
    pub(crate) fn pump(
        &mut self,
        sh: &Shared,
        waiters: &mut Vec<LockWait>,
        token: Token,
    ) -> Result<(), End> {
        loop {
            self.flush()?;
            if self.unsent() > OUT_LIMIT {
                return Ok(());
            }
            self.apply_frames(sh, waiters, token)?;
            if self.unsent() > OUT_LIMIT {
                continue;
            }
            match self.read_more() {
                Ok(0) if self.hi == self.lo => return Err(End::Closed),
                Ok(0) => return Err(End::Fault("connection closed inside a request".into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.flush(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(End::Fault(format!("read failed: {e}"))),
            }
        }
    }

    pub(crate) fn flush(&mut self) -> Result<(), End> {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(End::Fault("socket accepts no more bytes".into())),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(End::Fault(format!("write failed: {e}"))),
            }
        }
        self.out.clear();
        self.sent = 0;
        Ok(())
    }

    fn read_more(&mut self) -> io::Result<usize> {
        if self.hi == self.buf.len() {
            if self.lo > 0 {
                self.buf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
            }
            if self.hi == self.buf.len() {
                let grow = self.want.saturating_sub(self.hi).max(READ_CHUNK);
                self.buf.resize(self.buf.len() + grow, 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.hi..])?;
        self.hi += n;
        Ok(n)
    }

    pub(crate) fn reply(&mut self, ok: bool, id: u64, data: &[u8]) {
        super::push_reply(&mut self.out, ok, id, data);
    }

    fn apply_frames(
        &mut self,
        sh: &Shared,
        waiters: &mut Vec<LockWait>,
        token: Token,
    ) -> Result<(), End> {
        loop {
            let avail = self.hi - self.lo;
            let Some(origin) = self.origin else {
                if avail < HELLO_LEN {
                    return Ok(());
                }
                let b: &[u8; HELLO_LEN] = self.buf[self.lo..self.lo + HELLO_LEN]
                    .try_into()
                    .expect("len");
                let theirs = Hello::decode(b, &sh.hello)
                    .map_err(|why| End::Fault(format!("refused hello: {why}")))?;
                self.lo += HELLO_LEN;
                self.origin = Some(theirs.rank as usize);
                self.out.extend_from_slice(&sh.hello.encode());
                continue;
            };
            if avail < REQ_LEN {
                self.want = REQ_LEN;
                return Ok(());
            }
            let h: &[u8; REQ_LEN] = self.buf[self.lo..self.lo + REQ_LEN]
                .try_into()
                .expect("len");
            let req = Req::decode(h).map_err(|why| End::Fault(format!("bad request: {why}")))?;
            let total = REQ_LEN + req.body_len();
            if avail < total {
                self.want = total;
                return Ok(());
            }
            let body = &self.buf[self.lo + REQ_LEN..self.lo + total];
            let mut ctx = Ctx {
                sh,
                origin,
                out: &mut self.out,
                waiters,
                token,
            };
            ctx.handle(&req, body)?;
            self.lo += total;
            if self.unsent() > OUT_LIMIT {
                return Ok(());
            }
        }
    }
}
