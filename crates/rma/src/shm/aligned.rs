//! A segment file of our own mapped at a multiple of its size rounded up to a power of
//! two ([`alignment`], at most 1 GiB), not wherever the kernel puts it (only page
//! aligned): an allocator that carves a segment by offsets (libshmem's symmetric heap,
//! the same offsets on every PE) then gives addresses aligned as asked, up to the
//! segment's size, on every PE at once.
//!
//! Rules:
//! 1. Address space of `len + alignment` is reserved (`PROT_NONE`, no memory behind
//!    it), the file is mapped over its first aligned `len` bytes (`MAP_FIXED`, inside
//!    the reservation only), and the slack on both sides is given back.
//! 2. The mapping is ours until dropped, which unmaps exactly it.
//! 3. Peers map our file wherever the kernel puts it: only the owner's addresses are
//!    what its program sees.

use std::fs::File;
use std::os::fd::AsRawFd;

/// The largest alignment a segment's mapping gets: larger ones would only reserve
/// more address space for allocations nobody aligns that far.
const MAX_ALIGN: usize = 1 << 30;

/// The alignment of the mapping of a `len`-byte segment (a power of two).
pub(crate) fn alignment(len: usize) -> usize {
    let page = super::adopt::page_size();
    len.checked_next_power_of_two()
        .unwrap_or(MAX_ALIGN)
        .clamp(page, MAX_ALIGN)
}

/// A shared mapping of a whole segment file at an [`alignment`]-aligned address.
pub(crate) struct Aligned {
    /// First byte; kept as a number, the mapping is ours (rule 2).
    addr: usize,
    len: usize,
}

impl Aligned {
    /// Maps the `len` bytes of `file` read-write and shared at an address aligned to
    /// [`alignment`]`(len)` (rule 1).
    pub(crate) fn map(file: &File, len: usize) -> std::io::Result<Aligned> {
        let align = alignment(len);
        let span = len
            .checked_add(align)
            .ok_or_else(|| std::io::Error::other("the segment and its alignment overflow"))?;
        // SAFETY: a new anonymous reservation; it replaces nothing of ours.
        let reserved = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if reserved == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = reserved as usize;
        let addr = base.next_multiple_of(align);
        // SAFETY: `addr .. addr + len` lies inside the reservation just made (`addr` is
        // at most `align` past its start), so MAP_FIXED replaces only that.
        let got = unsafe {
            libc::mmap(
                addr as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                file.as_raw_fd(),
                0,
            )
        };
        let failed = (got == libc::MAP_FAILED).then(std::io::Error::last_os_error);
        let end = addr + len.next_multiple_of(super::adopt::page_size());
        let slack: [(usize, usize); 2] = match failed {
            Some(_) => [(base, span), (0, 0)],
            None => [(base, addr - base), (end, base + span - end)],
        };
        for (at, n) in slack.into_iter().filter(|&(_, n)| n > 0) {
            // SAFETY: each range is a part of our reservation that holds no mapping
            // of the file (rule 1), page-aligned at both ends.
            unsafe { libc::munmap(at as *mut libc::c_void, n) };
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(Aligned { addr, len }),
        }
    }

    /// First byte of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.addr as *mut u8
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: rule 2: exactly the mapping `map` made, which nobody else unmaps.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_mapped_at_a_multiple_of_its_rounded_size_and_shares_its_file() {
        let page = crate::shm::adopt::page_size();
        assert_eq!(alignment(1), page);
        assert_eq!(alignment(3 << 20), 4 << 20);
        assert_eq!(alignment(usize::MAX), MAX_ALIGN);
        let dir = tempfile::tempdir().unwrap();
        for len in [page, 3 << 20, (8 << 20) + 100] {
            let path = dir.path().join(format!("seg{len}"));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap();
            file.set_len(len as u64).unwrap();
            let m = Aligned::map(&file, len).unwrap();
            assert_eq!(
                m.ptr() as usize % alignment(len),
                0,
                "{len} B at {:p}",
                m.ptr()
            );
            // SAFETY: the mapping is `len` bytes, read-write.
            unsafe { m.ptr().add(len - 1).write(7) };
            let mut last = [0u8];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut last, len as u64 - 1).unwrap();
            assert_eq!(last, [7], "the mapping is the file's, shared");
        }
    }
}
