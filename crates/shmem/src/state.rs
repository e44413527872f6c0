//! The process's OpenSHMEM state between `shmem_init` and `shmem_finalize`: the
//! world, the rma layer over it, the symmetric heap and the symmetric static data.
//!
//! OpenSHMEM has no handle to pass around, so the state is process-wide: one
//! pointer set by `shmem_init` and taken back by `shmem_finalize`. `Rma` is used from
//! one thread at a time. Granted `SHMEM_THREAD_SINGLE` or `_FUNNELED`, every call
//! first checks that it runs on the thread that called `shmem_init` (`pthread_self`;
//! a call from another thread is told so and ends the process): a plain global load
//! and that comparison cost a few instructions, where the thread-local it replaced
//! cost a `__tls_get_addr` call per operation (a shared library's thread-locals use
//! the general-dynamic model). Granted `_SERIALIZED` or `_MULTIPLE`, any thread may
//! call, and each call into the Rust side holds [`State::serial`] (`serial.rs`).
//!
//! Start-up (`shmem_init`, collective), in order:
//! 1. Join the job (`World::init`) and the rma layer over it (`WorldWireup`).
//! 2. Read `SHMEM_SYMMETRIC_SIZE` and allocate the heap: one `Rma::malloc` of that
//!    size on every PE; its bases, one per PE in that PE's own space, translate
//!    symmetric addresses ([`State::remote`]).
//! 3. Make the executable's data and bss symmetric ([`crate::statics`]).
//!
//! Shutdown (`shmem_finalize`, collective): quiet, barrier, free the heap and the
//! static data (back on private memory, bytes kept), finish the
//! rma layer (its service thread stops), then finalize and drop the world, which
//! says goodbye to every peer (a PE that simply exited would look lost to the others
//! still finalizing on other hosts).

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use nf_core::World;
use nf_rma::{Rma, WorldWireup};

use crate::error::{fatal, set_pe};
use crate::heap::Heap;
use crate::serial::Serial;
use crate::statics::{self, Region};

// The C side's same-host fast path (`csrc/fast.c`, `csrc/internal.h` struct nf_fast).
extern "C" {
    /// Fills the fast path's table and releases it (`npes` last).
    fn nf_shmem_fast_publish(
        base: usize,
        size: usize,
        map: *const usize,
        npes: c_int,
        team_area: *mut c_void,
        any_thread: c_int,
    );
    /// Empties the table: every call takes the Rust path again.
    fn nf_shmem_fast_clear();
    /// Says whether the rma layer may hold operations a quiet must complete.
    fn nf_shmem_fast_rma_used(used: c_int);
}

/// Tells the C side's quiet that nothing is outstanding in the rma layer (just after
/// `Rma::all_fence`), until the next call into the Rust side ([`with`]).
pub fn rma_idle() {
    // SAFETY: no preconditions (a store to the fast path's table).
    unsafe { nf_shmem_fast_rma_used(0) };
}

/// Everything between `shmem_init` and `shmem_finalize`.
pub struct State {
    /// The job's world, owned here (`Box::into_raw`): the rma layer borrows it, so it
    /// is given back and dropped only in [`finalize`], after the rma layer.
    world: *mut World,
    /// The rma layer over the world.
    pub rma: Rma<'static>,
    /// This PE.
    pub me: usize,
    /// PEs in the job.
    pub npes: usize,
    /// Base of every PE's part of the heap, in that PE's own address space.
    pub bases: Vec<u64>,
    /// Where every same-host PE's part of the heap is mapped here (`None` for PEs
    /// reached through the rma routes): the fast path of put, get and atomics.
    pub mapped: Vec<Option<usize>>,
    /// `mapped` as the C side's fast path reads it (0: not mapped); its buffer never
    /// moves or changes while the table points at it (published at the end of
    /// [`init`], withdrawn first thing in [`finalize`]).
    fast_map: Box<[usize]>,
    /// Contiguous puts, gets and atomics that reached the Rust side (the rest took
    /// the C side's fast path); shown at `shmem_finalize` when `NF_SHMEM_STATS` is
    /// set.
    pub slow: SlowCounts,
    /// The executable's static data, adopted as rma segments (`statics.rs`).
    pub statics: Vec<Region>,
    /// The heap's allocator (the same on every PE).
    pub heap: RefCell<Heap>,
    /// The thread level granted.
    pub thread: c_int,
    /// Heap offset of the team area (`team.rs`).
    pub team_area: usize,
    /// The thread that called `shmem_init`, the only one allowed to use the state
    /// below `SHMEM_THREAD_SERIALIZED`.
    owner: libc::pthread_t,
    /// The Rust side's turns, from `SHMEM_THREAD_SERIALIZED` up.
    pub serial: Serial,
}

