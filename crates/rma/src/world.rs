//! [`Wireup`] over `nf_core::World`, for Rust programs started by `nf run`.
//!
//! Collectives of the world and of any subset of it run as active messages on one
//! handler, the runtime's reserved [`Reserved::RmaTeams`] (so every id of the users'
//! range stays theirs). A message carries the team's key (a hash of its member list) and the
//! team's collective sequence number; the handler files it in a mailbox, and the
//! waiting member takes what it needs. Teams with the same members share one sequence,
//! so they are one team as far as ordering goes (rule 1 of [`crate::wireup`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use nf_core::{Reserved, World};

use crate::error::RmaError;
use crate::wireup::{Team, Wireup, WireupError};

/// Header of a team message: team key (8 bytes), sequence (4 bytes), little-endian.
const HEADER_LEN: usize = 12;

/// Team messages that arrived, by (team key, sequence, world rank of the sender).
type Mailbox = HashMap<(u64, u32, usize), Vec<u8>>;

/// The world of an `nf run` job as the rma layer's wire-up.
pub struct WorldWireup<'w> {
    world: &'w World,
    members: Vec<usize>,
    mailbox: Rc<RefCell<Mailbox>>,
    /// Next collective sequence number, per team key.
    seq: RefCell<HashMap<u64, u32>>,
}

impl<'w> WorldWireup<'w> {
    /// Registers the team handler on `world` (collective: every rank calls it, once).
    pub fn new(world: &'w World) -> Result<Self, RmaError> {
        let mailbox: Rc<RefCell<Mailbox>> = Rc::default();
        let mb = Rc::clone(&mailbox);
        world
            .register_reserved(Reserved::RmaTeams, move |_, am| {
                let Some(h) = am.header.get(..HEADER_LEN) else {
                    tracing::error!(src = am.src, "rma team message with a short header dropped");
                    return;
                };
                let key = u64::from_le_bytes(h[..8].try_into().expect("8 bytes"));
                let seq = u32::from_le_bytes(h[8..].try_into().expect("4 bytes"));
                mb.borrow_mut()
                    .insert((key, seq, am.src), am.payload.to_vec());
            })
            .map_err(|e| WireupError(format!("registering the rma team handler: {e}")))?;
        // Nobody may send to the handler before every rank has registered it.
        world
            .barrier()
            .map_err(|e| WireupError(format!("barrier after registering: {e}")))?;
        Ok(WorldWireup {
            world,
            members: (0..world.size()).collect(),
            mailbox,
            seq: RefCell::default(),
        })
    }

    /// The world this wire-up runs on.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// A team of the given world ranks (in team order); only members may call it,
    /// and each member must pass the same list.
    pub fn team(&self, members: Vec<usize>) -> Result<WorldTeam<'_, 'w>, RmaError> {
        let size = self.world.size();
        if let Some(&bad) = members.iter().find(|&&m| m >= size) {
            return Err(RmaError::NoSuchProc {
                op: "team",
                proc: bad,
                size,
            });
        }
        let mut sorted = members.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != members.len() {
            return Err(RmaError::Collective {
                op: "team",
                why: format!("member list {members:?} names a proc twice"),
            });
        }
        if !members.contains(&self.world.rank()) {
            return Err(RmaError::Collective {
                op: "team",
                why: format!(
                    "rank {} is not in member list {members:?}; only members make a team",
                    self.world.rank()
                ),
            });
        }
        Ok(WorldTeam {
            wire: self,
            members,
        })
    }

    fn allgather_in(&self, members: &[usize], mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        let key = team_key(members);
        let seq = {
            let mut s = self.seq.borrow_mut();
            let e = s.entry(key).or_insert(0);
            let seq = *e;
            *e = e.wrapping_add(1);
            seq
        };
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&key.to_le_bytes());
        header[8..].copy_from_slice(&seq.to_le_bytes());
        let me = self.world.rank();
        for &m in members.iter().filter(|&&m| m != me) {
            self.world
                .send_reserved(m, Reserved::RmaTeams, &header, mine)
                .map_err(|e| WireupError(format!("team allgather send to rank {m}: {e}")))?;
        }
        let arrived = |mb: &Mailbox| {
            members
                .iter()
                .all(|&m| m == me || mb.contains_key(&(key, seq, m)))
        };
        self.world
            .wait_until(|| arrived(&self.mailbox.borrow()))
            .map_err(|e| WireupError(format!("team allgather over ranks {members:?}: {e}")))?;
        let mut mb = self.mailbox.borrow_mut();
        Ok(members
            .iter()
            .map(|&m| {
                if m == me {
                    mine.to_vec()
                } else {
                    mb.remove(&(key, seq, m)).expect("arrived")
                }
            })
            .collect())
    }
}

/// A hash of the member list: equal lists, equal keys on every rank.
fn team_key(members: &[usize]) -> u64 {
    let bytes: Vec<u8> = members
        .iter()
        .flat_map(|&m| (m as u64).to_le_bytes())
        .collect();
    nf_sys::hash::fnv1a(&bytes)
}

impl Team for WorldWireup<'_> {
    fn members(&self) -> &[usize] {
        &self.members
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        self.allgather_in(&self.members, mine)
    }

    fn barrier(&self) -> Result<(), WireupError> {
        self.world
            .barrier()
            .map_err(|e| WireupError(format!("world barrier: {e}")))
    }
}

impl Wireup for WorldWireup<'_> {
    fn rank(&self) -> usize {
        self.world.rank()
    }

    /// The core's identity (`NF_HOST`, else host name + boot id), so rma shares memory
    /// with exactly the ranks the core reaches over shm.
    fn host_identity(&self) -> String {
        nf_sys::host::host_identity()
    }

    fn job_id(&self) -> Option<String> {
        Some(self.world.job_id().to_owned())
    }
}

/// A subset of an `nf run` world (see [`WorldWireup::team`]).
pub struct WorldTeam<'a, 'w> {
    wire: &'a WorldWireup<'w>,
    members: Vec<usize>,
}

impl Team for WorldTeam<'_, '_> {
    fn members(&self) -> &[usize] {
        &self.members
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        self.wire.allgather_in(&self.members, mine)
    }

    fn barrier(&self) -> Result<(), WireupError> {
        self.wire.allgather_in(&self.members, &[]).map(|_| ())
    }
}
