//! Collectives of a group holding part of one node (`csrc/coll.c` decides when they
//! apply): barrier, all-reduce and broadcast through a small shared-memory block of
//! each member, with step numbers of the group's own.
//!
//! The node collectives ([`crate::coll`]) cannot serve such a group: their step
//! numbers stay alike only while every process of the node takes every step (rule 4
//! of nf-rma's `shm/control.rs`). So the group gets its own: when it is made, its
//! members allocate one `Block` each (an rma allocation over the group, reached by
//! load / store since all of them share the node) and count their steps there.
//!
//! A step `seq`: a member with a part (every member in an all-reduce, the root in a
//! broadcast) writes it into its buffer `seq % SLOTS`; every member then stores
//! `arrive = seq` (Release). Barrier and all-reduce wait until every member's
//! `arrive >= seq` (Acquire) and read every part, folded in member order (the same
//! result everywhere, bit for bit); in a broadcast the root waits for nobody and the
//! others wait for the root's arrival only and copy its part. Buffer reuse: a member
//! whose buffer others read at step `t` rewrites it (at a later step of that slot)
//! only once every member has arrived at `t + 1` or later, and a member arrives there
//! only after reading step `t`'s parts; so nobody reads a buffer while it changes
//! (after a barrier or an all-reduce the member already knows). Longer messages
//! take a step per `PART`-byte piece (whole elements).
//!
//! Waiting is the rma layer's ([`nf_rma::Rma::wait_on_node`]): spin with a CPU per
//! process, else yield and nap, and a member that died while the others wait for it
//! ends the wait with an error naming it.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ffi::{call_name, fatal, NfaWireup};
use crate::reduce::{fold, reduction_args};
use crate::state::with;
use crate::wireup::CTeam;

/// Bytes of one member's part of a step.
const PART: usize = 4096;
/// Buffers of a member, used in turn: a broadcast's root may run this many steps
/// ahead of its slowest reader before it waits (two made back-to-back broadcasts
/// lockstep under oversubscription: 1-9 µs a call where MPI's eager sends take 0.1).
const SLOTS: usize = 8;

/// The buffer of step `seq`.
fn slot_of(seq: u64) -> usize {
    (seq % SLOTS as u64) as usize
}

/// One member's block: its step number on a line of its own, then [`SLOTS`] buffers.
#[repr(C, align(64))]
struct Block {
    arrive: AtomicU64,
    _line: [u8; 56],
    data: [[u8; PART]; SLOTS],
}

/// A group's collectives: every member's block, mapped here.
pub struct GroupColl {
    /// The group's members, world ranks in group order.
    procs: Vec<usize>,
    /// Each member's block (ours at `me`).
    blocks: Vec<*const Block>,
    /// Our index in `procs`.
    me: usize,
    /// Our block's address as the rma layer knows it (for the free).
    base: u64,
    /// The last step entered.
    seq: Cell<u64>,
    /// Every other member has arrived at this step or later.
    seen: Cell<u64>,
    /// The last step at which others read each of our buffers (0: none).
    published: [Cell<u64>; SLOTS],
}

