//! What the rma layer needs from whoever started the job: ranks, an allgather, a
//! barrier, and which ranks share a host.
//!
//! The layer does not depend on how processes were launched. Rust programs under
//! `nf run` use [`crate::WorldWireup`] (over `nf_core::World`); the C ABI implements
//! these traits over `MPI_COMM_WORLD` and its groups' communicators.
//!
//! Rules every implementation keeps (they are MPI's rules for collectives):
//! 1. Every member of a team calls the team's collectives in the same order.
//! 2. `allgather` returns one entry per member, in team order, each exactly the bytes
//!    that member passed (lengths may differ between members).
//! 3. `barrier` returns on a member only once every member has entered it.

/// Why a wire-up service failed (carries the implementation's own message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WireupError(pub String);

/// A set of procs that run collectives together: the world, or a group of it.
pub trait Team {
    /// World ranks of the members in team order: team rank `i` is `members()[i]`.
    /// Every member sees the same list.
    fn members(&self) -> &[usize];

    /// Every member's bytes, in team order (collective).
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError>;

    /// [`Team::allgather`] where every member passes the same number of bytes, which
    /// a team may do in one step instead of first exchanging the lengths.
    fn allgather_fixed(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        self.allgather(mine)
    }

    /// Returns once every member has called it (collective).
    fn barrier(&self) -> Result<(), WireupError>;
}

/// The world team plus what only the world knows: who we are and where we run.
pub trait Wireup: Team {
    /// This process's world rank; `members()` must be `0..size` in order.
    fn rank(&self) -> usize;

    /// A string equal for exactly the procs that can share memory with us (same host,
    /// same `/dev/shm`). The default is [`nf_sys::host::host_identity`].
    fn host_identity(&self) -> String {
        nf_sys::host::host_identity()
    }

    /// The launcher's job id, if it has one: segment files are then named after it
    /// (`nf-<job>-…`), so the launcher's end-of-job cleanup removes leftovers. Without
    /// one, rank 0 makes one up.
    fn job_id(&self) -> Option<String> {
        None
    }
}

/// A borrowed team is a team (so a program can keep its wire-up and lend it).
impl<T: Team + ?Sized> Team for &T {
    fn members(&self) -> &[usize] {
        (**self).members()
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        (**self).allgather(mine)
    }

    fn allgather_fixed(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        (**self).allgather_fixed(mine)
    }

    fn barrier(&self) -> Result<(), WireupError> {
        (**self).barrier()
    }
}

/// A borrowed wire-up is a wire-up.
impl<T: Wireup + ?Sized> Wireup for &T {
    fn rank(&self) -> usize {
        (**self).rank()
    }

    fn host_identity(&self) -> String {
        (**self).host_identity()
    }

    fn job_id(&self) -> Option<String> {
        (**self).job_id()
    }
}
