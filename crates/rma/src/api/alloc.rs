//! Collective allocation of global memory, and local memory for transfers.
//!
//! Allocation over a team, on every member, in order (`shm/mod.rs` has the naming
//! and lifecycle rules):
//! 0. Allgather the sizes asked for. A member that asked for bytes adds up what the
//!    members on its host asked for and checks the room there (`shm/room.rs`: the
//!    directory's free space, available memory, the memory cgroup, measured when an
//!    earlier measurement cannot vouch for it); if it is short, the member creates
//!    nothing and says so at step 2.
//! 1. Create and map our segment file, sized to its class (`cache.rs`, rule 6),
//!    unless we asked for 0 bytes; with native RMA, register it with our ofi
//!    endpoint.
//! 2. Allgather (ok, base, length, file number, ofi key and base, and a short room's
//!    numbers): every member learns every base, and how to reach the segment natively.
//! 3. Map the segments of the members of our domain; allgather whether that worked.
//!    The second allgather doubles as the barrier after which names may go.
//! 4. Unlink our name; enter every member's segment in the table, ours in the list
//!    the service thread checks requests against and in the memory registry (for
//!    `nf serve`'s `/mem`).
//!
//! A failure at step 0, 1 or 3 on any member makes every member undo its part and
//! return the same error, so a collective never leaves some members waiting; a host
//! without room is [`RmaError::NoRoom`] on every member, naming that host's first
//! proc, the bytes asked and the bytes that fit (an allocation the host cannot hold
//! must fail here, not in the OOM killer when the memory is first touched).
//!
//! Adopting (`Rma::adopt`) is the same allocation over the world, except that step 1
//! maps our file over the adopted range holding its bytes (`shm/adopt.rs`), and the
//! cache is never used: an adopted range is not fresh zeroed memory to hand out, and
//! freeing puts it back on private memory at once.
//!
//! Freeing: complete our transfers; allgather bases (each member gives its base only
//! after completing its transfers, so the allgather is the barrier after which
//! nobody reaches the memory); every member checks them against its record alike
//! (so all fail or none); leave the segment table, the service's list and the memory
//! registry; keep the mappings for reuse or deregister and unmap (`cache.rs`). An
//! allocation whose sizes are of the classes of one freed before over the same team
//! is taken from that cache after step 0 (`cache.rs`, rules 4 and 6). (Remote procs
//! reach a segment natively only after step 2 and before the free's allgather, so the
//! registration lives exactly as long as anyone may use it.)

use std::sync::atomic::{fence, Ordering};

use nf_transport::rma::{RegionId, RemoteRegion};

use super::cache::capacity;
use crate::error::RmaError;
use crate::memory::Alloc;
use crate::rma::{gather, gather_fixed, word_u64, Rma};
use crate::shm::map::{anonymous, Mapping};
use crate::shm::room::Limit;
use crate::table::Seg;
use crate::wireup::Team;

/// What each member announces at step 2.
struct Announce {
    ok: bool,
    base: u64,
    len: u64,
    n: u64,
    /// How our ofi endpoint names the segment, if registered.
    ofi: Option<RemoteRegion>,
    /// Our host's room, where step 0 found it short: (bytes asked there, bytes that
    /// fit, what limits them).
    short: Option<(u64, u64, Limit)>,
}

impl Announce {
    /// Bytes before the short room's limit text.
    const LEN: usize = 59;

    fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::LEN];
        b[0] = u8::from(self.ok);
        b[1..9].copy_from_slice(&self.base.to_le_bytes());
        b[9..17].copy_from_slice(&self.len.to_le_bytes());
        b[17..25].copy_from_slice(&self.n.to_le_bytes());
        if let Some(r) = self.ofi {
            b[25] = 1;
            b[26..34].copy_from_slice(&r.key.to_le_bytes());
            b[34..42].copy_from_slice(&r.base.to_le_bytes());
        }
        if let Some((need, room, limit)) = &self.short {
            let (kind, text) = limit.encode();
            b[42] = kind;
            b[43..51].copy_from_slice(&need.to_le_bytes());
            b[51..59].copy_from_slice(&room.to_le_bytes());
            b.extend_from_slice(&text);
        }
        b
    }

    fn decode(b: &[u8]) -> Option<Announce> {
        let (b, text) = (b.get(..Self::LEN)?, &b[Self::LEN..]);
        let word = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let len = word(9);
        let short = match b[42] {
            0 => None,
            kind => Some((word(43), word(51), Limit::decode(kind, text)?)),
        };
        Some(Announce {
            ok: b[0] == 1,
            base: word(1),
            len,
            n: word(17),
            ofi: (b[25] == 1).then(|| RemoteRegion {
                key: word(26),
                base: word(34),
                len,
            }),
            short,
        })
    }
}

