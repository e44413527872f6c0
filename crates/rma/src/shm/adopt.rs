//! An address range of this process that becomes a segment in place ([`Adopted`]):
//! the memory behind a fixed range (an executable's data and bss, for libshmem's
//! symmetric static data) is swapped for a shared segment file holding the same
//! bytes, and swapped back for private memory when the segment goes.
//!
//! Rules:
//! 1. The range is page-aligned, a private writable mapping of this process, and
//!    stays this process's for as long as the process lives (the program never
//!    unmaps it): the addresses never change, only what backs them.
//! 2. Adopting copies the range into the new file, then maps the file over the same
//!    addresses (`MAP_FIXED | MAP_SHARED`, read-write). A write to the range by
//!    another thread between the copy and the mapping would be lost: the caller
//!    adopts while nothing else writes there (libshmem: inside `shmem_init`; the rma
//!    layer's own threads never touch memory that is not a segment yet).
//! 3. Releasing copies the range into fresh private anonymous memory and moves that
//!    over the same addresses with one `mremap(MREMAP_FIXED)`, which replaces the
//!    shared mapping atomically: the bytes stay, the file's pages go with the last
//!    mapping, and a later `fork` gets copy-on-write memory again.
//! 4. While adopted, the range is `MAP_SHARED`: a child `fork`ed then shares it with
//!    the parent instead of getting a copy (the caller documents this).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The page size: an adopted range starts and ends on a page boundary.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// A range of this process backed by a shared segment file since [`adopt`]; put back
/// on private memory when dropped (rule 3).
pub(crate) struct Adopted {
    /// First byte (page-aligned); kept as a number, the mapping is the process's.
    addr: usize,
    len: usize,
}

impl Adopted {
    /// First byte of the range.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.addr as *mut u8
    }
}

/// Rule 2: copies `len` bytes at `addr` into `file` (sized to `len` already) and maps
/// the file over them.
///
/// # Safety
/// Rule 1 holds for `addr .. addr + len`, and nothing writes there during the call.
pub(crate) unsafe fn adopt(file: &File, addr: *mut u8, len: usize) -> std::io::Result<Adopted> {
    // SAFETY: rule 1: the range is mapped and readable for `len` bytes.
    let now = unsafe { std::slice::from_raw_parts(addr.cast_const(), len) };
    file.write_all_at(now, 0)?;
    // SAFETY: MAP_FIXED replaces only `addr .. addr + len`, which rule 1 makes ours to
    // replace; the file holds the same bytes, so the program sees no change.
    let got = unsafe {
        libc::mmap(
            addr.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            file.as_raw_fd(),
            0,
        )
    };
    if got == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Adopted {
        addr: addr as usize,
        len,
    })
}

/// Rule 3: the range's bytes, moved onto private anonymous memory at the same
/// addresses.
fn restore(addr: usize, len: usize) -> std::io::Result<()> {
    // SAFETY: a fresh anonymous mapping anywhere; nothing else is affected.
    let tmp = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if tmp == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both ranges are `len` bytes, mapped, and distinct (tmp is new).
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, tmp.cast::<u8>(), len) };
    // SAFETY: moves our fresh mapping over the adopted range, which is ours (rule 1);
    // the kernel unmaps what was there in the same call.
    let moved = unsafe {
        libc::mremap(
            tmp,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            addr as *mut libc::c_void,
        )
    };
    if moved == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        // SAFETY: `tmp` is still our own mapping of `len` bytes.
        unsafe { libc::munmap(tmp, len) };
        return Err(e);
    }
    Ok(())
}

impl Drop for Adopted {
    fn drop(&mut self) {
        if let Err(e) = restore(self.addr, self.len) {
            // The shared mapping stays: the memory is still there and correct, only
            // shared until the process ends.
            tracing::warn!(
                "cannot put {:#x} + {} B back on private memory: {e}",
                self.addr,
                self.len
            );
        }
    }
}

/// Creates and adopts in one step for [`super::map::Mapping::adopt`]: `path` must
/// not exist.
///
/// # Safety
/// As [`adopt`].
pub(crate) unsafe fn create_adopted(
    path: &Path,
    addr: *mut u8,
    len: usize,
) -> Result<Adopted, (&'static str, std::io::Error)> {
    let file = nf_transport::shm::segment::create_file(path, len as u64)
        .map_err(|(_, e)| ("create rma segment for an adopted range", e))?;
    // SAFETY: forwarded from the caller.
    unsafe { adopt(&file, addr, len) }.map_err(|e| ("map rma segment over an adopted range", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private anonymous range of `pages` pages standing in for data + bss.
    fn private_range(pages: usize) -> (*mut u8, usize) {
        let len = pages * page_size();
        // SAFETY: a fresh anonymous mapping; the test leaks it on purpose (rule 1).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        (p.cast(), len)
    }

    #[test]
    fn adopted_bytes_stay_are_shared_then_private_again() {
        let (addr, len) = private_range(3);
        // SAFETY: `addr` is `len` bytes of our own mapping, used by this thread only.
        let mem = unsafe { std::slice::from_raw_parts_mut(addr, len) };
        for (i, b) in mem.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let dir = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm");
        let path = dir.path().join("adopted");
        // SAFETY: rule 1 holds for the leaked range; this thread alone writes it.
        let adopted = unsafe { create_adopted(&path, addr, len) }.expect("adopt");
        assert_eq!(adopted.ptr(), addr);
        assert!(mem.iter().enumerate().all(|(i, &b)| b == (i * 7) as u8));
        // Another mapping of the file (a domain peer's) sees our writes and we its.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open the segment file");
        // SAFETY: a peer's view of the file, which stays `len` bytes long.
        let peer = unsafe { memmap2::MmapOptions::new().len(len).map_mut(&file) }.expect("map");
        mem[5] = 0xAB;
        assert_eq!(peer[5], 0xAB);
        let mut peer = peer;
        peer[len - 1] = 0xCD;
        assert_eq!(mem[len - 1], 0xCD);
        drop(adopted);
        // Private again: the bytes stayed, and the file no longer backs them.
        assert_eq!((mem[5], mem[len - 1], mem[6]), (0xAB, 0xCD, 42));
        mem[5] = 1;
        assert_eq!(peer[5], 0xAB, "the range still shares the file");
        peer[6] = 2;
        assert_eq!(mem[6], 42, "the range still shares the file");
    }
}
