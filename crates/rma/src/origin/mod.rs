//! The origin side of the service path: issuing requests to other domains' service
//! threads and waiting for their answers.
//!
//! Issuing a transfer (the caller's thread, in order):
//! 1. Walk the shape's chunks, split them at `NF_RMA_CHUNK` bytes, and group them
//!    into pieces of at most that many bytes and [`MAX_PIECE_ENTRIES`] entries.
//! 2. Each piece becomes one request appended to the target's connection (puts and
//!    accumulates copy their data in: the local memory is free on return). A get
//!    piece remembers where its reply goes and counts against its handle.
//! 3. Write what the socket takes. Past [`OUT_HIGH`] unsent bytes the caller waits
//!    (reading replies meanwhile) until the queue halves, so memory stays bounded and
//!    the target, whose replies we read, never stalls on us.
//!
//! Waiting ([`Origin::drive`]): flush and read every connection with work, hand each
//! reply to what waits for it; try that a few times when the proc has a core to
//! itself, then block in poll(2) until a socket is ready (so oversubscribed procs
//! sleep instead of spinning). A connection that breaks fails
//! everything outstanding on it with [`RmaError::PeerLost`] and every later request
//! to that proc; refusals of requests that have no answer (put, acc, unlock) are kept
//! and returned by the next fence or wait covering that proc.
//!
//! Put and get to procs reached natively go through the ofi transport instead
//! (`native.rs` here, `crate::native`); waits then also take finished native
//! operations, and sleep on the native wake-up fd as well as on sockets.

mod conn;
pub(crate) mod handles;
mod native;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

pub(crate) use conn::Conn;
use handles::Handles;

use crate::error::RmaError;
use crate::native::Native;
use crate::service::wire::{self, Hello, Op, Rep, Req};
use crate::shape::{for_each_chunk, Chunk};
use crate::xfer::{Kind, RmwOp, Shape};

/// Most entries in one request the origin builds.
pub(crate) const MAX_PIECE_ENTRIES: usize = 4096;
/// Unsent bytes per connection before the caller waits (step 3).
const OUT_HIGH: usize = 8 << 20;
/// Nonblocking polls of the busy sockets before sleeping in poll(2), when this proc
/// has a core to itself: an answer that is microseconds away is then picked up
/// without a sleep and a wake-up.
const SPIN_POLLS: u32 = 64;

/// What an outstanding request's reply is for.
enum Want {
    /// Get data: scatter into these (address, length) pieces of local memory.
    Get {
        handle: u64,
        proc: usize,
        chunks: Vec<(usize, usize)>,
    },
    /// A blocking call's answer (rmw, fence, lock), kept in `answers`.
    Answer { proc: usize },
}

/// One piece under construction (step 1).
#[derive(Default)]
struct Piece {
    entries: Vec<(u64, u64)>,
    locals: Vec<(usize, usize)>,
    bytes: usize,
}

/// This proc's connections to other domains' services, and what it waits for.
pub(crate) struct Origin {
    hello: Hello,
    addrs: Vec<Option<SocketAddr>>,
    chunk: usize,
    check_every: Duration,
    /// A service connection whose peer stops acknowledging is lost after about this.
    dead_after: Duration,
    /// Polls before blocking in poll(2) (0 when procs outnumber cores).
    spin_polls: u32,
    conns: Vec<Option<Conn>>,
    /// Why a proc is unreachable, once its connection broke.
    lost: Vec<Option<String>>,
    next_req: u64,
    wants: HashMap<u64, Want>,
    answers: HashMap<u64, Result<Vec<u8>, RmaError>>,
    /// Replies outstanding per proc.
    expect: Vec<usize>,
    /// Procs with puts, accumulates or unlocks not yet fenced.
    dirty: Vec<bool>,
    /// Procs with native puts not yet fenced.
    native_dirty: Vec<bool>,
    /// Native RMA, when some proc is reached that way.
    native: Option<Native>,
    /// First refusal of an unanswered request, per proc.
    deferred: Vec<Option<RmaError>>,
    /// Non-blocking transfers.
    pub handles: Handles,
}