impl GroupColl {
    /// Enters the next step with `part` (copied into our buffer of its slot, which
    /// others then read), first waiting, when they read that buffer two steps ago,
    /// until all of them are past that step (the buffer-reuse rule); arrives.
    /// Returns the step's number.
    fn enter(&self, call: &str, part: Option<&[u8]>) -> u64 {
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        let slot = slot_of(seq);
        let own = self.blocks[self.me];
        if let Some(bytes) = part {
            let read_at = self.published[slot].get();
            if read_at > 0 {
                self.wait_all(call, read_at + 1);
            }
            // SAFETY: our block is mapped while the group lives; every member is
            // past the step that last read our buffer `slot` (just above); `bytes`
            // is at most PART long (the callers cut pieces so).
            unsafe {
                let to = std::ptr::addr_of!((*own).data[slot])
                    .cast::<u8>()
                    .cast_mut();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), to, bytes.len());
            }
            self.published[slot].set(seq);
        }
        // SAFETY: as above; the word is atomic.
        unsafe { &(*own).arrive }.store(seq, Ordering::Release);
        seq
    }

    /// Waits until every other member has arrived at step `seq` or later.
    fn wait_all(&self, call: &str, seq: u64) {
        if self.seen.get() >= seq {
            return;
        }
        let next = Cell::new(0usize);
        self.wait(call, seq, &next, || {
            let mut i = next.get();
            while i < self.procs.len() && (i == self.me || self.arrived(i, seq)) {
                i += 1;
            }
            next.set(i);
            i == self.procs.len()
        });
        self.seen.set(seq);
    }

    /// Waits until member `i` has arrived at step `seq` or later.
    fn wait_for(&self, call: &str, i: usize, seq: u64) {
        self.wait(call, seq, &Cell::new(i), || self.arrived(i, seq));
    }

    /// Whether member `i` has arrived at step `seq` (Acquire: its part is then there).
    fn arrived(&self, i: usize, seq: u64) -> bool {
        // SAFETY: every member's block is mapped while the group lives.
        unsafe { &(*self.blocks[i]).arrive }.load(Ordering::Acquire) >= seq
    }

    /// The rma layer's wait until `done()`, on member `awaited` (for the liveness
    /// check; past the last: nobody).
    fn wait(&self, call: &str, seq: u64, awaited: &Cell<usize>, done: impl FnMut() -> bool) {
        with(call, |st| {
            st.rma.wait_on_node(
                "group collective",
                &|| format!("arriving at step {seq} of its group's collectives"),
                done,
                || self.procs.get(awaited.get()).copied(),
            )
        })
        .unwrap_or_else(|e| fatal(call, e));
    }

    /// Member `i`'s part of the step just waited for, `len` bytes.
    ///
    /// # Safety
    /// Called between that step's wait and our next step; `len <= PART`.
    unsafe fn part(&self, i: usize, slot: usize, len: usize) -> &[u8] {
        // SAFETY: the block is mapped; by the buffer-reuse rule its owner does not
        // write it until we arrive at a later step.
        unsafe {
            std::slice::from_raw_parts(
                std::ptr::addr_of!((*self.blocks[i]).data[slot]).cast::<u8>(),
                len,
            )
        }
    }
}

/// The group's collectives, made by every member of a group holding part of one
/// node (collective over the group's wire-up `wu`, which must not be these
/// collectives themselves); NULL when its members do not all share this node.
///
/// # Safety
/// `call` is NULL or a C string; `wu` is the wire-up of a group this process belongs
/// to, valid during the call.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_gcoll_new(
    call: *const c_char,
    wu: *const NfaWireup,
) -> *mut c_void {
    let call = &call_name(call);
    if wu.is_null() {
        fatal(call, "no group wire-up");
    }
    // SAFETY: the caller's promise.
    let team = unsafe { CTeam::new(&*wu) };
    let procs = nf_rma::Team::members(&team).to_vec();
    with(call, |st| {
        if !procs.iter().all(|&p| st.rma.domains().same(p)) {
            return std::ptr::null_mut();
        }
        let me = procs
            .iter()
            .position(|&p| p == st.rma.rank())
            .unwrap_or_else(|| fatal(call, "this process is not a member of the group"));
        let bases = st
            .rma
            .malloc_team(&team, size_of::<Block>())
            .unwrap_or_else(|e| fatal(call, e));
        let blocks: Vec<*const Block> = procs
            .iter()
            .zip(&bases)
            .map(
                |(&p, &b)| match st.rma.local_ptr(p, b, size_of::<Block>()) {
                    Ok(Some(ptr)) => ptr.cast::<Block>().cast_const(),
                    Ok(None) => fatal(call, format!("rank {p}'s group block is not on this node")),
                    Err(e) => fatal(call, e),
                },
            )
            .collect();
        // Every block starts at step 0: `malloc_team` hands out zeroed memory, a reused
        // segment too, and ends with a barrier (nf-rma's cache rule 4).
        let gc = GroupColl {
            procs,
            blocks,
            me,
            base: bases[me],
            seq: Cell::new(0),
            seen: Cell::new(0),
            published: Default::default(),
        };
        Box::into_raw(Box::new(gc)).cast::<c_void>()
    })
}

/// Takes back a handle of [`nf_armci_rs_gcoll_new`].
///
/// # Safety
/// `gc` is such a handle, not yet freed.
unsafe fn handle<'a>(gc: *mut c_void) -> &'a GroupColl {
    // SAFETY: the caller's promise.
    unsafe { &*gc.cast::<GroupColl>() }
}

