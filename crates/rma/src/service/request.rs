//! Applying one request to this proc's memory, control words and lock queue, and
//! queueing its reply. Every entry is checked before anything is touched, so a
//! refused request changes nothing.

use std::sync::atomic::Ordering;

use mio::Token;

use super::conn::End;
use super::server::{LockWait, Shared};
use super::wire::{self, Op, Rep, Req, ENTRY_LEN, MAX_DATA};
use crate::apply::{self, Applier, Target};
use crate::shm::lock::{mark_holder, release, served, take_ticket};

/// Everything one request may touch.
pub(crate) struct Ctx<'a> {
    pub sh: &'a Shared,
    pub origin: usize,
    pub out: &'a mut Vec<u8>,
    pub waiters: &'a mut Vec<LockWait>,
    pub token: Token,
}

impl Ctx<'_> {
    fn reply(&mut self, ok: bool, id: u64, data: &[u8]) {
        super::push_reply(self.out, ok, id, data);
    }

    fn refuse(&mut self, id: u64, why: String) {
        self.reply(false, id, why.as_bytes());
    }

    pub(crate) fn handle(&mut self, req: &Req, body: &[u8]) -> Result<(), End> {
        let (ents, data) = body.split_at(req.nseg as usize * ENTRY_LEN);
        match req.op {
            Op::Put | Op::Get | Op::Acc => self.memory(req, ents, data),
            Op::Rmw => {
                self.rmw(req, ents);
                Ok(())
            }
            Op::Fence => {
                self.reply(true, req.id, &[]);
                Ok(())
            }
            Op::Lock | Op::Unlock => {
                self.mutex(req);
                Ok(())
            }
        }
    }

    /// Put, get and accumulate: check every entry, then apply.
    fn memory(&mut self, req: &Req, ents: &[u8], data: &[u8]) -> Result<(), End> {
        let n = req.nseg as usize;
        let op = match req.op {
            Op::Put => "put",
            Op::Get => "get",
            _ => "acc",
        };
        let scale = match req.op {
            Op::Acc => match wire::decode_scale(req.etype, &req.arg) {
                Some(s) => Some(s),
                None => {
                    self.refuse(req.id, format!("acc: unknown element type {}", req.etype));
                    return Ok(());
                }
            },
            _ => None,
        };
        let elem = scale.map_or(1, |s| s.elem_size() as u64);
        let sh = self.sh;
        let own = sh.own.read().unwrap_or_else(|p| p.into_inner());
        let mut total = 0u64;
        for i in 0..n {
            let (addr, len) = wire::entry_at(ents, i);
            let inside = own
                .iter()
                .any(|&(b, l)| addr >= b && len <= l && addr - b <= l - len);
            if len == 0 || !inside {
                self.refuse(
                    req.id,
                    format!(
                        "{op}: entry {i}: range {addr:#x}+{len} B is not inside any segment of \
                         proc {}",
                        sh.hello.rank
                    ),
                );
                return Ok(());
            }
            if len % elem != 0 {
                self.refuse(
                    req.id,
                    format!("{op}: entry {i}: {len} B is not a multiple of {elem} B"),
                );
                return Ok(());
            }
            total += len;
        }
        if req.op != Op::Get && total != data.len() as u64 {
            return Err(End::Fault(format!(
                "{op} entries cover {total} B but {} B of data came",
                data.len()
            )));
        }
        if req.op == Op::Get && (n == 0 || total > MAX_DATA) {
            self.refuse(
                req.id,
                format!("get of {total} B in {n} entries is out of bounds"),
            );
            return Ok(());
        }
        let applier = Applier {
            pid: sh.pid,
            patience: &sh.patience,
        };
        if req.op == Op::Get {
            self.out.extend_from_slice(
                &Rep {
                    ok: true,
                    id: req.id,
                    data_len: total,
                }
                .encode(),
            );
        }
        let mut off = 0usize;
        for i in 0..n {
            let (addr, len) = wire::entry_at(ents, i);
            let (p, len) = (addr as *mut u8, len as usize);
            match (req.op, scale) {
                (Op::Put, _) => {
                    // SAFETY: addr..addr+len lies in one of our live segments (checked
                    // above under the read lock we still hold, so it cannot be unmapped).
                    unsafe { std::ptr::copy_nonoverlapping(data[off..].as_ptr(), p, len) }
                }
                (Op::Get, _) => {
                    // SAFETY: as for put; reading our own mapped memory.
                    let src = unsafe { std::slice::from_raw_parts(p, len) };
                    self.out.extend_from_slice(src);
                }
                (_, Some(scale)) => {
                    let t = Target {
                        ctl: &sh.ctl,
                        owner_addr: addr,
                        local: p,
                    };
                    // SAFETY: as for put; the data slice holds `len` bytes at `off`.
                    let r = unsafe { apply::acc(&t, &applier, scale, data[off..].as_ptr(), len) };
                    if let Err(e) = r {
                        self.refuse(req.id, e.to_string());
                        return Ok(());
                    }
                }
                _ => unreachable!("accumulate always has a scale"),
            }
            off += len;
        }
        Ok(())
    }

    fn rmw(&mut self, req: &Req, ents: &[u8]) {
        let Some(op) = wire::decode_rmw(req.etype, &req.arg) else {
            return self.refuse(req.id, format!("rmw: unknown kind {}", req.etype));
        };
        if req.nseg != 1 {
            return self.refuse(req.id, format!("rmw: {} entries, expected 1", req.nseg));
        }
        let (addr, len) = wire::entry_at(ents, 0);
        let size = op.size() as u64;
        let sh = self.sh;
        let own = sh.own.read().unwrap_or_else(|p| p.into_inner());
        let inside = own
            .iter()
            .any(|&(b, l)| addr >= b && size <= l && addr - b <= l - size);
        if len != size || !inside || addr % size != 0 {
            let why = format!(
                "rmw: {addr:#x}+{len} B is not an aligned {size} B integer inside a segment of \
                 proc {}",
                sh.hello.rank
            );
            return self.refuse(req.id, why);
        }
        let t = Target {
            ctl: &sh.ctl,
            owner_addr: addr,
            local: addr as *mut u8,
        };
        let applier = Applier {
            pid: sh.pid,
            patience: &sh.patience,
        };
        // SAFETY: the integer lies in our live segment (checked under the read lock still
        // held) and is aligned to its size.
        match unsafe { apply::rmw(&t, &applier, op) } {
            Ok(old) => self.reply(true, req.id, &old.to_le_bytes()),
            Err(e) => self.refuse(req.id, e.to_string()),
        }
    }

    fn mutex(&mut self, req: &Req) {
        let m = req.arg_u64() as usize;
        let ctl = &self.sh.ctl;
        let have = ctl.header().nmutex.load(Ordering::Acquire) as usize;
        let op = if req.op == Op::Lock { "lock" } else { "unlock" };
        if m >= have {
            let why = format!(
                "{op}: mutex {m} of proc {} does not exist (that proc has {have})",
                self.sh.hello.rank
            );
            return self.refuse(req.id, why);
        }
        let word = ctl.mutex(m);
        if req.op == Op::Unlock {
            if !release(word, self.origin) {
                let why = format!(
                    "unlock: mutex {m} of proc {} is not held by proc {}",
                    self.sh.hello.rank, self.origin
                );
                self.refuse(req.id, why);
            }
            return;
        }
        let ticket = take_ticket(word);
        if served(word, ticket) {
            mark_holder(word, self.origin);
            self.reply(true, req.id, &[]);
        } else {
            self.waiters.push(LockWait {
                token: self.token,
                origin: self.origin,
                id: req.id,
                mutex: m,
                ticket,
            });
        }
    }
}