/// `SHMEM_THREAD_SERIALIZED`: from this level up, any thread may call.
pub const SERIALIZED: c_int = 2;

/// Calls that took the Rust path ([`State::slow`]).
#[derive(Default)]
pub struct SlowCounts {
    /// `nf_shmem_put` calls.
    pub puts: Cell<u64>,
    /// `nf_shmem_get` calls.
    pub gets: Cell<u64>,
    /// `nf_shmem_amo` calls.
    pub amos: Cell<u64>,
    /// `nf_shmem_quiet` calls.
    pub quiets: Cell<u64>,
}

impl SlowCounts {
    /// Counts one call in `c`.
    pub fn count(c: &Cell<u64>) {
        c.set(c.get() + 1);
    }
}

/// The state between `shmem_init` and `shmem_finalize` (`Box::into_raw`), else null.
static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
/// Set once `shmem_finalize` has run: a second call does nothing (as in other
/// implementations), where a call before `shmem_init` is an error.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// This thread.
fn me() -> libc::pthread_t {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() }
}

/// The state, when it exists and this is its thread.
fn mine() -> Result<&'static State, &'static str> {
    let st = STATE.load(Ordering::Acquire);
    if st.is_null() {
        return Err("OpenSHMEM is not initialised; call shmem_init first");
    }
    // SAFETY: a non-null pointer is the live state: only `finalize` frees it, after
    // taking it out of STATE, and it runs on the owner thread, which is not inside
    // another call (C has no callbacks into the program from here).
    let st = unsafe { &*st };
    // SAFETY: pthread_equal has no preconditions.
    if st.thread < SERIALIZED && unsafe { libc::pthread_equal(st.owner, me()) } == 0 {
        return Err(
            "called from a thread other than the one that called shmem_init, which \
                    granted SHMEM_THREAD_FUNNELED at most: make every OpenSHMEM call from \
                    that thread, or start with shmem_init_thread(SHMEM_THREAD_MULTIPLE, ...)",
        );
    }
    Ok(st)
}

/// Runs `f` on the state, or ends the process naming `call` when OpenSHMEM is not
/// running, or runs on another thread.
pub fn with<R>(call: impl Display, f: impl FnOnce(&State) -> R) -> R {
    match mine() {
        Ok(st) => {
            let _turn = (st.thread >= SERIALIZED).then(|| st.serial.enter());
            // Whatever this call does, the next shmem_quiet takes the Rust path
            // (csrc/fast.c): marking every call is simpler to keep true than marking
            // each that reaches the rma layer, and costs a store.
            // SAFETY: no preconditions (a store to the fast path's table).
            unsafe { nf_shmem_fast_rma_used(1) };
            f(st)
        }
        Err(why) => fatal(call, why),
    }
}

/// `shmem_global_exit`'s request to the launcher, when OpenSHMEM runs on this thread
/// (the world is the init thread's; from another, the PE only exits, and a non-zero
/// status still ends the job); said, not fatal, if the launcher cannot take it, since
/// the caller exits next anyway.
pub fn end_job(status: c_int) {
    let Ok(st) = mine() else {
        return;
    };
    let _turn = (st.thread >= SERIALIZED).then(|| st.serial.enter());
    // SAFETY: `world` lives as long as the state (see `init`), which is live here.
    let world = unsafe { &*st.world };
    let call = "shmem_global_exit";
    let why = format!("shmem_global_exit({status}) on PE {}", st.me);
    if let Err(e) = world.end_job(status, &why) {
        crate::error::say(
            call,
            format!("could not ask the launcher to end the job: {e}"),
        );
    }
}

/// Whether `shmem_init` has run (and `shmem_finalize` not), on any thread.
pub fn running() -> bool {
    !STATE.load(Ordering::Acquire).is_null()
}

