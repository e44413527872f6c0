//! How many CPUs this process may actually run on: what a waiting policy must count,
//! since a rank confined by `taskset`, a Slurm or container cpuset or a cgroup CPU quota
//! shares fewer CPUs than the host has online.
//!
//! The count is the smallest of:
//! 1. the CPUs online;
//! 2. this process's affinity mask (`taskset`, cpusets: the kernel narrows the mask to
//!    the cpuset's CPUs);
//! 3. the cgroup v2 CPU quota (`cpu.max`, quota / period rounded up) of this process's
//!    cgroup and every cgroup above it.

use std::path::Path;

/// The CPUs this process may run on (at least 1).
pub fn usable() -> usize {
    match affinity_mask() {
        Some(mask) => usable_by(&mask),
        None => usable_by(&[u64::MAX; CPU_WORDS]),
    }
}

/// The CPUs processes of this host whose affinity masks together are `mask` (as
/// [`affinity_mask`] gives them, or-ed) may run on, under this process's quota (at
/// least 1): ranks pinned one per core (`mpirun --bind-to core`) each see one CPU,
/// but together they have a CPU each.
pub fn usable_by(mask: &[u64]) -> usize {
    let in_mask = mask.iter().map(|w| w.count_ones() as usize).sum::<usize>();
    let mut n = online().min(in_mask);
    if let Some(quota) = crate::cgroup::own_dir().and_then(|d| quota_above(&d)) {
        n = n.min(quota);
    }
    n.max(1)
}

/// Words of an affinity mask ([`affinity_mask`]): `CPU_SETSIZE` bits.
pub const CPU_WORDS: usize = libc::CPU_SETSIZE as usize / 64;

/// Online CPUs of this host.
pub fn online() -> usize {
    // SAFETY: sysconf takes an integer name and has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}

/// This process's affinity mask: CPU `c` is bit `c % 64` of word `c / 64`
/// ([`CPU_WORDS`] words); `None` if the kernel will not say.
pub fn affinity_mask() -> Option<Vec<u64>> {
    // SAFETY: all zeroes is a valid empty cpu_set_t; sched_getaffinity writes at most
    // the size passed into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return None;
    }
    let mut words = vec![0u64; CPU_WORDS];
    for c in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: CPU_ISSET only reads the set, for a CPU below CPU_SETSIZE.
        if unsafe { libc::CPU_ISSET(c, &set) } {
            words[c / 64] |= 1 << (c % 64);
        }
    }
    Some(words)
}

/// Sets this thread's affinity mask (words as [`affinity_mask`] gives them; CPUs past
/// `CPU_SETSIZE` are ignored). Threads and processes started after it inherit it.
pub fn set_affinity_mask(mask: &[u64]) -> std::io::Result<()> {
    // SAFETY: all zeroes is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| mask.get(c / 64).is_some_and(|w| w >> (c % 64) & 1 == 1))
    {
        // SAFETY: CPU_SET writes inside the set, for a CPU below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; the call only reads it.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Confines this thread (and what it starts later) to the first CPU of its affinity
/// mask, as `taskset -c N` would, and gives back the mask it had: what a test of
/// confined ranks needs.
pub fn confine_to_first_cpu() -> std::io::Result<Vec<u64>> {
    let old = affinity_mask().ok_or_else(std::io::Error::last_os_error)?;
    let first = old
        .iter()
        .enumerate()
        .find(|(_, w)| **w != 0)
        .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
        .ok_or_else(|| std::io::Error::other("the affinity mask is empty"))?;
    let mut one = vec![0u64; CPU_WORDS];
    one[first / 64] = 1 << (first % 64);
    set_affinity_mask(&one)?;
    Ok(old)
}

/// The tightest `cpu.max` quota from `dir` up to the cgroup2 mount, in whole CPUs.
fn quota_above(dir: &Path) -> Option<usize> {
    dir.ancestors()
        .map_while(|d| std::fs::read_to_string(d.join("cpu.max")).ok())
        .filter_map(|max| cpus_of_max(&max))
        .min()
}

/// Whole CPUs a `cpu.max` line (`QUOTA PERIOD` or `max PERIOD`) allows; `None`: no limit.
fn cpus_of_max(line: &str) -> Option<usize> {
    let mut words = line.split_whitespace();
    let quota: u64 = words.next()?.parse().ok()?;
    let period: u64 = words.next()?.parse().ok().filter(|&p| p > 0)?;
    usize::try_from(quota.div_ceil(period).max(1)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_is_rounded_up_to_whole_cpus_and_max_is_no_limit() {
        assert_eq!(cpus_of_max("max 100000\n"), None);
        assert_eq!(cpus_of_max("200000 100000\n"), Some(2));
        assert_eq!(cpus_of_max("50000 100000\n"), Some(1));
        assert_eq!(cpus_of_max("150000 100000"), Some(2));
        assert_eq!(cpus_of_max("garbage"), None);
    }

    #[test]
    fn the_affinity_mask_bounds_the_count() {
        let before = usable();
        assert!(before >= 1 && before <= online());
        // Confine this thread to one CPU: the count follows the mask.
        let old = confine_to_first_cpu().unwrap();
        let confined = usable();
        let mask = affinity_mask().unwrap();
        set_affinity_mask(&old).unwrap();
        assert_eq!(confined, 1);
        assert_eq!(mask.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
        assert_eq!(affinity_mask().unwrap(), old, "the old mask is back");
        // Two procs each pinned to one CPU have two together (where there are two).
        let mut both = mask.clone();
        let rest: Vec<u64> = old.iter().zip(&mask).map(|(o, m)| o & !m).collect();
        if let Some(i) = rest.iter().position(|w| *w != 0) {
            both[i] |= 1 << rest[i].trailing_zeros();
            assert_eq!(usable_by(&mask), 1);
            assert_eq!(usable_by(&both), 2.min(usable()));
        }
    }
}
