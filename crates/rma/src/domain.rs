//! Domains: the procs that share a node, i.e. reach each other's memory directly
//! (ARMCI's `ARMCI_DOMAIN_SMP`).
//!
//! Domains are numbered in order of their lowest proc; procs inside a domain are in
//! rank order. With `NF_RMA_DIRECT=0` every proc is a domain of its own, since no
//! memory is then accessed directly.

/// How this proc reaches another proc's memory (see [`crate::Rma::route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Load / store on its mapped segments (same domain, and ourselves).
    Direct,
    /// Put and get with the ofi transport's native RMA; accumulate, rmw and mutexes
    /// through its service thread.
    Native,
    /// Everything through its service thread.
    Service,
}

/// The partition of the job's procs into domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domains {
    /// Domain of each proc.
    of_proc: Vec<usize>,
    /// Procs of each domain, ascending.
    procs: Vec<Vec<usize>>,
    /// This process's proc.
    me: usize,
}

impl Domains {
    /// Groups procs by key (equal keys share a domain); `me` is this process's proc.
    pub(crate) fn from_keys<K: PartialEq>(keys: &[K], me: usize) -> Domains {
        let mut of_proc = Vec::with_capacity(keys.len());
        let mut procs: Vec<Vec<usize>> = Vec::new();
        for (p, k) in keys.iter().enumerate() {
            let d = (0..p)
                .find(|&q| keys[q] == *k)
                .map(|q| of_proc[q])
                .unwrap_or_else(|| {
                    procs.push(Vec::new());
                    procs.len() - 1
                });
            of_proc.push(d);
            procs[d].push(p);
        }
        Domains { of_proc, procs, me }
    }

    /// Number of domains.
    pub fn count(&self) -> usize {
        self.procs.len()
    }

    /// The domain of `proc` (`None` outside the job).
    pub fn id_of(&self, proc: usize) -> Option<usize> {
        self.of_proc.get(proc).copied()
    }

    /// The procs of domain `id`, ascending (empty outside `0..count()`).
    pub fn procs(&self, id: usize) -> &[usize] {
        self.procs.get(id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// This process's domain.
    pub fn my_id(&self) -> usize {
        self.of_proc[self.me]
    }

    /// Whether `proc` shares this process's domain.
    pub fn same(&self, proc: usize) -> bool {
        self.id_of(proc) == Some(self.my_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_numbered_by_lowest_proc() {
        let d = Domains::from_keys(&["b", "a", "b", "c", "a"], 1);
        assert_eq!(d.count(), 3);
        assert_eq!(d.procs(0), [0, 2]);
        assert_eq!(d.procs(1), [1, 4]);
        assert_eq!(d.procs(2), [3]);
        assert_eq!(d.id_of(4), Some(1));
        assert_eq!(d.id_of(5), None);
        assert_eq!(d.my_id(), 1);
        assert!(d.same(4) && !d.same(0));
        assert!(d.procs(9).is_empty());
    }
}