impl Origin {
    /// An origin that reaches proc `p`'s service at `addrs[p]` (`None`: same domain).
    pub(crate) fn new(
        hello: Hello,
        addrs: Vec<Option<SocketAddr>>,
        chunk: usize,
        check_every: Duration,
        dead_after: Duration,
        spin: bool,
        native: Option<Native>,
    ) -> Origin {
        let n = addrs.len();
        Origin {
            hello,
            addrs,
            chunk,
            check_every,
            dead_after,
            spin_polls: if spin { SPIN_POLLS } else { 0 },
            conns: (0..n).map(|_| None).collect(),
            lost: vec![None; n],
            next_req: 1,
            wants: HashMap::new(),
            answers: HashMap::new(),
            expect: vec![0; n],
            dirty: vec![false; n],
            native_dirty: vec![false; n],
            native,
            deferred: (0..n).map(|_| None).collect(),
            handles: Handles::new(n),
        }
    }

    fn lost_error(&self, proc: usize) -> Option<RmaError> {
        self.lost[proc].as_ref().map(|why| RmaError::PeerLost {
            proc,
            why: why.clone(),
        })
    }

    /// The connection to `proc`, dialled on first use.
    fn conn(&mut self, proc: usize) -> Result<&mut Conn, RmaError> {
        if let Some(e) = self.lost_error(proc) {
            return Err(e);
        }
        if self.conns[proc].is_none() {
            let addr = self.addrs[proc].ok_or_else(|| RmaError::PeerLost {
                proc,
                why: "it published no service address (wire-up tables disagree)".into(),
            })?;
            self.conns[proc] = Some(Conn::dial(addr, &self.hello, proc, self.dead_after)?);
        }
        Ok(self.conns[proc].as_mut().expect("just dialled"))
    }

    fn next_id(&mut self) -> u64 {
        let id = self.next_req;
        self.next_req += 1;
        id
    }

    /// Steps 1–3 for one transfer to `proc` (shape already checked); its get pieces
    /// count against handle `h` (or the implicit count).
    ///
    /// # Safety
    /// The local memory of `shape` must be valid: for put and accumulate until this
    /// returns, for get until the handle completes.
    pub(crate) unsafe fn send_xfer(
        &mut self,
        proc: usize,
        kind: &Kind,
        shape: &Shape<'_>,
        h: u64,
    ) -> Result<(), RmaError> {
        self.settle_native(proc)?;
        let chunk = self.chunk;
        // Accumulates are cut at element boundaries: the target applies whole elements.
        let unit = match kind {
            Kind::Acc(s) => s.elem_size(),
            _ => 1,
        };
        let mut piece = Piece::default();
        for_each_chunk(shape, |c: Chunk| {
            let mut off = 0;
            while off < c.len {
                let room = (chunk - piece.bytes) / unit * unit;
                let len = (c.len - off).min(room);
                piece.entries.push((c.remote + off as u64, len as u64));
                piece.locals.push((c.local as usize + off, len));
                piece.bytes += len;
                off += len;
                if piece.bytes + unit > chunk || piece.entries.len() == MAX_PIECE_ENTRIES {
                    // SAFETY: forwarded from the caller.
                    unsafe { self.emit(proc, kind, &std::mem::take(&mut piece), h) }?;
                }
            }
            Ok::<(), RmaError>(())
        })?;
        if !piece.entries.is_empty() {
            // SAFETY: forwarded from the caller.
            unsafe { self.emit(proc, kind, &piece, h) }?;
        }
        Ok(())
    }

