//! Put, get and accumulate: blocking and non-blocking, and waiting for handles.
//!
//! Completion (ARMCI's): a blocking put or accumulate returns once the local memory
//! may be reused (*local* completion); it is visible at the target after a
//! [`Rma::fence`] of that proc. A get returns when the data is in local memory.
//! Puts and accumulates to one proc are applied in the order they were issued.

use crate::error::RmaError;
use crate::handle::Handle;
use crate::rma::{not_yet, Rma};
use crate::xfer::{Kind, Scale, Shape, Xfer};

impl Rma<'_> {
    /// Runs one transfer to completion (local completion for put and accumulate).
    ///
    /// # Safety
    /// Every local address in `x` must be valid for the bytes the shape covers (read
    /// for put and accumulate, write for get) for the duration of the call. Remote
    /// addresses are checked against the target's segments and need no promise.
    pub unsafe fn xfer(&self, x: &Xfer<'_>) -> Result<(), RmaError> {
        // SAFETY: the caller's promise covers the whole call, which outlasts the wait.
        let h = unsafe { self.start(x) }?;
        self.wait(h)
    }

    /// Starts one transfer and returns its handle (`ARMCI_NbPut` and friends).
    ///
    /// # Safety
    /// As for [`Rma::xfer`], but the local memory must stay valid (and, for a get,
    /// untouched by anyone else) until the handle is waited for or tested complete,
    /// or [`Rma::wait_all`] / [`Rma::wait_proc`] covering it returns.
    pub unsafe fn start(&self, x: &Xfer<'_>) -> Result<Handle, RmaError> {
        self.check_proc(x.kind.name(), x.proc)?;
        Err(not_yet("start"))
    }

    /// Contiguous put of `bytes` from `local` to `remote` on `proc` (`ARMCI_Put`).
    ///
    /// # Safety
    /// `local` must be readable for `bytes` bytes.
    pub unsafe fn put(
        &self,
        local: *const u8,
        remote: u64,
        bytes: usize,
        proc: usize,
    ) -> Result<(), RmaError> {
        let shape = Shape::Contig {
            local: local as *mut u8,
            remote,
            bytes,
        };
        // SAFETY: forwarded from the caller; a put only reads `local`.
        unsafe {
            self.xfer(&Xfer {
                kind: Kind::Put,
                proc,
                shape,
            })
        }
    }

    /// Contiguous get of `bytes` from `remote` on `proc` into `local` (`ARMCI_Get`).
    ///
    /// # Safety
    /// `local` must be writable for `bytes` bytes.
    pub unsafe fn get(
        &self,
        remote: u64,
        local: *mut u8,
        bytes: usize,
        proc: usize,
    ) -> Result<(), RmaError> {
        let shape = Shape::Contig {
            local,
            remote,
            bytes,
        };
        // SAFETY: forwarded from the caller.
        unsafe {
            self.xfer(&Xfer {
                kind: Kind::Get,
                proc,
                shape,
            })
        }
    }

    /// Contiguous accumulate: `remote[i] += scale · local[i]` (`ARMCI_Acc`).
    ///
    /// # Safety
    /// `local` must be readable for `bytes` bytes.
    pub unsafe fn acc(
        &self,
        scale: Scale,
        local: *const u8,
        remote: u64,
        bytes: usize,
        proc: usize,
    ) -> Result<(), RmaError> {
        let shape = Shape::Contig {
            local: local as *mut u8,
            remote,
            bytes,
        };
        let kind = Kind::Acc(scale);
        // SAFETY: forwarded from the caller; an accumulate only reads `local`.
        unsafe { self.xfer(&Xfer { kind, proc, shape }) }
    }

    /// Waits for one handle (`ARMCI_Wait`); the handle is then forgotten.
    pub fn wait(&self, h: Handle) -> Result<(), RmaError> {
        let _ = h;
        Err(not_yet("wait"))
    }

    /// Whether the handle's transfer is complete (`ARMCI_Test`); once it says yes the
    /// handle is forgotten.
    pub fn test(&self, h: Handle) -> Result<bool, RmaError> {
        let _ = h;
        Err(not_yet("test"))
    }

    /// Waits for every non-blocking transfer this proc started (`ARMCI_WaitAll`).
    pub fn wait_all(&self) -> Result<(), RmaError> {
        Err(not_yet("wait_all"))
    }

    /// Waits for every non-blocking transfer to `proc` (`ARMCI_WaitProc`).
    pub fn wait_proc(&self, proc: usize) -> Result<(), RmaError> {
        self.check_proc("wait_proc", proc)?;
        Err(not_yet("wait_proc"))
    }
}
