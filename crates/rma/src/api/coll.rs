//! Collectives among the procs of this proc's node (its domain), through the
//! collective slots of their control segments (rule 4 of `shm/control.rs`), with a
//! hook for the step among the nodes' leaders.
//!
//! The same steps serve a team's procs on this node ([`crate::NodeTeam`],
//! `api/team.rs`): a [`Steps`] names the procs taking part here (ascending, the first
//! leads), where their slots are (the control segments, or the team's allocation of
//! slots of the same layout) and whose step numbers count. Below, "the node" means
//! those procs.
//!
//! An operation is a run of steps, each numbered `seq` (the same numbers on every
//! proc of the node, since every proc makes the same calls). Every proc stores
//! `arrive = seq` on entering a step, after writing its part, if it has one, into its
//! buffer `seq % DEPTH` (two buffers in a control segment's slot, eight in a
//! team's: `shm/control.rs`'s `StepSlot`). Then, by operation:
//!
//! | step | the leader (the node's lowest proc) | the others |
//! |---|---|---|
//! | barrier | waits until all arrived, runs `across`, `release = seq` | wait for the leader's release |
//! | all-reduce | waits until all arrived, folds their buffers into its own in proc order, runs `across`, `release = seq` | wait for the leader's release, copy its buffer |
//! | broadcast | is the source when the root is on another node: runs `across` into its buffer, `release = seq` | the root, when here, is the source: its part is its data, and the others wait for its arrival; else they wait for the leader's release and copy its buffer |
//!
//! With one node (of the job, or of the team), few procs and short parts, barrier and all-reduce run *flat*
//! instead: every proc waits for every arrival and folds every buffer itself in proc
//! order (the same result everywhere, bit for bit), one hop where the leader's way
//! takes two (arrive, release).
//!
//! `across` is the same step among the leaders of all nodes (e.g. MPI on the leaders'
//! communicator); there is none with one node. A broadcast waits for no one but its
//! source, and its source for no one (the root's leader copies the root's part for
//! `across`). In a control segment's slot, parts of at most 24 bytes travel in the
//! line of their `arrive` word, so reading the word brings them.
//!
//! Buffer reuse: a proc whose buffer others read at step `t` (the leader's result, a
//! source's data) rewrites it `DEPTH` steps later, and first sees every other proc's
//! `arrive >= t + 1`: a reader finishes a step before it enters the next. (Usually
//! already known: the leader saw every arrival at `t + 1` when that was a barrier or
//! an all-reduce.) A contribution is read only by the leader within its step, and
//! its owner waits for that step's release before it moves on.
//!
//! Messages longer than a buffer (32 KiB, a team's 8 KiB; whole elements) take a step per
//! piece; every node cuts them the same way, so the leaders' hooks match up. A proc
//! alone on its node skips the buffers and hands its data to the hook directly.
//!
//! Waiting follows the rma layer's policy (`Patience::wait_yielding`: spin while
//! every proc of the node has a CPU, else yield from the first empty poll, since the
//! proc waited for needs the CPU, and nap after a few yields, which takes the waiter
//! off the run queue: with 16 procs on 2 CPUs that made barriers 2-10x faster), and every
//! `NF_PEER_CHECK_MS` the waiter checks that the proc it waits for (the first that
//! has not arrived, or the one to release) is alive: a proc that died there is an
//! error naming it ([`RmaError::PeerLeft`]), never an endless wait.

use crate::shm::sync::{AtomicU64, Ordering};
use std::cell::Cell;

use crate::error::RmaError;
use crate::rma::Rma;
use crate::shm::control::{CollSlot, StepSlot, MAX_DEPTH};

/// The step among the nodes' leaders: gets the step's data (the leader's combined
/// buffer, or the broadcast source's) and leaves the job-wide result there.
pub type Across<'a> = Option<&'a mut dyn FnMut(&mut [u8]) -> Result<(), RmaError>>;