    /// Step 2 and 3 for one piece.
    ///
    /// # Safety
    /// As for [`Origin::send_xfer`].
    unsafe fn emit(
        &mut self,
        proc: usize,
        kind: &Kind,
        piece: &Piece,
        h: u64,
    ) -> Result<(), RmaError> {
        let id = self.next_id();
        let (op, etype, arg) = match kind {
            Kind::Put => (Op::Put, 0, [0; 16]),
            Kind::Get => (Op::Get, 0, [0; 16]),
            Kind::Acc(s) => {
                let (t, a) = wire::encode_scale(*s);
                (Op::Acc, t, a)
            }
        };
        let carries = op != Op::Get;
        let req = Req {
            op,
            etype,
            nseg: piece.entries.len() as u32,
            id,
            data_len: if carries { piece.bytes as u64 } else { 0 },
            arg,
        };
        let conn = self.conn(proc)?;
        conn.out
            .bytes
            .reserve(wire::REQ_LEN + piece.entries.len() * wire::ENTRY_LEN + piece.bytes);
        conn.out.bytes.extend_from_slice(&req.encode());
        for &(addr, len) in &piece.entries {
            conn.out.bytes.extend_from_slice(&wire::entry(addr, len));
        }
        if carries {
            for &(p, len) in &piece.locals {
                // SAFETY: the caller promises the local side is readable for its chunks.
                conn.out
                    .bytes
                    .extend_from_slice(unsafe { std::slice::from_raw_parts(p as *const u8, len) });
            }
            self.dirty[proc] = true;
        } else {
            self.wants.insert(
                id,
                Want::Get {
                    handle: h,
                    proc,
                    chunks: piece.locals.clone(),
                },
            );
            self.expect[proc] += 1;
            self.handles.add_piece(h, proc);
        }
        self.bound_queue(proc)
    }

    /// Step 3: write what the socket takes; past the high mark, wait until it halves
    /// (reading replies meanwhile).
    fn bound_queue(&mut self, proc: usize) -> Result<(), RmaError> {
        if let Some(conn) = self.conns[proc].as_mut() {
            if let Err(e) = conn.flush() {
                self.lose(proc, e.to_string());
            }
        }
        if self.unsent(proc) > OUT_HIGH {
            self.drive(|o| o.unsent(proc) <= OUT_HIGH / 2 || o.lost[proc].is_some())?;
        }
        self.lost_error(proc).map_or(Ok(()), Err)
    }

    fn unsent(&self, proc: usize) -> usize {
        self.conns[proc].as_ref().map_or(0, Conn::unsent)
    }

    /// Waits until every request to `proc` (every proc if `None`) is written out.
    pub(crate) fn flush(&mut self, proc: Option<usize>) -> Result<(), RmaError> {
        let n = self.conns.len();
        let all = move |o: &Origin| {
            (0..n)
                .filter(|&p| proc.is_none_or(|q| q == p))
                .all(|p| o.unsent(p) == 0 || o.lost[p].is_some())
        };
        self.drive(all)?;
        match proc {
            Some(p) => self.lost_error(p).map_or(Ok(()), Err),
            None => Ok(()),
        }
    }

    /// Sends a request with the given entries and waits for its answer.
    fn call(&mut self, proc: usize, req: Req, entries: &[(u64, u64)]) -> Result<Vec<u8>, RmaError> {
        let conn = self.conn(proc)?;
        conn.out.bytes.extend_from_slice(&req.encode());
        for &(addr, len) in entries {
            conn.out.bytes.extend_from_slice(&wire::entry(addr, len));
        }
        self.wants.insert(req.id, Want::Answer { proc });
        self.expect[proc] += 1;
        let id = req.id;
        self.drive(|o| o.answers.contains_key(&id))?;
        self.answers.remove(&id).expect("answered")
    }

    /// A read-modify-write on `proc`'s integer at `remote`.
    pub(crate) fn rmw(&mut self, proc: usize, op: RmwOp, remote: u64) -> Result<i64, RmaError> {
        self.settle_native(proc)?;
        let (etype, arg) = wire::encode_rmw(op);
        let req = Req {
            etype,
            nseg: 1,
            arg,
            ..Req::bare(Op::Rmw, self.next_id())
        };
        let old = self.call(proc, req, &[(remote, op.size() as u64)])?;
        let b: [u8; 8] = old.as_slice().try_into().map_err(|_| RmaError::Protocol {
            proc,
            why: format!("rmw answer of {} B, expected 8", old.len()),
        })?;
        Ok(i64::from_le_bytes(b))
    }