/// Our position in `team`, or why we cannot act for it.
fn my_index(op: &'static str, team: &dyn Team, me: usize, size: usize) -> Result<usize, RmaError> {
    let members = team.members();
    if let Some(&bad) = members.iter().find(|&&m| m >= size) {
        return Err(RmaError::NoSuchProc {
            op,
            proc: bad,
            size,
        });
    }
    members
        .iter()
        .position(|&m| m == me)
        .ok_or_else(|| RmaError::Collective {
            op,
            why: format!("proc {me} is not a member of team {members:?}"),
        })
}

impl Rma<'_> {
    /// The list of our segments the service thread checks requests against.
    pub(crate) fn own_segments(&self) -> std::sync::RwLockWriteGuard<'_, Vec<(u64, u64)>> {
        self.shared.own.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates `bytes` on every proc of the world (collective; `ARMCI_Malloc`).
    /// Returns, for every proc, the address of its part in *its* address space (0 for
    /// a proc that asked for 0 bytes). Procs may ask for different sizes. The memory
    /// starts zeroed and is page-aligned.
    pub fn malloc(&self, bytes: usize) -> Result<Vec<u64>, RmaError> {
        self.malloc_team(&*self.wire as &dyn Team, bytes)
    }

    /// [`Rma::malloc`] over a team (`ARMCI_Malloc_group`): entry `i` belongs to team
    /// member `i` (`team.members()[i]`). Only members call it.
    pub fn malloc_team(&self, team: &dyn Team, bytes: usize) -> Result<Vec<u64>, RmaError> {
        // SAFETY: no range is adopted.
        unsafe { self.allocate("malloc", team, bytes, None) }
    }

    /// Makes `bytes` of this process at `addr` a segment in place, on every proc of
    /// the world (collective): the memory is moved onto a segment file holding the
    /// same bytes at the same addresses (`shm/adopt.rs`), so every path reaches it,
    /// and is put back on private memory, bytes kept, when it is freed (with
    /// [`Rma::free`] of `addr`) or the layer ends. Returns every proc's `addr`, as
    /// [`Rma::malloc`] returns bases; procs may adopt different sizes (0: none). Never
    /// taken from or kept in the cache of freed allocations. While adopted, the range
    /// is shared: a child `fork`ed meanwhile shares it instead of copying it.
    ///
    /// # Safety
    /// `addr .. addr + bytes` is private writable memory of this process that it
    /// never unmaps (an executable's data and bss), and no other thread writes it
    /// during the call (a write between the copy and the new mapping would be lost).
    pub unsafe fn adopt(&self, addr: *mut u8, bytes: usize) -> Result<Vec<u64>, RmaError> {
        let op = "adopt";
        let page = crate::shm::adopt::page_size();
        if bytes > 0 && addr.is_null() {
            return Err(RmaError::Null {
                op,
                arg: "addr".into(),
            });
        }
        for (arg, v) in [("addr", addr as u64), ("bytes", bytes as u64)] {
            if v % page as u64 != 0 {
                return Err(RmaError::Misaligned {
                    op,
                    arg: arg.into(),
                    addr: v,
                    align: page,
                });
            }
        }
        // SAFETY: forwarded from the caller; the range is page-aligned (checked).
        unsafe { self.allocate(op, &*self.wire as &dyn Team, bytes, Some(addr)) }
    }

    /// A collective allocation (the module's steps); with `adopt`, our segment is
    /// mapped over that range with its bytes instead of anywhere, zeroed.
    ///
    /// # Safety
    /// With `adopt`, as [`Rma::adopt`].
    unsafe fn allocate(
        &self,
        op: &'static str,
        team: &dyn Team,
        bytes: usize,
        adopt: Option<*mut u8>,
    ) -> Result<Vec<u64>, RmaError> {
        let me = my_index(op, team, self.rank, self.size)?;
        let members = team.members().to_vec();

        // Step 0.
        let sizes = gather_fixed(
            team,
            &(bytes as u64).to_le_bytes(),
            "allocation size",
            word_u64,
        )?;
        if adopt.is_none() {
            if let Some(bases) = self.reuse(team, me, &sizes)? {
                return Ok(bases);
            }
        }
        let short = if bytes > 0 {
            let need = members
                .iter()
                .zip(&sizes)
                .filter(|(&q, _)| self.hosts.same(q))
                .fold(0u64, |sum, (_, &s)| sum.saturating_add(s));
            self.mem
                .borrow_mut()
                .room
                .short_of(self.names.dir(), need)
                .map(|r| (need, r.bytes, r.limit))
        } else {
            None
        };

        // Step 1.
        let n = {
            let mut mem = self.mem.borrow_mut();
            mem.seq += 1;
            mem.seq
        };
        let mut failure: Option<RmaError> =
            short.as_ref().map(|(need, room, limit)| RmaError::NoRoom {
                op,
                proc: self.rank,
                need: *need,
                room: *room,
                limit: limit.clone(),
            });
        // A segment that may be kept is sized to its class (`cache.rs`, rule 6), on
        // every member alike, so each can tell every file's size from the sizes asked.
        let cap_of = |len: u64| if adopt.is_some() { len } else { capacity(len) };
        let cap = cap_of(bytes as u64) as usize;
        let own = if bytes > 0 && failure.is_none() {
            let path = self.names.segment(self.rank, n);
            let made = match adopt {
                // SAFETY: forwarded from the caller.
                Some(addr) => unsafe { Mapping::adopt(&path, addr, bytes) },
                None => Mapping::create(&path, cap),
            };
            match made {
                Ok(m) => Some(m),
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        } else {
            None
        };
        let mut region: Option<(RegionId, RemoteRegion)> = None;
        if let (Some(m), Some(native)) = (&own, self.origin.borrow().native()) {
            // SAFETY: the mapping lives in this allocation until `free_team` (or a
            // failure below) deregisters the region first.
            match unsafe { native.register(m.ptr(), cap) } {
                Ok(r) => region = Some(r),
                Err(e) => failure = Some(e),
            }
        }
        let announce = Announce {
            ok: failure.is_none(),
            base: own.as_ref().map_or(0, |m| m.ptr() as u64),
            len: bytes as u64,
            n,
            ofi: region.map(|r| r.1),
            short,
        };
        // The service must accept requests on it as soon as anyone can know its base.
        if own.is_some() {
            self.own_segments().push((announce.base, announce.len));
        }
        let forget = || {
            if own.is_some() {
                self.own_segments().retain(|&(b, _)| b != announce.base);
            }
            self.deregister(region.map(|r| r.0));
        };

        // Step 2.
        let all = gather(
            team,
            &announce.encode(),
            "allocation message",
            Announce::decode,
        )?;
        let mut maps: Vec<Mapping> = Vec::new();
        let mut mapped = vec![0usize; members.len()];
        if let Some(i) = all.iter().position(|a| !a.ok) {
            forget();
            if let Some(own) = &own {
                own.unlink()?;
            }
            // A host without room is every member's error, the same on all.
            if let Some((i, (need, room, limit))) = all
                .iter()
                .enumerate()
                .find_map(|(i, a)| a.short.clone().map(|s| (i, s)))
            {
                return Err(RmaError::NoRoom {
                    op,
                    proc: members[i],
                    need,
                    room,
                    limit,
                });
            }
            let why = format!("proc {} could not create its segment", members[i]);
            return Err(failure.unwrap_or(RmaError::Collective { op, why }));
        }

        // Step 3.
        for (i, a) in all.iter().enumerate() {
            let q = members[i];
            if q == self.rank || a.len == 0 || !self.domains.same(q) || failure.is_some() {
                continue;
            }
            match Mapping::open(&self.names.segment(q, a.n), cap_of(a.len) as usize) {
                Ok(m) => {
                    mapped[i] = m.ptr() as usize;
                    maps.push(m);
                }
                Err(e) => failure = Some(e),
            }
        }
        let ok = [u8::from(failure.is_none())];
        let oks = gather_fixed(team, &ok, "mapping status", |b: &[u8]| {
            b.first().map(|&x| x == 1)
        })?;
        if let Some(own) = &own {
            own.unlink()?;
        }
        if let Some(i) = oks.iter().position(|ok| !ok) {
            forget();
            let why = format!("proc {} could not map its domain's segments", members[i]);
            return Err(failure.unwrap_or(RmaError::Collective { op, why }));
        }

        // Step 4.
        if let Some(own) = own {
            mapped[me] = own.ptr() as usize;
            maps.push(own);
            self.registry
                .borrow_mut()
                .add(n, announce.base, announce.len);
        }
        let bases: Vec<u64> = all.iter().map(|a| a.base).collect();
        let lens: Vec<u64> = all.iter().map(|a| a.len).collect();
        let origin = self.origin.borrow();
        let mut mem = self.mem.borrow_mut();
        let mut segs = Vec::new();
        for (i, &q) in members.iter().enumerate() {
            if lens[i] > 0 {
                let seg = Seg {
                    base: bases[i],
                    len: lens[i],
                    mapped: mapped[i],
                    ofi: all[i].ofi.filter(|_| origin.native_route(q)),
                };
                mem.table.insert(q, seg);
                segs.push((q, seg));
            }
        }
        if let Some(key) = Alloc::key(&members, &bases) {
            let alloc = Alloc {
                members,
                bases: bases.clone(),
                lens,
                maps,
                region: region.map(|r| r.0),
                n: if bytes > 0 { n } else { 0 },
                segs,
                unlisted: 0,
                adopted: adopt.is_some(),
            };
            mem.allocs.insert(key, alloc);
        }
        Ok(bases)
    }

    /// Frees a world allocation (collective; `ARMCI_Free`): `base` is this proc's
    /// entry of what [`Rma::malloc`] returned (0 if it asked for 0 bytes). Completes
    /// every transfer this proc issued first, and returns once no proc can reach the
    /// memory any more.
    pub fn free(&self, base: u64) -> Result<(), RmaError> {
        self.free_team(&*self.wire as &dyn Team, base)
    }

    /// [`Rma::free`] over a team (`ARMCI_Free_group`).
    pub fn free_team(&self, team: &dyn Team, base: u64) -> Result<(), RmaError> {
        let op = "free";
        my_index(op, team, self.rank, self.size)?;
        self.wait_all()?;
        self.all_fence()?;
        let bases = gather_fixed(team, &base.to_le_bytes(), "base", word_u64)?;
        let members = team.members();
        let Some(key) = Alloc::key(members, &bases) else {
            // Every member asked for 0 bytes: nothing was allocated.
            return Ok(());
        };
        let matches = self
            .mem
            .borrow()
            .allocs
            .get(&key)
            .is_some_and(|a| a.members == members && a.bases == bases);
        if !matches {
            // Every member judges the same bases against the same record.
            return Err(RmaError::NotAllocated { op, addr: key.1 });
        }
        // The allgather was the barrier: a member gives its base only once its own
        // transfers are complete, so with every base in, nobody reaches the memory.
        fence(Ordering::SeqCst);
        let mut mem = self.mem.borrow_mut();
        let mut alloc = mem.allocs.remove(&key).expect("checked above");
        for (i, &q) in alloc.members.iter().enumerate() {
            if alloc.lens[i] > 0 {
                mem.table.remove(q, alloc.bases[i]);
            }
        }
        if base != 0 {
            self.own_segments().retain(|&(b, _)| b != base);
            alloc.unlisted = self.registry.borrow_mut().remove(base);
        }
        drop(mem);
        // Kept mapped for the next allocation of these sizes, or unmapped.
        self.keep_or_release(alloc);
        Ok(())
    }

    /// Forgets our segment's ofi registration, if it has one (before unmapping it).
    pub(crate) fn deregister(&self, region: Option<RegionId>) {
        if let (Some(id), Some(native)) = (region, self.origin.borrow().native()) {
            native.deregister(id);
        }
    }

    /// Allocates `bytes` (at least 1) of local memory, zeroed and page-aligned, for use
    /// as the local side of transfers (`ARMCI_Malloc_local`).
    pub fn malloc_local(&self, bytes: usize) -> Result<*mut u8, RmaError> {
        if bytes == 0 {
            return Err(RmaError::Zero {
                op: "malloc_local",
                arg: "bytes".into(),
                value: 0,
            });
        }
        let mut map = anonymous(bytes)?;
        let p = map.as_mut_ptr();
        self.mem.borrow_mut().locals.insert(p as usize, map);
        Ok(p)
    }

    /// Frees memory from [`Rma::malloc_local`] (`ARMCI_Free_local`); any other pointer
    /// is [`RmaError::NotAllocated`].
    pub fn free_local(&self, ptr: *mut u8) -> Result<(), RmaError> {
        self.mem
            .borrow_mut()
            .locals
            .remove(&(ptr as usize))
            .map(drop)
            .ok_or(RmaError::NotAllocated {
                op: "free_local",
                addr: ptr as u64,
            })
    }
}