/// Most procs of a node whose steps run flat (`Steps::flat`).
const FLAT_PROCS: usize = 16;
/// Most bytes of all parts together of a flat step.
const FLAT_BYTES: usize = 4096;

/// What a proc puts in its buffer at a step.
enum Part<'a> {
    /// Nothing: the buffer stays as it is.
    Nothing,
    /// These bytes, copied in on entering.
    Copy(&'a [u8]),
    /// Whatever the step writes there later (the leaders' step).
    Reserve,
}

/// This proc's bookkeeping of one run of steps (module docs): the node's, or a
/// node team's.
#[derive(Default)]
pub(crate) struct CollState {
    /// The last step entered.
    seq: Cell<u64>,
    /// Every other proc of the node has arrived at this step or later.
    seen: Cell<u64>,
    /// The last step at which others read each of our buffers (0: none).
    published: [Cell<u64>; MAX_DEPTH],
}

/// Where the slots of a run of steps are, by index in its procs.
pub(crate) trait SlotTable {
    /// Their layout.
    type Slot: StepSlot;
    /// The slot of the `i`th proc.
    fn slot(&self, i: usize) -> &Self::Slot;
}

/// The node's slots: those of its procs' control segments.
pub(crate) struct NodeSlots<'s, 'w> {
    rma: &'s Rma<'w>,
    procs: &'s [usize],
}

impl SlotTable for NodeSlots<'_, '_> {
    type Slot = CollSlot;

    fn slot(&self, i: usize) -> &CollSlot {
        self.rma.ctl_of(self.procs[i]).coll()
    }
}

/// The procs of this node that take part in a run of steps, where their slots are,
/// and our bookkeeping of it (module docs).
pub(crate) struct Steps<'s, 'w, T> {
    /// The layer (patience, liveness checks).
    pub rma: &'s Rma<'w>,
    /// World ranks of the procs of this node taking part, ascending; the first leads.
    pub procs: &'s [usize],
    /// Their slots, by index in `procs`.
    pub slots: T,
    /// Our index in `procs`.
    pub me: usize,
    /// Our step numbers.
    pub state: &'s CollState,
    /// Nodes with procs taking part (the leaders' step joins them; flat needs one).
    pub nodes: usize,
    /// Whose steps these are, for error messages ("its node's").
    pub whose: &'static str,
}

impl Rma<'_> {
    /// The procs of this proc's node (domain), ascending; the first is its leader.
    pub fn node_procs(&self) -> &[usize] {
        self.domains.procs(self.domains.my_id())
    }

    /// The steps of this node's collectives.
    fn node_steps(&self) -> Steps<'_, '_, NodeSlots<'_, '_>> {
        let procs = self.node_procs();
        Steps {
            rma: self,
            procs,
            slots: NodeSlots { rma: self, procs },
            me: procs.iter().position(|&p| p == self.rank).unwrap_or(0),
            state: &self.coll,
            nodes: self.domains.count(),
            whose: "its node's",
        }
    }

    /// Barrier of this proc's node, with `across` (the leaders' barrier) between the
    /// arrivals and the release. Orders memory: what a proc wrote before it is seen
    /// by every proc of the node after it (and of the job, if `across` orders the
    /// leaders).
    pub fn node_barrier(&self, across: Across<'_>) -> Result<(), RmaError> {
        self.node_steps().barrier("node barrier", across)
    }

    /// Element-wise reduction of `data` (elements of `elem` bytes) over the node, the
    /// leader applying `fold(acc, other)` for each other proc in proc order, then
    /// `across` (the leaders' all-reduce); every proc gets the result in `data`.
    /// `fold` must accept any whole number of elements.
    pub fn node_allreduce(
        &self,
        data: &mut [u8],
        elem: usize,
        fold: &mut dyn FnMut(&mut [u8], &[u8]),
        across: Across<'_>,
    ) -> Result<(), RmaError> {
        self.node_steps()
            .allreduce("node allreduce", data, elem, fold, across)
    }

    /// Broadcast of `data` from proc `root` (anywhere in the job) over the node: the
    /// root's bytes when it is on this node (then `across` on its leader sends them
    /// to the other leaders), else what `across` (the leaders' broadcast from the
    /// root's leader) brings to this node's leader.
    pub fn node_broadcast(
        &self,
        data: &mut [u8],
        root: usize,
        across: Across<'_>,
    ) -> Result<(), RmaError> {
        let op = "node broadcast";
        self.check_proc(op, root)?;
        let steps = self.node_steps();
        let root = steps.procs.iter().position(|&p| p == root);
        steps.broadcast(op, data, root, across)
    }
}

