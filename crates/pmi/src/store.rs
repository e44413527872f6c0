//! The job's key-value space and fence counter, without any I/O.
//!
//! Rules:
//! 1. A rank joins once (`hello`) and leaves once: finalized, or lost (connection gone).
//! 2. Fence `e` is open while `completed + 1 == e`; each rank arrives at it once and it
//!    completes when all `size` ranks have arrived. A rank may only arrive at the open fence.
//! 3. A fence that a departed rank has not reached can never complete: waiters are told so.
//! 4. Puts go straight into the map, so any put made before a rank's fence is visible
//!    after that fence completes.
//! 5. The map holds at most [`MAX_STORE_BYTES`] of keys and values.

use std::collections::HashMap;

/// Most bytes of keys and values the store keeps for one job.
pub(crate) const MAX_STORE_BYTES: usize = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    Absent,
    Joined,
    Finalized,
    Lost,
}

/// Where a fence stands for a waiting rank.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FenceState {
    /// All ranks arrived.
    Done,
    /// Some ranks have not arrived yet.
    Waiting,
    /// It can never complete; the message says why.
    Broken(String),
}

/// Key-value space, membership and fence progress of one job.
#[derive(Debug)]
pub(crate) struct Store {
    size: usize,
    kv: HashMap<String, String>,
    bytes: usize,
    completed: u64,
    arrived: Vec<bool>,
    ranks: Vec<Presence>,
}

impl Store {
    /// An empty store for a job of `size` ranks.
    pub(crate) fn new(size: usize) -> Store {
        Store {
            size,
            kv: HashMap::new(),
            bytes: 0,
            completed: 0,
            arrived: vec![false; size],
            ranks: vec![Presence::Absent; size],
        }
    }

    /// Registers `rank` as connected.
    pub(crate) fn join(&mut self, rank: usize) -> Result<(), String> {
        match self.ranks.get(rank) {
            None => Err(format!(
                "rank {rank} is out of range for a job of {} ranks",
                self.size
            )),
            Some(Presence::Absent) => {
                self.ranks[rank] = Presence::Joined;
                Ok(())
            }
            Some(_) => Err(format!(
                "rank {rank} has already connected once; each rank connects exactly once"
            )),
        }
    }

    /// Records that `rank` is gone, cleanly (`finalized`) or not.
    pub(crate) fn leave(&mut self, rank: usize, finalized: bool) {
        if let Some(p) = self.ranks.get_mut(rank) {
            *p = if finalized {
                Presence::Finalized
            } else {
                Presence::Lost
            };
        }
    }

    /// Stores a value, replacing any earlier one under the same key.
    pub(crate) fn put(&mut self, key: String, value: String) -> Result<(), String> {
        let old = self.kv.get(&key).map_or(0, |v| key.len() + v.len());
        let new = key.len() + value.len();
        let total = self.bytes - old + new;
        if total > MAX_STORE_BYTES {
            return Err(format!(
                "the job's key-value space is full ({} of {MAX_STORE_BYTES} bytes used); put fewer or smaller values",
                self.bytes
            ));
        }
        self.bytes = total;
        self.kv.insert(key, value);
        Ok(())
    }

    /// The value under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(String::as_str)
    }

    /// Records that `rank` reached fence `epoch`; arriving twice at the open fence is allowed.
    pub(crate) fn arrive(&mut self, rank: usize, epoch: u64) -> Result<FenceState, String> {
        let open = self.completed + 1;
        if epoch != open {
            return Err(format!(
                "rank {rank} asked for fence {epoch} but the job is at fence {open}; every rank must call fence the same number of times"
            ));
        }
        if !self.arrived[rank] {
            self.arrived[rank] = true;
            if self.arrived.iter().all(|&a| a) {
                self.completed = epoch;
                self.arrived.fill(false);
            }
        }
        Ok(self.fence_state(epoch))
    }

    /// The ranks that reached the open fence and wait for the others, in order.
    pub(crate) fn waiting(&self) -> Vec<usize> {
        (0..self.arrived.len())
            .filter(|&r| self.arrived[r])
            .collect()
    }

    /// Where fence `epoch` stands.
    pub(crate) fn fence_state(&self, epoch: u64) -> FenceState {
        if self.completed >= epoch {
            return FenceState::Done;
        }
        let gone = (0..self.size).find(|&r| {
            !self.arrived[r] && matches!(self.ranks[r], Presence::Finalized | Presence::Lost)
        });
        match gone {
            Some(r) => {
                let how = if self.ranks[r] == Presence::Finalized {
                    "finalized"
                } else {
                    "disconnected"
                };
                FenceState::Broken(format!(
                    "fence {epoch} can never complete: rank {r} {how} without reaching it"
                ))
            }
            None => FenceState::Waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_completes_when_all_arrive_and_repeats() {
        let mut s = Store::new(3);
        for r in 0..3 {
            s.join(r).unwrap();
        }
        for epoch in 1..=3 {
            assert_eq!(s.arrive(0, epoch).unwrap(), FenceState::Waiting);
            assert_eq!(s.arrive(0, epoch).unwrap(), FenceState::Waiting);
            assert_eq!(s.arrive(2, epoch).unwrap(), FenceState::Waiting);
            assert_eq!(s.waiting(), [0, 2]);
            assert_eq!(s.arrive(1, epoch).unwrap(), FenceState::Done);
            assert!(s.waiting().is_empty(), "a completed fence has no waiters");
            assert_eq!(s.fence_state(epoch), FenceState::Done);
        }
        assert!(s.arrive(0, 7).is_err());
    }

    #[test]
    fn departed_rank_breaks_the_open_fence() {
        let mut s = Store::new(2);
        s.join(0).unwrap();
        s.join(1).unwrap();
        assert_eq!(s.arrive(0, 1).unwrap(), FenceState::Waiting);
        s.leave(1, false);
        assert!(
            matches!(s.fence_state(1), FenceState::Broken(m) if m.contains("rank 1 disconnected"))
        );
    }

    #[test]
    fn join_rejects_duplicates_and_out_of_range() {
        let mut s = Store::new(2);
        s.join(1).unwrap();
        assert!(s.join(1).is_err());
        assert!(s.join(2).is_err());
    }

    #[test]
    fn put_overwrites_and_accounts_bytes() {
        let mut s = Store::new(1);
        s.put("k".into(), "aaaa".into()).unwrap();
        s.put("k".into(), "b".into()).unwrap();
        assert_eq!(s.get("k"), Some("b"));
        assert_eq!(s.bytes, 2);
        assert_eq!(s.get("nope"), None);
    }
}
