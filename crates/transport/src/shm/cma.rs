//! Single-copy transfers between processes with Linux cross-memory attach
//! (`process_vm_readv`): the receiver copies straight out of the sender's buffer.

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

/// Whether `process_vm_readv` works here at all (seccomp or old kernels may forbid it).
pub fn available() -> bool {
    let src = [0x5au8; 64];
    let mut dst = [0u8; 64];
    read(std::process::id(), src.as_ptr() as u64, &mut dst).is_ok() && dst == src
}

/// Copies `dst.len()` bytes from address `addr` in process `pid` into `dst`.
pub fn read(pid: u32, addr: u64, dst: &mut [u8]) -> io::Result<()> {
    // SAFETY: `dst` is a live, writable buffer of exactly this length.
    unsafe { read_raw(pid, addr, dst.as_mut_ptr(), dst.len()) }
}

/// Replaces `buf`'s contents with `len` bytes read from `addr` in process `pid`,
/// without zeroing them first (a recycled buffer costs no memset).
pub fn read_to_vec(pid: u32, addr: u64, len: usize, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    buf.reserve(len);
    // SAFETY: after `reserve`, the allocation has room for `len` bytes past the
    // (zero) length; the kernel only writes into that range.
    unsafe { read_raw(pid, addr, buf.as_mut_ptr(), len)? };
    // SAFETY: `read_raw` returned Ok, so all `len` bytes are initialised; len ≤ capacity.
    unsafe { buf.set_len(len) };
    Ok(())
}

/// Reads until `len` bytes are in, or fails.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes for the duration of the call.
unsafe fn read_raw(pid: u32, addr: u64, dst: *mut u8, len: usize) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let local = libc::iovec {
            iov_base: dst.add(done).cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (addr as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // The kernel validates the remote range (EFAULT) and writes only into `local`.
        let n = libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0);
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
