//! Put, get and accumulate: blocking and non-blocking, and waiting for handles.
//!
//! Completion (ARMCI's): a blocking put or accumulate returns once the local memory
//! may be reused (*local* completion; its bytes are then on their way); it is visible
//! at the target after a [`Rma::fence`] of that proc. A get returns when the data is
//! in local memory. Puts and accumulates to one proc are applied in the order they
//! were issued.
//!
//! Every transfer is checked in full (shape, nulls, stride levels, that the remote
//! side lies in one of the target's segments) before any byte moves.

use crate::direct;
use crate::error::RmaError;
use crate::handle::Handle;
use crate::origin::handles::IMPLICIT;
use crate::rma::Rma;
use crate::shape::{self, Extent};
use crate::table::Seg;
use crate::xfer::{Kind, Scale, Shape, Xfer};

impl Rma<'_> {
    /// Runs one transfer to completion (local completion for put and accumulate).
    ///
    /// # Safety
    /// Every local address in `x` must be valid for the bytes the shape covers (read
    /// for put and accumulate, write for get) for the duration of the call. Remote
    /// addresses are checked against the target's segments and need no promise.
    pub unsafe fn xfer(&self, x: &Xfer<'_>) -> Result<(), RmaError> {
        let seg = self.prepare(x)?;
        if self.same_node(x.proc) {
            // Complete when done: no handle to keep (the latency-critical path).
            // SAFETY: forwarded from the caller.
            return unsafe { direct::run(self, x, seg) };
        }
        // SAFETY: the caller's promise covers the whole call, which outlasts the wait.
        let h = unsafe { self.send(x, true) }?;
        self.wait(Handle(h))?;
        if !matches!(x.kind, Kind::Get) {
            self.origin.borrow_mut().flush(Some(x.proc))?;
        }
        Ok(())
    }

    /// Starts one transfer and returns its handle (`ARMCI_NbPut` and friends with a
    /// handle).
    ///
    /// # Safety
    /// As for [`Rma::xfer`], but the local memory of a get must stay valid (and
    /// untouched by anyone else) until the handle is waited for or tested complete,
    /// or a [`Rma::wait_all`] / [`Rma::wait_proc`] covering it returns. Put and
    /// accumulate copy their local memory before returning.
    pub unsafe fn start(&self, x: &Xfer<'_>) -> Result<Handle, RmaError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.issue(x, true) }.map(Handle)
    }

    /// Starts one transfer without a handle (ARMCI's NULL handle): it completes by
    /// [`Rma::wait_proc`], [`Rma::wait_all`], or for puts a fence.
    ///
    /// # Safety
    /// As for [`Rma::start`].
    pub unsafe fn start_implicit(&self, x: &Xfer<'_>) -> Result<(), RmaError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.issue(x, false) }.map(|_| ())
    }

    /// Checks, resolves and issues one transfer; returns its handle number.
    ///
    /// # Safety
    /// As for [`Rma::start`].
    unsafe fn issue(&self, x: &Xfer<'_>, explicit: bool) -> Result<u64, RmaError> {
        let seg = self.prepare(x)?;
        if self.same_node(x.proc) {
            let h = if explicit {
                self.origin.borrow_mut().handles.open(x.proc)
            } else {
                IMPLICIT
            };
            // SAFETY: forwarded from the caller.
            let r = unsafe { direct::run(self, x, seg) };
            if let (Err(_), true) = (&r, explicit) {
                let _ = self.origin.borrow_mut().handles.close(h);
            }
            return r.map(|()| h);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.send(x, explicit) }
    }

    /// Checks the transfer in full and finds where its remote side lies.
    fn prepare(&self, x: &Xfer<'_>) -> Result<Option<Seg>, RmaError> {
        let op = shape::op_name(&x.kind, &x.shape);
        self.check_proc(op, x.proc)?;
        let extent = shape::check(&x.kind, &x.shape)?;
        self.resolve(op, x, extent)
    }

    /// Issues a checked transfer to another domain: natively (put and get, where the
    /// proc is reached that way) or through its service.
    ///
    /// # Safety
    /// As for [`Rma::start`].
    unsafe fn send(&self, x: &Xfer<'_>, explicit: bool) -> Result<u64, RmaError> {
        let mut origin = self.origin.borrow_mut();
        let h = if explicit {
            origin.handles.open(x.proc)
        } else {
            IMPLICIT
        };
        let native = origin.native_route(x.proc) && !matches!(x.kind, Kind::Acc(_));
        let r = if native {
            let mem = self.mem.borrow();
            let find = |addr, len| mem.table.find(x.proc, addr, len);
            // SAFETY: forwarded from the caller.
            unsafe { origin.send_native(x.proc, &x.kind, &x.shape, h, find) }
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { origin.send_xfer(x.proc, &x.kind, &x.shape, h) }
        };
        if let Err(e) = r {
            if explicit {
                let op = shape::op_name(&x.kind, &x.shape);
                // Pieces already sent still land in `h`; drain them before forgetting it.
                let _ = origin.drive(|o| o.handles.done(op, h).unwrap_or(true));
                let _ = origin.handles.close(h);
            }
            return Err(e);
        }
        Ok(h)
    }

    /// Finds the segment holding the remote side (`None` for vectors, whose chunks
    /// are each checked here and looked up again when used).
    fn resolve(
        &self,
        op: &'static str,
        x: &Xfer<'_>,
        extent: Extent,
    ) -> Result<Option<Seg>, RmaError> {
        let mem = self.mem.borrow();
        let outside = |arg: String, addr: u64, len: u64| RmaError::OutOfSegment {
            op,
            arg,
            proc: x.proc,
            addr,
            len,
        };
        match (extent, &x.shape) {
            (Extent::One { start, len }, _) => {
                drop(mem);
                self.segment_of(op, x.proc, start, len).map(Some)
            }
            (Extent::Each, Shape::Vector(iovs)) => {
                for (i, v) in iovs.iter().enumerate() {
                    for (j, &a) in v.remote.iter().enumerate() {
                        if mem.table.find(x.proc, a, v.bytes as u64).is_none() {
                            return Err(outside(
                                format!("iov[{i}].remote[{j}]"),
                                a,
                                v.bytes as u64,
                            ));
                        }
                    }
                }
                Ok(None)
            }
            (Extent::Each, _) => unreachable!("only vectors are checked chunk by chunk"),
        }
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
        let mut o = self.origin.borrow_mut();
        if !o.handles.done("wait", h.0)? {
            o.drive(|o| o.handles.done("wait", h.0).unwrap_or(true))?;
        }
        o.handles.close(h.0)
    }

    /// Whether the handle's transfer is complete (`ARMCI_Test`); once it says yes the
    /// handle is forgotten. Makes progress on the way, never blocks.
    pub fn test(&self, h: Handle) -> Result<bool, RmaError> {
        let mut o = self.origin.borrow_mut();
        if !o.handles.done("test", h.0)? {
            o.pump();
            if !o.handles.done("test", h.0)? {
                return Ok(false);
            }
        }
        o.handles.close(h.0).map(|()| true)
    }

    /// Waits for every non-blocking transfer this proc started (`ARMCI_WaitAll`).
    /// Explicit handles stay valid for [`Rma::wait`], which then returns at once.
    pub fn wait_all(&self) -> Result<(), RmaError> {
        let mut o = self.origin.borrow_mut();
        o.drive(|o| o.handles.left(None) == 0)?;
        o.flush(None)?;
        o.handles.take_implicit_error(None)
    }

    /// Waits for every non-blocking transfer to `proc` (`ARMCI_WaitProc`).
    pub fn wait_proc(&self, proc: usize) -> Result<(), RmaError> {
        self.check_proc("wait_proc", proc)?;
        let mut o = self.origin.borrow_mut();
        o.drive(|o| o.handles.left(Some(proc)) == 0)?;
        o.flush(Some(proc))?;
        o.handles.take_implicit_error(Some(proc))
    }
}
