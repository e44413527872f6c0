//! The origin's side of native RMA (`crate::native`): issuing put and get through it,
//! accounting finished operations, and keeping order with the service path.
//!
//! Order between the two paths to one proc `p` (each path keeps its own order):
//! 1. Before a native put or get to `p`, service requests to `p` that have no answer
//!    yet (accumulate, unlock) are fenced, so the native operation cannot overtake
//!    them.
//! 2. Before a service request to `p` (accumulate, rmw, lock, unlock), every native
//!    operation to `p` completes, so the request cannot overtake them (a native
//!    write's completion means it is in `p`'s memory).
//!
//! A native write that fails is kept, like a refused service request, for the next
//! fence or wait covering its proc; a failed get fails its handle. Either failure means
//! the proc is lost for both paths.

use std::os::fd::RawFd;

use super::Origin;
use crate::error::RmaError;
use crate::native::{lost_or, NativeOp};
use crate::table::Seg;
use crate::xfer::{Kind, Shape};

impl Origin {
    /// Whether put and get to `proc` go native.
    pub(crate) fn native_route(&self, proc: usize) -> bool {
        self.native.as_ref().is_some_and(|n| n.routes(proc))
    }

    /// The native RMA state, for registering segments.
    pub(crate) fn native(&self) -> Option<&crate::native::Native> {
        self.native.as_ref()
    }

    /// Issues a checked put or get to `proc` natively (rule 1 first); get pieces count
    /// against handle `h`. `find` resolves remote addresses to segments.
    ///
    /// # Safety
    /// As for [`Origin::send_xfer`].
    pub(crate) unsafe fn send_native(
        &mut self,
        proc: usize,
        kind: &Kind,
        shape: &Shape<'_>,
        h: u64,
        find: impl Fn(u64, u64) -> Option<Seg>,
    ) -> Result<(), RmaError> {
        if let Some(e) = self.lost_error(proc) {
            return Err(e);
        }
        if self.dirty[proc] {
            self.fence_service(&[proc])?;
        }
        let write = match kind {
            Kind::Put => true,
            Kind::Get => false,
            Kind::Acc(_) => unreachable!("accumulates stay on the service path"),
        };
        let native = self.native.as_mut().expect("a native route");
        let handles = &mut self.handles;
        // SAFETY: forwarded from the caller.
        let r = unsafe { native.issue(proc, write, shape, h, find, || handles.add_piece(h, proc)) };
        if write {
            self.native_dirty[proc] = true;
        }
        if let Err(RmaError::PeerLost { why, .. }) = &r {
            self.lose(proc, why.clone());
        }
        r
    }

    /// Takes the native operations that finished (part of `pump`).
    pub(super) fn pump_native(&mut self) {
        let Some(native) = self.native.as_mut() else {
            return;
        };
        if native.in_flight(None) == 0 {
            return;
        }
        native.pump();
        for d in native.take_done() {
            let proc = d.op.proc();
            let r = d.result.map_err(|e| lost_or(proc, e));
            if let Err(RmaError::PeerLost { why, .. }) = &r {
                if self.lost[proc].is_none() {
                    self.lose(proc, why.clone());
                }
            }
            match (d.op, r) {
                (NativeOp::Read { handle, .. }, r) => self.handles.piece_done(handle, proc, r),
                (NativeOp::Write { .. }, Err(e)) => {
                    self.deferred[proc].get_or_insert(e);
                }
                (NativeOp::Write { .. }, Ok(())) => {}
            }
        }
    }

    /// The fd to sleep on while native operations are in flight.
    pub(super) fn native_waiting(&self) -> Option<RawFd> {
        self.native
            .as_ref()
            .filter(|n| n.in_flight(None) > 0)
            .map(|n| n.wake_fd())
    }

    /// Loses procs whose native operations have been stuck too long.
    pub(super) fn expire_native(&self) {
        if let Some(n) = &self.native {
            n.expire_stuck();
        }
    }

    /// Rule 2: waits until no native operation to `proc` is in flight.
    pub(super) fn settle_native(&mut self, proc: usize) -> Result<(), RmaError> {
        if self
            .native
            .as_ref()
            .is_some_and(|n| n.in_flight(Some(proc)) > 0)
        {
            self.drive(|o| {
                o.native
                    .as_ref()
                    .is_none_or(|n| n.in_flight(Some(proc)) == 0)
            })?;
        }
        Ok(())
    }

    /// Waits until the native writes to `procs` are remotely complete (their failures
    /// stay deferred for the caller).
    pub(super) fn fence_native(&mut self, procs: &[usize]) -> Result<(), RmaError> {
        let Some(native) = self.native.as_ref() else {
            return Ok(());
        };
        if procs.iter().any(|&p| native.writes_to(p) > 0) {
            let procs = procs.to_vec();
            self.drive(move |o| {
                let n = o.native.as_ref().expect("present");
                procs.iter().all(|&p| n.writes_to(p) == 0)
            })?;
        }
        for &p in procs {
            self.native_dirty[p] = false;
        }
        Ok(())
    }
}