impl<T: SlotTable> Steps<'_, '_, T> {
    /// The slot of `procs[i]`.
    fn slot(&self, i: usize) -> &T::Slot {
        self.slots.slot(i)
    }

    /// The buffer of step `seq`.
    fn buf(seq: u64) -> usize {
        (seq % T::Slot::DEPTH as u64) as usize
    }

    /// Barrier, with `across` between the arrivals and the release.
    pub fn barrier(&self, op: &'static str, mut across: Across<'_>) -> Result<(), RmaError> {
        if self.procs.len() == 1 {
            return run_across(&mut across, &mut []);
        }
        let seq = self.enter_step(Part::Nothing)?;
        if self.flat(0) {
            return self.wait_arrivals(op, seq);
        }
        if self.me == 0 {
            self.wait_arrivals(op, seq)?;
            run_across(&mut across, &mut [])?;
            self.release(seq);
            Ok(())
        } else {
            self.wait_release(op, 0, seq)
        }
    }

    /// All-reduce of `data` (elements of `elem` bytes), folded in proc order, then
    /// `across`.
    pub fn allreduce(
        &self,
        op: &'static str,
        data: &mut [u8],
        elem: usize,
        fold: &mut dyn FnMut(&mut [u8], &[u8]),
        mut across: Across<'_>,
    ) -> Result<(), RmaError> {
        let most = T::Slot::BYTES;
        if elem == 0 || elem > most || !data.len().is_multiple_of(elem) {
            return Err(RmaError::Collective {
                op,
                why: format!(
                    "{} B is not a whole number of {elem}-byte elements (at most {most} B each)",
                    data.len()
                ),
            });
        }
        let piece_len = most / elem * elem;
        let n = self.procs.len();
        for piece in data.chunks_mut(piece_len) {
            if n == 1 {
                run_across(&mut across, piece)?;
                continue;
            }
            let seq = self.enter_step(Part::Copy(piece))?;
            let k = Self::buf(seq);
            let len = piece.len();
            if self.flat(len) {
                self.wait_arrivals(op, seq)?;
                // SAFETY: rule 4: every proc wrote its part before arriving and keeps it
                // until every other proc has arrived at a later step.
                unsafe { copy_out(self.slot(0).part(k, len), piece) };
                for i in 1..n {
                    // SAFETY: as above.
                    let other =
                        unsafe { std::slice::from_raw_parts(self.slot(i).part(k, len), len) };
                    fold(piece, other);
                }
                self.state.published[k].set(seq);
                continue;
            }
            if self.me != 0 {
                self.wait_release(op, 0, seq)?;
                // SAFETY: rule 4: the leader released step `seq` and rewrites its
                // buffer `k` only after we arrive at a later step.
                unsafe { copy_out(self.slot(0).data(k), piece) };
                continue;
            }
            self.wait_arrivals(op, seq)?;
            // SAFETY: rule 4: every proc arrived at `seq` and none is released, so no
            // one writes any buffer `k` of the node and only we touch ours.
            let acc = unsafe { std::slice::from_raw_parts_mut(self.slot(0).data(k), len) };
            if self.slot(0).part(k, len) != acc.as_mut_ptr() {
                acc.copy_from_slice(piece); // our part went elsewhere (inline)
            }
            for i in 1..n {
                // SAFETY: as above; proc `i` wrote `len` bytes there before arriving.
                let other = unsafe { std::slice::from_raw_parts(self.slot(i).part(k, len), len) };
                fold(acc, other);
            }
            run_across(&mut across, acc)?;
            piece.copy_from_slice(acc);
            self.publish(k, seq);
        }
        Ok(())
    }