    /// Takes mutex `m` of `proc` (returns once granted).
    pub(crate) fn lock(&mut self, proc: usize, m: usize) -> Result<(), RmaError> {
        self.settle_native(proc)?;
        let mut req = Req::bare(Op::Lock, self.next_id());
        req.arg[..8].copy_from_slice(&(m as u64).to_le_bytes());
        self.call(proc, req, &[]).map(|_| ())
    }

    /// Releases mutex `m` of `proc` (a refusal comes back with the next fence).
    pub(crate) fn unlock(&mut self, proc: usize, m: usize) -> Result<(), RmaError> {
        self.settle_native(proc)?;
        let mut req = Req::bare(Op::Unlock, self.next_id());
        req.arg[..8].copy_from_slice(&(m as u64).to_le_bytes());
        self.conn(proc)?.out.bytes.extend_from_slice(&req.encode());
        self.dirty[proc] = true;
        self.bound_queue(proc)
    }

    /// Remote completion of everything sent to `procs` (native writes completed, a
    /// FENCE to each proc with unfenced service requests, all in flight at once), then
    /// their deferred refusals.
    pub(crate) fn fence(&mut self, procs: &[usize]) -> Result<(), RmaError> {
        self.fence_native(procs)?;
        self.fence_service(procs)?;
        for &p in procs {
            if let Some(e) = self.deferred[p].take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The service part of [`Origin::fence`] (deferred refusals stay for the caller).
    fn fence_service(&mut self, procs: &[usize]) -> Result<(), RmaError> {
        let mut ids = Vec::new();
        let dirty: Vec<usize> = procs.iter().copied().filter(|&p| self.dirty[p]).collect();
        for p in dirty {
            let id = self.next_id();
            self.conn(p)?
                .out
                .bytes
                .extend_from_slice(&Req::bare(Op::Fence, id).encode());
            self.wants.insert(id, Want::Answer { proc: p });
            self.expect[p] += 1;
            ids.push((p, id));
        }
        self.drive(|o| ids.iter().all(|(_, id)| o.answers.contains_key(id)))?;
        let mut first = Ok(());
        for (p, id) in ids {
            let r = self.answers.remove(&id).expect("answered");
            if r.is_ok() {
                self.dirty[p] = false;
            }
            if first.is_ok() {
                first = r.map(|_| ());
            }
        }
        first
    }

    /// Procs with unfenced requests.
    pub(crate) fn dirty_procs(&self) -> Vec<usize> {
        (0..self.dirty.len())
            .filter(|&p| self.dirty[p] || self.native_dirty[p])
            .collect()
    }

    /// Runs I/O until `done` holds (see the module docs).
    pub(crate) fn drive(&mut self, done: impl Fn(&Origin) -> bool) -> Result<(), RmaError> {
        // While we wait for native operations, we drive the endpoint ourselves (and
        // serve peers' operations on it on the way); otherwise the progress thread does.
        let driving = self.native_waiting().is_some();
        let r = self.drive_inner(done, driving);
        if let Some(n) = self.native.as_ref().filter(|_| driving) {
            n.end_drive(false);
        }
        r
    }

    fn drive_inner(
        &mut self,
        done: impl Fn(&Origin) -> bool,
        driving: bool,
    ) -> Result<(), RmaError> {
        let native_drive = |o: &Origin, on: bool| {
            if let Some(n) = o.native.as_ref().filter(|_| driving) {
                if on {
                    n.begin_drive()
                } else {
                    n.end_drive(true)
                }
            }
        };
        native_drive(self, true);
        let mut polls = 0;
        loop {
            if done(self) {
                return Ok(());
            }
            self.pump();
            if done(self) {
                return Ok(());
            }
            if polls < self.spin_polls {
                polls += 1;
                std::hint::spin_loop();
                continue;
            }
            let busy: Vec<(usize, bool)> = (0..self.conns.len())
                .filter(|&p| self.conns[p].is_some() && (self.expect[p] > 0 || self.unsent(p) > 0))
                .map(|p| (p, self.unsent(p) > 0))
                .collect();
            let native = self.native_waiting();
            if busy.is_empty() && native.is_none() {
                return Err(RmaError::Protocol {
                    proc: self.hello.rank as usize,
                    why: "waiting for an answer with nothing in flight (internal error)".into(),
                });
            }
            native_drive(self, false);
            self.block(&busy, native);
            native_drive(self, true);
        }
    }

    /// Sleeps until one of the busy connections (or `also`, the native wake-up fd) is
    /// ready, at most `check_every`.
    fn block(&self, busy: &[(usize, bool)], also: Option<std::os::fd::RawFd>) {
        let mut fds: Vec<libc::pollfd> = busy
            .iter()
            .map(|&(p, write)| libc::pollfd {
                fd: self.conns[p].as_ref().expect("busy has a connection").fd(),
                events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
                revents: 0,
            })
            .chain(also.map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }))
            .collect();
        let ms = self.check_every.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if ready == 0 && also.is_some() {
            self.expire_native();
        }
    }

