//! One origin's connection on the service side: reading requests, applying them in
//! order (the first must be the hello), queueing and writing replies (step 3 of
//! `server.rs`).

use std::io;
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::Token;

use super::request::Ctx;
use super::server::{LockWait, Shared};
use super::wire::{Hello, Req, HELLO_LEN, REQ_LEN};
use crate::stream::{InBuf, OutBuf};

/// Unsent reply bytes per connection before we stop reading its requests.
pub(crate) const OUT_LIMIT: usize = 16 << 20;

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
    /// Received bytes not yet applied.
    inb: InBuf,
    /// Bytes of the frame being assembled, once its header is known.
    want: usize,
    /// Replies not yet written.
    out: OutBuf,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr) -> Conn {
        Conn {
            stream,
            peer,
            origin: None,
            inb: InBuf::default(),
            want: HELLO_LEN,
            out: OutBuf::default(),
        }
    }

    fn unsent(&self) -> usize {
        self.out.unsent()
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
            match self.inb.read_from(&self.stream, self.want) {
                Ok(0) if self.inb.data().is_empty() => return Err(End::Closed),
                Ok(0) => return Err(End::Fault("connection closed inside a request".into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.flush(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(End::Fault(format!("read failed: {e}"))),
            }
        }
    }

    pub(crate) fn flush(&mut self) -> Result<(), End> {
        self.out
            .flush_to(&self.stream)
            .map_err(|e| End::Fault(format!("write failed: {e}")))
    }

    pub(crate) fn reply(&mut self, ok: bool, id: u64, data: &[u8]) {
        super::push_reply(&mut self.out.bytes, ok, id, data);
    }

    fn apply_frames(
        &mut self,
        sh: &Shared,
        waiters: &mut Vec<LockWait>,
        token: Token,
    ) -> Result<(), End> {
        loop {
            let avail = self.inb.data().len();
            let Some(origin) = self.origin else {
                if avail < HELLO_LEN {
                    return Ok(());
                }
                let b: &[u8; HELLO_LEN] = self.inb.data()[..HELLO_LEN].try_into().expect("len");
                let theirs = Hello::decode(b, &sh.hello)
                    .map_err(|why| End::Fault(format!("refused hello: {why}")))?;
                self.inb.consume(HELLO_LEN);
                self.origin = Some(theirs.rank as usize);
                self.out.bytes.extend_from_slice(&sh.hello.encode());
                continue;
            };
            if avail < REQ_LEN {
                self.want = REQ_LEN;
                return Ok(());
            }
            let h: &[u8; REQ_LEN] = self.inb.data()[..REQ_LEN].try_into().expect("len");
            let req = Req::decode(h).map_err(|why| End::Fault(format!("bad request: {why}")))?;
            let total = REQ_LEN + req.body_len();
            if avail < total {
                self.want = total;
                return Ok(());
            }
            let body = &self.inb.data()[REQ_LEN..total];
            let mut ctx = Ctx {
                sh,
                origin,
                out: &mut self.out.bytes,
                waiters,
                token,
            };
            ctx.handle(&req, body)?;
            self.inb.consume(total);
            if self.unsent() > OUT_LIMIT {
                return Ok(());
            }
        }
    }
}