    /// Broadcast of `data` from `procs[root]` (`None`: the root is on another node,
    /// and `across` brings its bytes to our leader).
    pub fn broadcast(
        &self,
        op: &'static str,
        data: &mut [u8],
        root: Option<usize>,
        mut across: Across<'_>,
    ) -> Result<(), RmaError> {
        let source = root.unwrap_or(0);
        let me = self.me;
        for piece in data.chunks_mut(T::Slot::BYTES) {
            if self.procs.len() == 1 {
                run_across(&mut across, piece)?;
                continue;
            }
            let part = if Some(me) == root {
                Part::Copy(piece)
            } else if me == source {
                Part::Reserve
            } else {
                Part::Nothing
            };
            let seq = self.enter_step(part)?;
            let k = Self::buf(seq);
            if Some(me) == root {
                self.publish(k, seq);
                if me == 0 {
                    run_across(&mut across, piece)?;
                }
            } else if me == source {
                // We lead a node without the root: the leaders' step fills our buffer.
                // SAFETY: rule 4: `enter_step` saw every reader of its last use done.
                let into = unsafe {
                    std::slice::from_raw_parts_mut(self.slot(source).data(k), piece.len())
                };
                run_across(&mut across, into)?;
                piece.copy_from_slice(into);
                self.publish(k, seq);
            } else if root.is_some() {
                // The root's part is complete once it arrived.
                self.wait_arrival_of(op, source, seq)?;
                // SAFETY: rule 4: the root rewrites its part `k` only after we
                // arrive at a later step.
                unsafe { copy_out(self.slot(source).part(k, piece.len()), piece) };
                if me == 0 {
                    // The root's bytes to the other nodes' leaders, from our copy.
                    run_across(&mut across, piece)?;
                }
            } else {
                self.wait_release(op, source, seq)?;
                // SAFETY: rule 4: the source released step `seq` and rewrites its buffer
                // `k` only after we arrive at a later step.
                unsafe { copy_out(self.slot(source).data(k), piece) };
            }
        }
        Ok(())
    }

    /// Whether a step with parts of `bytes` runs flat: every proc waits for every
    /// arrival and reads every part itself, one hop instead of the leader's two. Only
    /// with one node (no leaders' step), at most [`FLAT_PROCS`] procs, and parts whose
    /// reading by everyone costs less than that hop ([`FLAT_BYTES`] over the node).
    fn flat(&self, bytes: usize) -> bool {
        let k = self.procs.len();
        self.nodes == 1 && k <= FLAT_PROCS && bytes * k <= FLAT_BYTES
    }

    /// Enters the next step: when we write our buffer of its number (`part`) and
    /// others read it last time, waits until all of them are past that (buffer reuse,
    /// module docs); copies the part in; arrives. Returns the step's number.
    fn enter_step(&self, part: Part<'_>) -> Result<u64, RmaError> {
        let st = self.state;
        let seq = st.seq.get() + 1;
        st.seq.set(seq);
        let k = Self::buf(seq);
        if !matches!(part, Part::Nothing) {
            let read_at = st.published[k].get();
            if read_at > 0 && st.seen.get() <= read_at {
                self.wait_arrivals("collective", read_at + 1)?;
            }
        }
        let own = self.slot(self.me);
        if let Part::Copy(bytes) = part {
            let to = own.part(k, bytes.len());
            // SAFETY: rule 4: nobody reads our buffer `k` now (checked just
            // above); `bytes` is at most a buffer long.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), to, bytes.len()) };
        }
        own.arrive().store(seq, Ordering::Release);
        Ok(seq)
    }