    /// Flushes and reads every connection that has work, and takes finished native
    /// operations (never blocks).
    pub(crate) fn pump(&mut self) {
        self.pump_native();
        for p in 0..self.conns.len() {
            if self.conns[p].is_some()
                && (self.expect[p] > 0 || self.dirty[p] || self.unsent(p) > 0)
            {
                self.pump_one(p);
            }
        }
    }

    fn pump_one(&mut self, proc: usize) {
        // Taken out for the call, so replies are handled in place (get data goes
        // straight from the receive buffer to its destination).
        let Some(mut conn) = self.conns[proc].take() else {
            return;
        };
        let mut r = conn.flush();
        if r.is_ok() {
            r = conn.read_replies(|rep, data| self.on_reply(proc, rep, data));
        }
        self.conns[proc] = Some(conn);
        if let Err(e) = r {
            self.lose(proc, e.to_string());
        }
    }

    fn on_reply(&mut self, proc: usize, rep: Rep, data: &[u8]) {
        let refused = || RmaError::Remote {
            proc,
            why: String::from_utf8_lossy(data).into_owned(),
        };
        match self.wants.remove(&rep.id) {
            Some(Want::Get { handle, chunks, .. }) => {
                self.expect[proc] -= 1;
                let want: usize = chunks.iter().map(|c| c.1).sum();
                let r = if !rep.ok {
                    Err(refused())
                } else if data.len() != want {
                    Err(RmaError::Protocol {
                        proc,
                        why: format!("get answer of {} B, asked for {want} B", data.len()),
                    })
                } else {
                    let mut off = 0;
                    for (p, len) in chunks {
                        // SAFETY: the issuer promised the get's local memory stays valid
                        // until its handle completes, which is now.
                        unsafe {
                            std::ptr::copy_nonoverlapping(data[off..].as_ptr(), p as *mut u8, len)
                        };
                        off += len;
                    }
                    Ok(())
                };
                self.handles.piece_done(handle, proc, r);
            }
            Some(Want::Answer { .. }) => {
                self.expect[proc] -= 1;
                let r = if rep.ok {
                    Ok(data.to_vec())
                } else {
                    Err(refused())
                };
                self.answers.insert(rep.id, r);
            }
            None if !rep.ok => {
                self.deferred[proc].get_or_insert_with(refused);
            }
            None => tracing::warn!(proc, id = rep.id, "rma: answer to no request dropped"),
        }
    }

    /// Marks `proc` unreachable and fails everything outstanding on it.
    fn lose(&mut self, proc: usize, why: String) {
        tracing::warn!(proc, "rma: connection to proc {proc} lost: {why}");
        self.conns[proc] = None;
        self.lost[proc] = Some(why.clone());
        self.expect[proc] = 0;
        let ids: Vec<u64> = self
            .wants
            .iter()
            .filter(|(_, w)| match w {
                Want::Get { proc: p, .. } | Want::Answer { proc: p } => *p == proc,
            })
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let err = RmaError::PeerLost {
                proc,
                why: why.clone(),
            };
            match self.wants.remove(&id) {
                Some(Want::Get { handle, .. }) => self.handles.piece_done(handle, proc, Err(err)),
                Some(Want::Answer { .. }) => {
                    self.answers.insert(id, Err(err));
                }
                None => {}
            }
        }
    }
}