/// Frees the group's collectives: with `wu` (the group's wire-up, plain MPI), its
/// blocks too, collectively; with NULL (`ARMCI_Finalize`, which releases every
/// segment) only this process's bookkeeping.
///
/// # Safety
/// `gc` is a handle of [`nf_armci_rs_gcoll_new`], not used afterwards; `call` and
/// `wu` as there.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_gcoll_free(
    call: *const c_char,
    gc: *mut c_void,
    wu: *const NfaWireup,
) {
    // SAFETY: the caller's promise: a live handle, given back once.
    let gc = unsafe { Box::from_raw(gc.cast::<GroupColl>()) };
    if wu.is_null() {
        return;
    }
    let call = &call_name(call);
    // SAFETY: the caller's promise.
    let team = unsafe { CTeam::new(&*wu) };
    with(call, |st| st.rma.free_team(&team, gc.base)).unwrap_or_else(|e| fatal(call, e));
}

/// The group's barrier.
///
/// # Safety
/// `gc` is a live handle; `call` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_gcoll_barrier(call: *const c_char, gc: *mut c_void) {
    // SAFETY: the caller's promise.
    let gc = unsafe { handle(gc) };
    let call = &call_name(call);
    let seq = gc.enter(call, None);
    gc.wait_all(call, seq);
}

/// The group's all-reduce of `n` elements of ARMCI type `ty` at `x` with operator
/// `op` (C's `enum nfa_gop`), in place; C has checked the arguments and, for
/// absmax / absmin, made `x` absolute.
///
/// # Safety
/// `gc` is a live handle; `x` holds `n` elements of the type; `call` as above.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_gcoll_allreduce(
    call: *const c_char,
    gc: *mut c_void,
    x: *mut c_void,
    n: c_int,
    ty: c_int,
    op: c_int,
) {
    let call = &call_name(call);
    let (ty, op, n) = reduction_args(call, ty, op, n);
    if n == 0 {
        return;
    }
    if x.is_null() {
        fatal(call, "argument 'x' is NULL");
    }
    // SAFETY: the caller's promise.
    let gc = unsafe { handle(gc) };
    // SAFETY: the caller's promise: `n` elements of `ty` at `x`.
    let data = unsafe { std::slice::from_raw_parts_mut(x.cast::<u8>(), n * ty.size()) };
    for piece in data.chunks_mut(PART / ty.size() * ty.size()) {
        let seq = gc.enter(call, Some(piece));
        gc.wait_all(call, seq);
        let slot = slot_of(seq);
        let len = piece.len();
        // SAFETY: between the step's wait and our next step; `len <= PART`.
        piece.copy_from_slice(unsafe { gc.part(0, slot, len) });
        for i in 1..gc.procs.len() {
            // SAFETY: as above.
            fold(ty, op, piece, unsafe { gc.part(i, slot, len) })
                .unwrap_or_else(|e| fatal(call, e));
        }
    }
}

/// The group's broadcast of `len` bytes at `buf` from world rank `root`, a member.
///
/// # Safety
/// `gc` is a live handle; `buf` holds `len` bytes; `call` as above.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_gcoll_bcast(
    call: *const c_char,
    gc: *mut c_void,
    buf: *mut c_void,
    len: c_int,
    root: c_int,
) {
    let call = &call_name(call);
    // SAFETY: the caller's promise.
    let gc = unsafe { handle(gc) };
    let Some(from) = usize::try_from(root)
        .ok()
        .and_then(|r| gc.procs.iter().position(|&p| p == r))
    else {
        fatal(call, format!("root {root} is not a member of the group"));
    };
    let Ok(len) = usize::try_from(len) else {
        fatal(call, format!("length {len} out of range"));
    };
    if len == 0 {
        return;
    }
    if buf.is_null() {
        fatal(call, "argument 'buffer' is NULL");
    }
    // SAFETY: the caller's promise: `len` bytes at `buf`.
    let data = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    for piece in data.chunks_mut(PART) {
        if gc.me == from {
            gc.enter(call, Some(piece));
        } else {
            let seq = gc.enter(call, None);
            gc.wait_for(call, from, seq);
            let slot = slot_of(seq);
            let n = piece.len();
            // SAFETY: between the step's wait and our next step; `n <= PART`.
            piece.copy_from_slice(unsafe { gc.part(from, slot, n) });
        }
    }
}