    /// Ends step `seq` for the others: our buffer `k` holds its result.
    fn publish(&self, k: usize, seq: u64) {
        self.state.published[k].set(seq);
        self.release(seq);
    }

    /// The node may go on past step `seq` (and read our result of it).
    fn release(&self, seq: u64) {
        self.slot(self.me).release().store(seq, Ordering::Release);
    }

    /// Waits until every other proc of the node has arrived at step `seq` or later.
    fn wait_arrivals(&self, op: &'static str, seq: u64) -> Result<(), RmaError> {
        if self.state.seen.get() >= seq {
            return Ok(());
        }
        let n = self.procs.len();
        // The first proc not seen arrived yet (the one to check on while waiting).
        let next = Cell::new(0);
        self.wait(
            op,
            &|| format!("arriving at step {seq} of {} collectives", self.whose),
            || {
                let mut i = next.get();
                while i < n
                    && (i == self.me || self.slot(i).arrive().load(Ordering::Acquire) >= seq)
                {
                    i += 1;
                }
                next.set(i);
                i == n
            },
            || self.procs.get(next.get()).copied(),
        )?;
        self.state.seen.set(seq);
        Ok(())
    }

    /// Waits until `procs[from]` released step `seq`.
    fn wait_release(&self, op: &'static str, from: usize, seq: u64) -> Result<(), RmaError> {
        let word = self.slot(from).release();
        self.wait_seq(op, from, word, "releasing", seq)
    }

    /// Waits until `procs[from]` arrived at step `seq`.
    fn wait_arrival_of(&self, op: &'static str, from: usize, seq: u64) -> Result<(), RmaError> {
        let word = self.slot(from).arrive();
        self.wait_seq(op, from, word, "arriving at", seq)
    }

    /// Waits until `procs[from]`'s `word` reaches `seq` (`doing` it, for the error).
    fn wait_seq(
        &self,
        op: &'static str,
        from: usize,
        word: &AtomicU64,
        doing: &str,
        seq: u64,
    ) -> Result<(), RmaError> {
        self.wait(
            op,
            &|| format!("{doing} step {seq} of {} collectives", self.whose),
            || word.load(Ordering::Acquire) >= seq,
            || Some(self.procs[from]),
        )
    }

    /// The layer's wait until `done()` (module docs), checking that the proc
    /// `awaited()` names (None: nobody known) is alive.
    fn wait(
        &self,
        op: &'static str,
        what: &dyn Fn() -> String,
        done: impl FnMut() -> bool,
        awaited: impl Fn() -> Option<usize>,
    ) -> Result<(), RmaError> {
        let patience = &self.rma.patience;
        patience
            .wait_yielding(op, what, done, || {
                awaited().and_then(|p| patience.pid_of(p)).unwrap_or(0)
            })
            .map_err(left)
    }
}

/// Runs the leaders' step, if there is one.
fn run_across(across: &mut Across<'_>, data: &mut [u8]) -> Result<(), RmaError> {
    match across {
        Some(step) => step(data),
        None => Ok(()),
    }
}

/// Copies `out.len()` bytes of a collective part or buffer at `from` into `out`.
///
/// # Safety
/// `from` is a part or buffer of a mapped collective slot holding `out.len()` bytes,
/// and rule 4 of `shm/control.rs` keeps its owner from writing it meanwhile.
unsafe fn copy_out(from: *const u8, out: &mut [u8]) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::copy_nonoverlapping(from, out.as_mut_ptr(), out.len()) }
}

/// A peer that died while we waited (`Patience` says "holding"; here it is "before").
fn left(e: RmaError) -> RmaError {
    match e {
        RmaError::PeerDied {
            op,
            proc,
            pid,
            what,
        } => RmaError::PeerLeft {
            op,
            proc,
            pid,
            what,
        },
        other => other,
    }
}
