//! Single-copy transfers between processes with Linux cross-memory attach
//! (`process_vm_readv` / `process_vm_writev`): one side copies straight between its
//! own buffer and the peer's.

use std::io;

/// Lets any process of ours read this one's memory even under Yama `ptrace_scope=1`,
/// where only descendants could otherwise (sibling ranks are not descendants).
pub fn allow_peer_reads() {
    // SAFETY: prctl(PR_SET_PTRACER) takes plain integers and changes only this
    // process's Yama policy; failure (no Yama) is harmless and ignored.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

/// Whether cross-memory attach works here at all (seccomp or old kernels may forbid it).
pub fn available() -> bool {
    let src = [0x5au8; 64];
    let mut dst = [0u8; 64];
    read(std::process::id(), src.as_ptr() as u64, &mut dst).is_ok() && dst == src
}

/// Copies `dst.len()` bytes from address `addr` in process `pid` into `dst`.
pub fn read(pid: u32, addr: u64, dst: &mut [u8]) -> io::Result<()> {
    transfer(pid, addr, dst.as_mut_ptr(), dst.len(), Direction::Read)
}

/// Reads `len` bytes from address `addr` in process `pid` into a new vector, without
/// zeroing it first (a server answering reads of a rank's memory copies each byte
/// once, not twice).
pub fn read_vec(pid: u32, addr: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut v = Vec::with_capacity(len);
    transfer(pid, addr, v.as_mut_ptr(), len, Direction::Read)?;
    // SAFETY: `transfer` returns Ok only once the kernel has written all `len` bytes
    // into the vector's allocation, which holds at least `len`.
    unsafe { v.set_len(len) };
    Ok(v)
}

/// Copies `src` to address `addr` in process `pid`.
pub fn write(pid: u32, addr: u64, src: &[u8]) -> io::Result<()> {
    transfer(
        pid,
        addr,
        src.as_ptr() as *mut u8,
        src.len(),
        Direction::Write,
    )
}

enum Direction {
    Read,
    Write,
}

/// Moves `len` bytes between `local` and the peer's `addr`, looping over partial
/// transfers. For `Read`, `local` must be writable for `len` bytes; for `Write`,
/// readable — the callers pass a borrowed slice of exactly that length, or a vector's
/// allocation of at least that capacity.
fn transfer(pid: u32, addr: u64, local: *mut u8, len: usize, dir: Direction) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let left = len - done;
        // `wrapping_add` keeps this free of `unsafe`; `done < len` keeps it in the slice.
        let here = libc::iovec {
            iov_base: local.wrapping_add(done).cast(),
            iov_len: left,
        };
        let there = libc::iovec {
            iov_base: (addr as usize + done) as *mut libc::c_void,
            iov_len: left,
        };
        // SAFETY: `here` lies inside the caller's `len` bytes (a borrowed slice, or a
        // vector's spare capacity; writable for Read, only read for Write); the kernel
        // validates `there` and fails with EFAULT rather than touching anything else.
        let n = unsafe {
            match dir {
                Direction::Read => {
                    libc::process_vm_readv(pid as libc::pid_t, &here, 1, &there, 1, 0)
                }
                Direction::Write => {
                    libc::process_vm_writev(pid as libc::pid_t, &here, 1, &there, 1, 0)
                }
            }
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "peer range ended early",
            ));
        }
        done += n as usize;
    }
    Ok(())
}
