//! Symmetric static data: the executable's global and static variables (its data
//! and bss) are remotely accessible, as OpenSHMEM requires.
//!
//! At `shmem_init` (after the heap; [`adopt`]):
//! 1. Find the main program's writable `PT_LOAD` segments (`dl_iterate_phdr`, whose
//!    first object is the main program), each widened to whole pages
//!    ([`writable_ranges`]). A page-aligned range never reaches the brk heap, which
//!    starts on a page of its own after bss.
//! 2. Leave out the pages the dynamic linker made read-only after relocation
//!    (`PT_GNU_RELRO`: it protects from the page holding its start to the page
//!    holding its end, exclusive, which is what is left out): they hold no variables
//!    and stay read-only.
//! 3. Check that every PE has ranges of the same sizes: a job of different
//!    executables cannot have symmetric static data, and is ended naming the PE.
//! 4. Adopt each range as a collective rma segment in place (`Rma::adopt`): its bytes
//!    move onto a shared-memory file mapped over the same addresses, so the direct
//!    path, ofi native RMA and the service thread all reach the program's variables.
//!    Each PE's range start is its base: PIE executables load at different addresses
//!    on different PEs, so symmetric address `a` for PE `p` is
//!    `base[p] + (a - base[me])`, never `a` itself ([`Region::offset`]).
//!
//! At `shmem_finalize` each range is freed, which puts it back on private memory
//! with its bytes (the program may go on reading its variables). The segment files
//! are unlinked during `shmem_init` like every rma segment, so a killed PE leaves
//! nothing in `/dev/shm`. Between init and finalize the data is `MAP_SHARED`: a child
//! `fork`ed then shares the parent's variables instead of copying them (and `exec`
//! is unaffected).

use std::ffi::{c_int, c_void};

use nf_rma::Rma;

use crate::error::fatal;

/// Writable ranges a program may have (one in practice; the check's message names
/// more as an error).
const MAX_RANGES: usize = 4;

/// One adopted range of the executable, on every PE.
pub struct Region {
    /// Start in this PE's space.
    pub start: usize,
    /// Length (the same on every PE).
    pub len: usize,
    /// Every PE's start, in that PE's space.
    pub bases: Vec<u64>,
    /// Where every same-host PE's range is mapped here (`None`: reached by the rma
    /// routes).
    pub mapped: Vec<Option<usize>>,
}

impl Region {
    /// The offset of `len` bytes at `addr` in this range, if they lie in it.
    pub fn offset(&self, addr: usize, len: usize) -> Option<usize> {
        let off = addr.checked_sub(self.start)?;
        (off.checked_add(len)? <= self.len).then_some(off)
    }
}

/// Rules 1 and 2: the page-aligned writable ranges `(start, end)` of an object
/// loaded at `load` with program headers `phdrs`.
pub fn writable_ranges(
    load: usize,
    phdrs: &[libc::Elf64_Phdr],
    page: usize,
) -> Vec<(usize, usize)> {
    let down = |a: usize| a & !(page - 1);
    let up = |a: usize| down(a + page - 1);
    let relro = phdrs
        .iter()
        .find(|p| p.p_type == libc::PT_GNU_RELRO)
        .map(|p| {
            let start = load + p.p_vaddr as usize;
            (down(start), down(start + p.p_memsz as usize))
        });
    phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_W != 0 && p.p_memsz > 0)
        .filter_map(|p| {
            let at = load + p.p_vaddr as usize;
            let (mut start, end) = (down(at), up(at + p.p_memsz as usize));
            if let Some((rs, re)) = relro {
                if rs <= start && re > start {
                    start = re;
                }
            }
            (start < end).then_some((start, end))
        })
        .collect()
}

/// The main program's ranges (rules 1 and 2).
fn main_program_ranges() -> Vec<(usize, usize)> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        out: *mut c_void,
    ) -> c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid `info` whose `dlpi_phdr` holds
        // `dlpi_phnum` headers; `out` is the vector `main_program_ranges` passed.
        unsafe {
            let info = &*info;
            let phdrs = if info.dlpi_phdr.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum))
            };
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            *out.cast::<Vec<(usize, usize)>>() =
                writable_ranges(info.dlpi_addr as usize, phdrs, page);
        }
        1 // the first object is the main program: stop there
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    // SAFETY: `first` matches the callback type and writes only `out`, which lives
    // across the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut out).cast()) };
    out
}

