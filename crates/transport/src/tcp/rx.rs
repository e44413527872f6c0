//! One peer's connection, receiving side: turns the byte stream into packets.
//!
//! Reading (whoever holds the connection's reader, see `handoff.rs`: the progress
//! thread when the socket is readable, or a polling owner directly):
//! 1. Bytes are read into a staging buffer, so many small frames cost one `read`.
//! 2. Complete frames are cut out of it: the header is checked first (lengths within
//!    bounds), then metadata and payload are copied into the packet's own buffer.
//! 3. A frame whose body is large is read straight into its packet buffer, taken
//!    from the [`Pool`] at the checked length; the staging buffer holds only what had
//!    already arrived.
//! 4. Before every `read`, packets cut so far are deposited ([`Deposit`]: the inbox,
//!    or the owner's own queue); if the deposit is over its limit, reading stops
//!    ([`Outcome::Full`]).
//! 5. Reading goes on until the socket has nothing more, or until a byte budget is
//!    spent, so one busy peer cannot starve the others. "Nothing more" is a `read`
//!    that would block; for the owner, who will look again at its next poll, also a
//!    `read` that filled less than the room it was given (the socket is empty), which
//!    saves a second, empty `read` per arrival. The progress thread cannot stop
//!    there: one epoll edge may carry both the last bytes and the end of the stream,
//!    and after a short read no new edge would come for the end.
//!
//! 6. A rank whose only transport is tcp (nothing else to poll) passes a wait: when
//!    the rest of a large body has not arrived yet, it sleeps in `poll(2)` until a
//!    good share of it has ([`SO_RCVLOWAT`](wait_for_rest)), at most that long,
//!    instead of returning to spin on `recv`. Measured across two namespace hosts
//!    sharing 2 cores, the spinning `recv`s took the core the kernel's copy needed:
//!    1–4 MiB ping-pongs moved 1–25 % more with the wait, under load.
//!
//! 7. A large body does not start where its buffer does (16 B into a page, where
//!    malloc puts a large chunk) but at a page offset set by its position in the
//!    stream: the stream position plus half a page. Measured across two namespace
//!    hosts (2-core AMD EPYC VM, alternating builds, 3 rounds), 1 MiB and 4 MiB
//!    ping-pongs moved 1.5–2.1× more than with the body at the buffer's start
//!    (2,180–2,790 against 1,230–1,320 MB/s at 1 MiB). The kernel's copy into the
//!    buffer was 3× slower per byte than the sender's copy out of its own, and
//!    reading into a buffer placed elsewhere (libfabric, once loaded, makes malloc
//!    hand out heap chunks at other offsets) made the same difference: a cache
//!    effect of where the copy's stores fall against its loads, most likely 4 KiB
//!    aliasing; the exact cause was not isolated.
//!
//! Recycled buffers ([`Pool`]): a large frame is read straight into its packet's
//! buffer. Taking that buffer from the pool, and giving it back when the packet is
//! dropped, means the progress thread reads into memory that is already mapped and
//! initialised: no allocation, no zeroing, no page faults per packet. Small packets
//! are allocated as they come.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use super::inbox::Arrival;
use super::sync::{lock, Mutex};
use super::wire::{Header, Kind, HEADER_LEN};
use crate::Packet;

/// Size of the staging buffer.
const STAGING: usize = 64 * 1024;
/// Frames with a body from this size up are read straight into their buffer.
const DIRECT: usize = 16 * 1024;
/// The page size that step 7 aligns to.
const PAGE: usize = 4096;
/// Step 7's distance, modulo a page, between where a body byte lands and its
/// position in the stream.
const SKEW: usize = PAGE / 2;
/// A body with at least this much still to come is waited for (step 6).
const WAIT_MIN: usize = 64 * 1024;
/// Bytes that must be readable before a wait for the rest of a body ends.
const WAIT_CHUNK: usize = 256 * 1024;

/// Where a reader leaves the packets it cut.
pub(crate) trait Deposit {
    /// Takes `batch` (emptying it); `bytes` is the sum of its packets' sizes.
    fn deposit(&mut self, batch: &mut Vec<Arrival>, bytes: usize);
    /// Whether the reader must stop: more than `limit` bytes wait to be taken.
    fn over(&self, limit: usize) -> bool;
}

/// Why a reader stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The socket has nothing more for now.
    Blocked,
    /// The byte budget is spent; more may be waiting.
    Budget,
    /// The inbox is over its limit.
    Full,
    /// The peer said goodbye.
    Bye,
    /// The connection is closed or failed.
    Closed(String),
    /// The peer sent something that is not a valid frame.
    Garbage(String),
}