/// Whether this thread may use the running library.
pub fn usable() -> bool {
    mine().is_ok()
}

/// Start-up steps 1 to 3 (see the module docs); ends the process on failure.
pub fn init(thread: c_int) {
    let call = "shmem_init";
    let world = World::init().unwrap_or_else(|e| fatal(call, format!("cannot join the job: {e}")));
    set_pe(world.rank());
    let owned = Box::into_raw(Box::new(world));
    // SAFETY: `owned` stays valid until `finalize` turns it back into a box, which it
    // does only after dropping the rma layer, the one borrower (the state keeps both).
    let world: &'static World = unsafe { &*owned };
    let wire = WorldWireup::new(world)
        .unwrap_or_else(|e| fatal(call, format!("cannot wire up the rma layer: {e}")));
    let rma =
        Rma::new(wire).unwrap_or_else(|e| fatal(call, format!("cannot start the rma layer: {e}")));
    let size = crate::size::from_env().unwrap_or_else(|e| fatal(call, e));
    let bases = rma.malloc(size).unwrap_or_else(|e| {
        fatal(
            call,
            format!("cannot allocate the symmetric heap of {size} bytes per PE: {e}"),
        )
    });
    let mapped: Vec<Option<usize>> = (0..rma.size())
        .map(|p| {
            rma.local_ptr(p, bases[p], size)
                .ok()
                .flatten()
                .map(|ptr| ptr as usize)
        })
        .collect();
    let fast_map = mapped.iter().map(|m| m.unwrap_or(0)).collect();
    let mut heap = Heap::new(size);
    let team_area = crate::team::reserve(&mut heap).unwrap_or_else(|| crate::team::too_small(size));
    let statics = statics::adopt(&rma);
    let st = State {
        world: owned,
        mapped,
        fast_map,
        slow: SlowCounts::default(),
        me: rma.rank(),
        npes: rma.size(),
        rma,
        bases,
        statics,
        heap: RefCell::new(heap),
        thread,
        team_area,
        owner: me(),
        serial: Serial::default(),
    };
    let npes = c_int::try_from(st.npes)
        .unwrap_or_else(|_| fatal(call, format!("{} PEs are more than a C int", st.npes)));
    // SAFETY: `fast_map` holds `npes` entries and lives, unmoved and unchanged, in
    // the state until `finalize` clears the table before dropping it; the heap it
    // describes stays mapped that long too.
    unsafe {
        nf_shmem_fast_publish(
            st.my_base(),
            size,
            st.fast_map.as_ptr(),
            npes,
            (st.my_base() + st.team_area) as *mut c_void,
            c_int::from(st.thread >= SERIALIZED),
        )
    };
    STATE.store(Box::into_raw(Box::new(st)), Ordering::Release);
}