/// Rule 3: ends the process naming a PE whose ranges differ from ours.
fn check_sizes(rma: &Rma<'_>, call: &str, sizes: &[usize]) {
    if sizes.len() > MAX_RANGES {
        fatal(
            call,
            format!(
                "the executable has {} writable segments; at most {MAX_RANGES} can be \
                 symmetric static data",
                sizes.len()
            ),
        );
    }
    let mut mine = [0u64; MAX_RANGES + 1];
    mine[0] = sizes.len() as u64;
    for (w, &s) in mine[1..].iter_mut().zip(sizes) {
        *w = s as u64;
    }
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let all = rma
        .wireup()
        .allgather_fixed(&bytes)
        .unwrap_or_else(|e| fatal(call, e));
    if let Some(pe) = all.iter().position(|theirs| *theirs != bytes) {
        let show = |b: &[u8]| -> Vec<u64> {
            let w: Vec<u64> = b
                .chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            w[1..=(w[0] as usize).min(MAX_RANGES)].to_vec()
        };
        fatal(
            call,
            format!(
                "PE {pe}'s executable has static data (data + bss) of {:?} B, this PE's \
                 {:?} B: every PE must run the same executable for global and static \
                 variables to be symmetric",
                show(&all[pe]),
                show(&bytes)
            ),
        );
    }
}

/// Steps 1–4 (see the module docs); ends the process naming `shmem_init` on failure.
pub fn adopt(rma: &Rma<'_>) -> Vec<Region> {
    let call = "shmem_init";
    let ranges = main_program_ranges();
    let sizes: Vec<usize> = ranges.iter().map(|(s, e)| e - s).collect();
    check_sizes(rma, call, &sizes);
    ranges
        .into_iter()
        .map(|(start, end)| {
            let len = end - start;
            // SAFETY: the range is the main program's writable segment: private
            // memory the process never unmaps; no thread of the program runs OpenSHMEM
            // calls yet, and the rma layer's threads touch only its segments.
            let bases = unsafe { rma.adopt(start as *mut u8, len) }.unwrap_or_else(|e| {
                fatal(
                    call,
                    format!(
                        "cannot make the executable's static data ({start:#x} + {len} B) \
                         symmetric: {e}"
                    ),
                )
            });
            let mapped = (0..rma.size())
                .map(|p| {
                    rma.local_ptr(p, bases[p], len)
                        .ok()
                        .flatten()
                        .map(|ptr| ptr as usize)
                })
                .collect();
            Region {
                start,
                len,
                bases,
                mapped,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phdr(p_type: u32, p_flags: u32, p_vaddr: u64, p_memsz: u64) -> libc::Elf64_Phdr {
        libc::Elf64_Phdr {
            p_type,
            p_flags,
            p_offset: 0,
            p_vaddr,
            p_paddr: p_vaddr,
            p_filesz: p_memsz,
            p_memsz,
            p_align: 0x1000,
        }
    }

    #[test]
    fn writable_segments_are_whole_pages_without_relro() {
        let rw = libc::PF_R | libc::PF_W;
        let phdrs = [
            phdr(libc::PT_LOAD, libc::PF_R | libc::PF_X, 0, 0x1800),
            // .data.rel.ro + .got from 0x3de8, RELRO to 0x4000 (glibc protects
            // 0x3000 .. 0x4000), then .data and .bss to 0x4020 + 0x1010.
            phdr(libc::PT_LOAD, rw, 0x3de8, 0x1248),
            phdr(libc::PT_GNU_RELRO, libc::PF_R, 0x3de8, 0x218),
        ];
        let base = 0x5555_0000_0000;
        assert_eq!(
            writable_ranges(base, &phdrs, 0x1000),
            vec![(base + 0x4000, base + 0x6000)]
        );
        // Without RELRO the whole first page is in; a non-writable load never is.
        assert_eq!(
            writable_ranges(0, &phdrs[..2], 0x1000),
            vec![(0x3000, 0x6000)]
        );
        // RELRO covering a whole segment leaves nothing of it.
        let all_ro = [
            phdr(libc::PT_LOAD, rw, 0x3000, 0x1000),
            phdr(libc::PT_GNU_RELRO, libc::PF_R, 0x3000, 0x1000),
        ];
        assert!(writable_ranges(0, &all_ro, 0x1000).is_empty());
    }

    #[test]
    fn this_test_programs_own_data_is_found() {
        static mut PROBE: u64 = 1;
        let at = (&raw const PROBE) as usize;
        let ranges = main_program_ranges();
        assert!(
            ranges.iter().any(|&(s, e)| s <= at && at + 8 <= e),
            "{at:#x} not in {ranges:x?}"
        );
    }
}
