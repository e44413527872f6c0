//! Collectives of a team ([`NodeTeam`]): barrier, all-reduce and broadcast among a
//! [`Team`]'s procs, on shared memory within each node, with the same hook as the
//! node collectives for the step among the nodes' leaders.
//!
//! The node collectives (`api/coll.rs`) cannot serve a team holding part of a node:
//! their step numbers stay alike only while every proc of the node takes every step
//! (rule 4 of `shm/control.rs`). So a team gets steps of its own: when it is made,
//! its members allocate one slot each (`TeamSlot`: the control segment's lines and
//! eight 8 KiB buffers, through [`Rma::malloc_team`], which hands out zeroed memory:
//! every slot starts at step 0) and run `api/coll.rs`'s steps among the team's procs
//! of each node, on those slots, with the team's own step numbers.
//!
//! Order, the same result bit for bit on every member: within a node the procs take
//! part in ascending world rank (the first leads the node and folds the others' parts
//! into its own in that order); with several nodes the leaders' step (`across`, e.g.
//! MPI among the leaders in node order) combines the nodes' results. A node holding a
//! single member of the team hands its data to `across` directly.
//!
//! A `NodeTeam` holds no reference to the layer: every call takes the [`Rma`] that
//! made it (so a C library can keep one behind a handle).

use std::mem::size_of;

use crate::api::coll::{Across, CollState, SlotTable, Steps};
use crate::error::RmaError;
use crate::rma::Rma;
use crate::shm::control::TeamSlot;
use crate::wireup::Team;

/// A team's collectives on shared memory (module docs); made and freed collectively
/// over the team.
pub struct NodeTeam {
    /// The team's members, world ranks in team order.
    members: Vec<usize>,
    /// The members on this node, ascending; the first leads.
    procs: Vec<usize>,
    /// Their slots, mapped here, by index in `procs`.
    slots: Vec<*const TeamSlot>,
    /// Our index in `procs`.
    me: usize,
    /// Nodes holding members.
    nodes: usize,
    /// Our slot's address as [`Rma::malloc_team`] returned it (for the free).
    base: u64,
    /// Our step numbers.
    state: CollState,
}

impl NodeTeam {
    /// Makes `team`'s collectives (collective over `team`, through its own
    /// allgather and barrier: one allocation).
    pub fn new(rma: &Rma<'_>, team: &dyn Team) -> Result<NodeTeam, RmaError> {
        let op = "team collectives";
        let members = team.members().to_vec();
        for &p in &members {
            rma.check_proc(op, p)?;
        }
        let bases = rma.malloc_team(team, size_of::<TeamSlot>())?;
        let domains = rma.domains();
        let mut here: Vec<(usize, u64)> = members
            .iter()
            .zip(&bases)
            .filter(|&(&p, _)| domains.same(p))
            .map(|(&p, &b)| (p, b))
            .collect();
        here.sort_unstable();
        let mut nodes: Vec<usize> = members.iter().filter_map(|&p| domains.id_of(p)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let me = here
            .iter()
            .position(|&(p, _)| p == rma.rank())
            .ok_or_else(|| RmaError::Collective {
                op,
                why: format!("proc {} is not a member of team {members:?}", rma.rank()),
            })?;
        let mut slots = Vec::with_capacity(here.len());
        for &(p, b) in &here {
            let Some(ptr) = rma.local_ptr(p, b, size_of::<TeamSlot>())? else {
                return Err(RmaError::Collective {
                    op,
                    why: format!("proc {p}'s collective slot is not mapped on its node"),
                });
            };
            if !ptr.cast::<TeamSlot>().is_aligned() {
                return Err(RmaError::Collective {
                    op,
                    why: format!("proc {p}'s collective slot at {ptr:p} is misaligned"),
                });
            }
            slots.push(ptr.cast::<TeamSlot>().cast_const());
        }
        Ok(NodeTeam {
            base: bases[members.iter().position(|&p| p == rma.rank()).unwrap_or(0)],
            members,
            procs: here.into_iter().map(|(p, _)| p).collect(),
            slots,
            me,
            nodes: nodes.len(),
            state: CollState::default(),
        })
    }

    /// Frees the team's slots (collective over `team`, the one it was made over).
    /// Dropping a `NodeTeam` instead leaves them to the layer's end.
    pub fn free(self, rma: &Rma<'_>, team: &dyn Team) -> Result<(), RmaError> {
        rma.free_team(team, self.base)
    }

    /// The team's members, world ranks in team order.
    pub fn members(&self) -> &[usize] {
        &self.members
    }

    /// The members on this node, ascending; the first leads the node's steps and
    /// takes part in `across`.
    pub fn node_members(&self) -> &[usize] {
        &self.procs
    }

    /// Nodes holding members (with one, no call needs `across`).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The steps of this team on this node.
    fn steps<'s, 'w>(&'s self, rma: &'s Rma<'w>) -> Steps<'s, 'w, TeamSlots<'s>> {
        Steps {
            rma,
            procs: &self.procs,
            slots: TeamSlots(&self.slots),
            me: self.me,
            state: &self.state,
            nodes: self.nodes,
            whose: "its team's",
        }
    }

    /// The team's barrier, `across` (the leaders' barrier) between the node's
    /// arrivals and its release. Orders memory as [`Rma::node_barrier`] does.
    pub fn barrier(&self, rma: &Rma<'_>, across: Across<'_>) -> Result<(), RmaError> {
        self.steps(rma).barrier("team barrier", across)
    }

    /// Element-wise reduction of `data` (elements of `elem` bytes) over the team:
    /// within a node `fold(acc, other)` in ascending proc order, then `across` (the
    /// leaders' all-reduce); every member gets the result in `data`.
    pub fn allreduce(
        &self,
        rma: &Rma<'_>,
        data: &mut [u8],
        elem: usize,
        fold: &mut dyn FnMut(&mut [u8], &[u8]),
        across: Across<'_>,
    ) -> Result<(), RmaError> {
        self.steps(rma)
            .allreduce("team allreduce", data, elem, fold, across)
    }

    /// Broadcast of `data` from member `root` (a world rank): its bytes on its node,
    /// what `across` (the leaders' broadcast from the root's leader) brings elsewhere.
    pub fn broadcast(
        &self,
        rma: &Rma<'_>,
        data: &mut [u8],
        root: usize,
        across: Across<'_>,
    ) -> Result<(), RmaError> {
        let op = "team broadcast";
        if !self.members.contains(&root) {
            return Err(RmaError::Collective {
                op,
                why: format!("root {root} is not a member of team {:?}", self.members),
            });
        }
        let here = self.procs.iter().position(|&p| p == root);
        self.steps(rma).broadcast(op, data, here, across)
    }
}

/// A team's slots on this node, mapped while the team lives.
struct TeamSlots<'s>(&'s [*const TeamSlot]);

impl SlotTable for TeamSlots<'_> {
    type Slot = TeamSlot;

    fn slot(&self, i: usize) -> &TeamSlot {
        // SAFETY: the slots stay mapped while their `NodeTeam` lives (its allocation,
        // freed only by `NodeTeam::free`, which takes the team), and these borrow it;
        // every field is an atomic or bytes in an `UnsafeCell`, valid for any bytes.
        unsafe { &*self.0[i] }
    }
}