/// Shutdown (see the module docs); ends the process on failure.
pub fn finalize() {
    let call = "shmem_finalize";
    if STATE.load(Ordering::Acquire).is_null() && FINALIZED.load(Ordering::Acquire) {
        return;
    }
    if let Err(why) = mine() {
        fatal(call, why);
    }
    // SAFETY: no preconditions; from here every call takes the Rust path, which
    // finds no state once it is swapped out below.
    unsafe { nf_shmem_fast_clear() };
    let st = STATE.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: `st` came from `Box::into_raw` in `init` (non-null: checked just above
    // on the only thread that may swap it) and is out of STATE, so nothing reaches it.
    let st = *unsafe { Box::from_raw(st) };
    if std::env::var_os("NF_SHMEM_STATS").is_some() {
        let s = &st.slow;
        crate::error::say(
            call,
            format!(
                "through the Rust path: {} puts, {} gets, {} atomics, {} quiets (the \
                 others took the same-host fast path)",
                s.puts.get(),
                s.gets.get(),
                s.amos.get(),
                s.quiets.get()
            ),
        );
    }
    let fail = |step: &str, e: &dyn std::fmt::Display| fatal(call, format!("{step}: {e}"));
    st.rma.barrier().unwrap_or_else(|e| fail("barrier", &e));
    st.rma
        .free(st.bases[st.me])
        .unwrap_or_else(|e| fail("freeing the symmetric heap", &e));
    for r in &st.statics {
        st.rma
            .free(r.start as u64)
            .unwrap_or_else(|e| fail("giving back the static data", &e));
    }
    let State { world, rma, .. } = st;
    rma.finalize()
        .unwrap_or_else(|e| fail("finishing the rma layer", &e));
    // SAFETY: `world` came from `Box::into_raw` in `init`, and its only borrower, the
    // rma layer, was consumed just above.
    let world = unsafe { Box::from_raw(world) };
    world
        .finalize()
        .unwrap_or_else(|e| fail("leaving the job", &e));
    FINALIZED.store(true, Ordering::Release);
}

impl State {
    /// This PE's heap base as a pointer.
    pub fn my_base(&self) -> usize {
        self.bases[self.me] as usize
    }

    /// Checks `pe`, naming `call`.
    pub fn check_pe(&self, call: impl Display, pe: c_int) -> usize {
        match usize::try_from(pe) {
            Ok(p) if p < self.npes => p,
            _ => fatal(
                call,
                format!(
                    "PE {pe} does not exist: the job has {} PEs (0 ..= {})",
                    self.npes,
                    self.npes - 1
                ),
            ),
        }
    }

    /// The heap offset of `len` bytes at symmetric address `addr`, if they lie in
    /// the heap.
    pub fn offset(&self, addr: usize, len: usize) -> Option<usize> {
        let off = addr.checked_sub(self.my_base())?;
        (off.checked_add(len)? <= self.heap.borrow().size()).then_some(off)
    }

    /// The static data range holding `len` bytes at `addr`, and their offset in it.
    pub fn static_at(&self, addr: usize, len: usize) -> Option<(&Region, usize)> {
        self.statics
            .iter()
            .find_map(|r| r.offset(addr, len).map(|off| (r, off)))
    }

    /// Where `len` bytes at symmetric address `addr` of `pe` are mapped here, when
    /// `pe` shares this host (checked as [`State::remote`] checks).
    pub fn mapped_at(
        &self,
        call: impl Display + Copy,
        arg: &str,
        addr: usize,
        len: usize,
        pe: c_int,
    ) -> Option<*mut u8> {
        let (off, p, r) = self.locate(call, arg, addr, len, pe);
        let base = match r {
            None => self.mapped[p]?,
            Some(r) => r.mapped[p]?,
        };
        Some((base + off) as *mut u8)
    }

    /// Translates `len` bytes at symmetric address `addr` to the address the rma
    /// layer expects for `pe` (checked first), naming `call` and the argument `arg`
    /// when they are neither in the symmetric heap nor in the static data.
    pub fn remote(
        &self,
        call: impl Display + Copy,
        arg: &str,
        addr: usize,
        len: usize,
        pe: c_int,
    ) -> (u64, usize) {
        let (off, p, r) = self.locate(call, arg, addr, len, pe);
        let base = r.map_or(self.bases[p], |r| r.bases[p]);
        (base + off as u64, p)
    }

    /// The one translation: `(offset, pe, None)` in the heap (looked at first, so a
    /// heap address costs what it did before static data), `(offset, pe, Some(range))`
    /// in the static data, else the error naming `call`, `arg` and `pe`.
    fn locate(
        &self,
        call: impl Display + Copy,
        arg: &str,
        addr: usize,
        len: usize,
        pe: c_int,
    ) -> (usize, usize, Option<&Region>) {
        let p = self.check_pe(call, pe);
        if let Some(off) = self.offset(addr, len) {
            return (off, p, None);
        }
        if let Some((r, off)) = self.static_at(addr, len) {
            return (off, p, Some(r));
        }
        let statics: Vec<String> = self
            .statics
            .iter()
            .map(|r| format!("{:#x} + {} B", r.start, r.len))
            .collect();
        fatal(
            call,
            format!(
                "{arg} = {addr:#x} (+{len} B, for PE {pe}) is not symmetric: it is neither \
                 in the symmetric heap ({:#x} + {} B on this PE) nor in the executable's \
                 global and static data ({}); only shmem_malloc'd memory and global or \
                 static variables are remotely accessible (not the stack, malloc or \
                 shared libraries' data)",
                self.my_base(),
                self.heap.borrow().size(),
                if statics.is_empty() {
                    "none".to_owned()
                } else {
                    statics.join(", ")
                }
            ),
        );
    }
}
