//! Collectives among the procs of this proc's node (its domain), through the
//! collective slots of their control segments (rule 4 of `shm/control.rs`), with a
//! hook for the step among the nodes' leaders.
//!
//! An operation is a run of steps, each numbered `seq` (the same numbers on every
//! proc of the node, since every proc makes the same calls). One step:
//! 1. Every proc writes its part, if it has one, into its buffer `seq % 2`, then
//!    stores `arrive = seq`.
//! 2. The leader (the node's lowest proc) waits until every proc of the node has
//!    arrived, combines (a reduction folds the others' buffers into its own in proc
//!    order), runs the `across` hook (the same step among the leaders of all nodes,
//!    e.g. MPI on the leaders' communicator; none with one node), takes its result
//!    and stores `release = seq`.
//! 3. The others wait until the leader's `release >= seq`, then copy the result out.
//!
//! Messages longer than a buffer ([`COLL_BYTES`], whole elements) take a step per
//! piece; every node cuts them the same way, so the leaders' hooks match up. A proc
//! alone on its node skips the buffers and hands its data to the hook directly.
//!
//! Waiting follows the rma layer's policy (`Patience`: spin while every proc of the
//! node has a CPU, else spin briefly, then yield and nap), and every
//! `NF_PEER_CHECK_MS` the waiter checks that the proc it waits for (the first that
//! has not arrived, or the leader) is alive: a proc that died there is an error
//! naming it ([`RmaError::PeerLeft`]), never an endless wait.

use std::sync::atomic::Ordering;

use crate::error::RmaError;
use crate::rma::Rma;
use crate::shm::control::{Control, COLL_BYTES};

/// The step among the nodes' leaders: gets the step's data (the leader's combined
/// buffer, or the broadcast source's) and leaves the job-wide result there.
pub type Across<'a> = Option<&'a mut dyn FnMut(&mut [u8]) -> Result<(), RmaError>>;