/// A frame body being read straight into its packet buffer.
struct Body {
    meta_len: usize,
    /// At least `at + len` bytes long.
    data: Vec<u8>,
    /// Where the body starts in `data` (step 7).
    at: usize,
    len: usize,
    filled: usize,
}

/// Receiving state of one connection.
pub(crate) struct Reader {
    pub(crate) stream: Arc<TcpStream>,
    rank: usize,
    staging: Box<[u8]>,
    pool: Arc<Pool>,
    start: usize,
    end: usize,
    body: Option<Body>,
    /// Bytes read from the connection so far (for step 7).
    taken: u64,
    /// Sleeps for the rest of a body that ended with bytes to read (step 6), since
    /// the owner last took the count.
    pub(crate) waits: u64,
}

impl Reader {
    /// A reader for the connection to `rank`.
    pub(crate) fn new(stream: Arc<TcpStream>, rank: usize, pool: Arc<Pool>) -> Reader {
        Reader {
            stream,
            rank,
            pool,
            staging: vec![0; STAGING].into_boxed_slice(),
            start: 0,
            end: 0,
            body: None,
            taken: 0,
            waits: 0,
        }
    }

    /// Reads and delivers frames as described in the module docs; `wait` is step 6's
    /// longest sleep for the rest of a body (`None`: never sleep).
    pub(crate) fn read(
        &mut self,
        sink: &mut impl Deposit,
        max_payload: usize,
        limit: usize,
        budget: usize,
        stop_short: bool,
        wait: Option<Duration>,
    ) -> Outcome {
        let mut batch: Vec<Arrival> = Vec::new();
        let mut bytes = 0;
        let mut spent = 0;
        // Step 5: a short read (or WouldBlock) emptied the socket.
        let mut drained = false;
        loop {
            if let Some(mut body) = self.body.take() {
                let len = body.len;
                while body.filled < len && !drained {
                    let want = len - body.filled;
                    let room = &mut body.data[body.at + body.filled..body.at + len];
                    let why = match (&*self.stream).read(room) {
                        Ok(0) => mid_packet(body.filled, len),
                        Ok(n) => {
                            body.filled += n;
                            self.taken += n as u64;
                            spent += n;
                            drained = stop_short
                                && n < want
                                && !self.wait_for_rest(len - body.filled, wait);
                            continue;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            drained = !self.wait_for_rest(want, wait);
                            continue;
                        }
                        Err(e) => format!("read failed: {e}"),
                    };
                    self.pool.give(body.data);
                    sink.deposit(&mut batch, bytes);
                    return Outcome::Closed(why);
                }
                if body.filled < len {
                    self.body = Some(body);
                    sink.deposit(&mut batch, bytes);
                    return Outcome::Blocked;
                }
                bytes += len;
                batch.push(Ok(TcpPacket {
                    src: self.rank,
                    meta_len: body.meta_len,
                    at: body.at,
                    len,
                    data: body.data,
                    pool: Some(Arc::clone(&self.pool)),
                }));
            }
            if let Err(why) = self.cut_frames(&mut batch, &mut bytes, max_payload) {
                sink.deposit(&mut batch, bytes);
                return why;
            }
            if self.body.is_some() && !drained {
                continue;
            }
            sink.deposit(&mut batch, bytes);
            bytes = 0;
            if drained {
                return Outcome::Blocked;
            }
            if spent >= budget {
                return Outcome::Budget;
            }
            if sink.over(limit) {
                return Outcome::Full;
            }
            let room = self.staging.len() - self.end;
            match (&*self.stream).read(&mut self.staging[self.end..]) {
                Ok(0) if self.end > self.start => {
                    return Outcome::Closed(format!(
                        "connection closed in the middle of a frame ({} bytes of it arrived)",
                        self.end - self.start
                    ))
                }
                Ok(0) => return Outcome::Closed("connection closed without goodbye".into()),
                Ok(n) => {
                    self.end += n;
                    self.taken += n as u64;
                    spent += n;
                    drained = stop_short && n < room;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Outcome::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Outcome::Closed(format!("read failed: {e}")),
            }
        }
    }

    /// [`wait_for_rest`] on this connection, counted when it found bytes.
    fn wait_for_rest(&mut self, rest: usize, wait: Option<Duration>) -> bool {
        let ready = wait_for_rest(&self.stream, rest, wait);
        self.waits += ready as u64;
        ready
    }

    /// Cuts complete frames out of the staging buffer; starts a direct body read for a
    /// large frame; compacts what is left to the buffer's start.
    fn cut_frames(
        &mut self,
        batch: &mut Vec<Arrival>,
        bytes: &mut usize,
        max_payload: usize,
    ) -> Result<(), Outcome> {
        while self.end - self.start >= HEADER_LEN {
            let mut raw = [0u8; HEADER_LEN];
            raw.copy_from_slice(&self.staging[self.start..self.start + HEADER_LEN]);
            let header = Header::decode(&raw, max_payload).map_err(Outcome::Garbage)?;
            if header.kind == Kind::Bye {
                self.start += HEADER_LEN;
                return Err(Outcome::Bye);
            }
            let need = header.body_len();
            let from = self.start + HEADER_LEN;
            let have = self.end - from;
            if have >= need {
                *bytes += need;
                batch.push(Ok(TcpPacket {
                    src: self.rank,
                    meta_len: header.meta_len as usize,
                    at: 0,
                    len: need,
                    data: self.staging[from..from + need].to_vec(),
                    pool: None,
                }));
                self.start = from + need;
            } else if need >= DIRECT {
                let mut data = self.pool.take(need + PAGE);
                // Step 7: where the body's first byte goes, from its stream position.
                let pos = self.taken - (self.end - from) as u64;
                let at = (pos + SKEW as u64).wrapping_sub(data.as_ptr() as u64) as usize % PAGE;
                data[at..at + have].copy_from_slice(&self.staging[from..self.end]);
                self.body = Some(Body {
                    meta_len: header.meta_len as usize,
                    data,
                    at,
                    len: need,
                    filled: have,
                });
                self.start = 0;
                self.end = 0;
                return Ok(());
            } else {
                break;
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.staging.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        Ok(())
    }
}

/// Step 6: sleeps until `stream` has `rest` bytes to read, or [`WAIT_CHUNK`] of them,
/// or `wait` passes; true if it has something to read now. Never sleeps without a
/// `wait` or for less than [`WAIT_MIN`] to come.
fn wait_for_rest(stream: &TcpStream, rest: usize, wait: Option<Duration>) -> bool {
    let Some(wait) = wait.filter(|_| rest >= WAIT_MIN) else {
        return false;
    };
    let fd = stream.as_raw_fd();
    let set_lowat = |bytes: usize| {
        let v = bytes.min(WAIT_CHUNK) as libc::c_int;
        // SAFETY: `fd` is an open socket (`stream` holds it); the option value is a
        // c_int on our stack, passed with its exact size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    // Without the low-water mark every segment would wake us: no better than spinning.
    if set_lowat(rest) != 0 {
        return false;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd on our stack, for the duration of the call.
    let ready = unsafe { libc::poll(&mut p, 1, ms) };
    // Back to one byte, so the progress thread's epoll sees every frame again.
    set_lowat(1);
    ready > 0
}

fn mid_packet(got: usize, len: usize) -> String {
    format!("connection closed in the middle of a packet ({got} of {len} body bytes arrived)")
}

/// A received packet; owns its bytes (a large packet's buffer is recycled on drop).
pub struct TcpPacket {
    pub(super) src: usize,
    meta_len: usize,
    /// Where metadata and payload start in `data`.
    at: usize,
    /// Metadata and payload bytes.
    len: usize,
    /// Metadata, then payload (a recycled buffer may be longer).
    data: Vec<u8>,
    /// Where `data` goes back when the packet is dropped.
    pool: Option<Arc<Pool>>,
}

impl Drop for TcpPacket {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.give(std::mem::take(&mut self.data));
        }
    }
}

impl Packet for TcpPacket {
    fn src(&self) -> usize {
        self.src
    }

    fn meta(&self) -> &[u8] {
        &self.data[self.at..self.at + self.meta_len]
    }

    fn payload(&self) -> &[u8] {
        &self.data[self.at + self.meta_len..self.at + self.len]
    }
}

/// Buffers the pool keeps for reuse at most.
const KEEP: usize = 16;
/// Bytes kept for reuse at most (a packet may be as large as `max_payload`).
const KEEP_BYTES: usize = 32 << 20;

#[derive(Default)]
struct Spare {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

/// A stack of spare packet buffers shared by the progress thread and the packets.
#[derive(Default)]
pub(crate) struct Pool {
    spare: Mutex<Spare>,
}

impl Pool {
    /// A buffer of at least `len` bytes (contents unspecified; only bytes never used
    /// before are zeroed).
    pub(crate) fn take(&self, len: usize) -> Vec<u8> {
        let mut buf = {
            let mut spare = lock(&self.spare);
            let buf = spare.bufs.pop().unwrap_or_default();
            spare.bytes -= buf.len();
            buf
        };
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf
    }

    /// Returns a buffer for reuse (dropped if enough are kept already).
    pub(crate) fn give(&self, buf: Vec<u8>) {
        let mut spare = lock(&self.spare);
        if spare.bufs.len() < KEEP && spare.bytes + buf.len() <= KEEP_BYTES {
            spare.bytes += buf.len();
            spare.bufs.push(buf);
        }
    }
}