impl Rma<'_> {
    /// The procs of this proc's node (domain), ascending; the first is its leader.
    pub fn node_procs(&self) -> &[usize] {
        self.domains.procs(self.domains.my_id())
    }

    /// Barrier of this proc's node, with `across` (the leaders' barrier) between the
    /// arrivals and the release. Orders memory: what a proc wrote before it is seen
    /// by every proc of the node after it (and of the job, if `across` orders the
    /// leaders).
    pub fn node_barrier(&self, mut across: Across<'_>) -> Result<(), RmaError> {
        let op = "node barrier";
        if self.node_procs().len() == 1 {
            return run_across(&mut across, &mut []);
        }
        let seq = self.next_coll_step();
        self.coll_arrive(seq);
        if self.is_node_leader() {
            self.wait_arrivals(op, seq)?;
            run_across(&mut across, &mut [])?;
            self.coll_release(seq);
            Ok(())
        } else {
            self.wait_release(op, seq)
        }
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
        mut across: Across<'_>,
    ) -> Result<(), RmaError> {
        let op = "node allreduce";
        if elem == 0 || elem > COLL_BYTES || !data.len().is_multiple_of(elem) {
            return Err(RmaError::Collective {
                op,
                why: format!(
                    "{} B is not a whole number of {elem}-byte elements (at most {COLL_BYTES} B \
                     each)",
                    data.len()
                ),
            });
        }
        let piece_len = COLL_BYTES / elem * elem;
        let procs = self.node_procs();
        for piece in data.chunks_mut(piece_len) {
            if procs.len() == 1 {
                run_across(&mut across, piece)?;
                continue;
            }
            let seq = self.next_coll_step();
            let parity = (seq % 2) as usize;
            let own = self.ctl_of(self.rank);
            let mine = own.coll_data(parity);
            // SAFETY: rule 4: our buffer `parity` is ours to write until we arrive;
            // `piece` is at most COLL_BYTES long.
            unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), mine, piece.len()) };
            self.coll_arrive(seq);
            if !self.is_node_leader() {
                self.wait_release(op, seq)?;
                // SAFETY: rule 4: the leader released step `seq` and writes its buffer
                // `parity` again only after we arrive at step seq + 1.
                unsafe { copy_out(self.ctl_of(procs[0]), parity, piece) };
                continue;
            }
            self.wait_arrivals(op, seq)?;
            // SAFETY: rule 4: every proc arrived at `seq` and none is released, so no
            // one writes any buffer `parity` of the node and only we touch ours.
            let acc = unsafe { std::slice::from_raw_parts_mut(mine, piece.len()) };
            for &p in &procs[1..] {
                // SAFETY: as above; `p` wrote `piece.len()` bytes there before arriving.
                let other = unsafe {
                    std::slice::from_raw_parts(self.ctl_of(p).coll_data(parity), piece.len())
                };
                fold(acc, other);
            }
            run_across(&mut across, acc)?;
            piece.copy_from_slice(acc);
            self.coll_release(seq);
        }
        Ok(())
    }

    /// Broadcast of `data` from proc `root` (anywhere in the job) over the node: the
    /// root's bytes when it is on this node (then `across` sends them to the other
    /// leaders), else what `across` (the leaders' broadcast from the root's leader)
    /// brings to this node's leader.
    pub fn node_broadcast(
        &self,
        data: &mut [u8],
        root: usize,
        mut across: Across<'_>,
    ) -> Result<(), RmaError> {
        let op = "node broadcast";
        self.check_proc(op, root)?;
        let procs = self.node_procs();
        let source = if self.domains.same(root) {
            root
        } else {
            procs[0]
        };
        for piece in data.chunks_mut(COLL_BYTES) {
            if procs.len() == 1 {
                run_across(&mut across, piece)?;
                continue;
            }
            let seq = self.next_coll_step();
            let parity = (seq % 2) as usize;
            if self.rank == root {
                // SAFETY: rule 4: our buffer `parity` is ours until we arrive.
                unsafe {
                    let mine = self.ctl_of(root).coll_data(parity);
                    std::ptr::copy_nonoverlapping(piece.as_ptr(), mine, piece.len());
                }
            }
            self.coll_arrive(seq);
            if self.is_node_leader() {
                self.wait_arrivals(op, seq)?;
                // SAFETY: rule 4: every proc arrived and none is released: the source
                // buffer is written by no one but this hook until we release.
                let from = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.ctl_of(source).coll_data(parity),
                        piece.len(),
                    )
                };
                run_across(&mut across, from)?;
                if self.rank != root {
                    piece.copy_from_slice(from);
                }
                self.coll_release(seq);
            } else {
                self.wait_release(op, seq)?;
                if self.rank != root {
                    // SAFETY: rule 4: released, and rewritten only two steps on.
                    unsafe { copy_out(self.ctl_of(source), parity, piece) };
                }
            }
        }
        Ok(())
    }

    /// Whether this proc leads its node.
    fn is_node_leader(&self) -> bool {
        self.node_procs()[0] == self.rank
    }

    /// The next step's number.
    fn next_coll_step(&self) -> u64 {
        let seq = self.coll_seq.get() + 1;
        self.coll_seq.set(seq);
        seq
    }

    /// Step 1's end: our part of step `seq` is written.
    fn coll_arrive(&self, seq: u64) {
        let own = self.ctl_of(self.rank).coll();
        own.arrive.seq.store(seq, Ordering::Release);
    }

    /// Step 2's end: the node may read the result of step `seq`.
    fn coll_release(&self, seq: u64) {
        let own = self.ctl_of(self.rank).coll();
        own.release.seq.store(seq, Ordering::Release);
    }

    /// The leader waits until every proc of the node has arrived at step `seq`.
    fn wait_arrivals(&self, op: &'static str, seq: u64) -> Result<(), RmaError> {
        let procs = self.node_procs();
        // The first proc not seen arrived yet (the one to check on while waiting).
        let next = std::cell::Cell::new(1);
        self.patience
            .wait(
                op,
                &|| format!("arriving at step {seq} of its node's collectives"),
                || {
                    let mut i = next.get();
                    while i < procs.len()
                        && self
                            .ctl_of(procs[i])
                            .coll()
                            .arrive
                            .seq
                            .load(Ordering::Acquire)
                            >= seq
                    {
                        i += 1;
                    }
                    next.set(i);
                    i == procs.len()
                },
                || self.patience.pid_of(procs[next.get()]).unwrap_or(0),
            )
            .map_err(left)
    }

    /// A proc other than the leader waits until the leader released step `seq`.
    fn wait_release(&self, op: &'static str, seq: u64) -> Result<(), RmaError> {
        let leader = self.node_procs()[0];
        let word = &self.ctl_of(leader).coll().release.seq;
        self.patience
            .wait(
                op,
                &|| format!("releasing step {seq} of its node's collectives (it leads the node)"),
                || word.load(Ordering::Acquire) >= seq,
                || self.patience.pid_of(leader).unwrap_or(0),
            )
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

/// Copies `out.len()` bytes of `ctl`'s buffer `parity` into `out`.
///
/// # Safety
/// Rule 4 of `shm/control.rs` must keep the buffer's owner from writing it meanwhile.
unsafe fn copy_out(ctl: &Control, parity: usize, out: &mut [u8]) {
    // SAFETY: the buffer holds COLL_BYTES >= out.len() bytes and, by the caller's
    // promise, nobody writes them during the copy.
    unsafe { std::ptr::copy_nonoverlapping(ctl.coll_data(parity), out.as_mut_ptr(), out.len()) }
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
