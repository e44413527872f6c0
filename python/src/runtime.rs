//! The process's one runtime: the world, its message matcher, and (from the first
//! global array on) the rma layer.
//!
//! The world is created once by `init` and lives until the process exits: Python
//! objects (arrays, requests) may outlive any scope, so they reach the runtime through
//! this thread's slot, which says "finalized" after `finalize` instead of dangling.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use nf_core::World;
use nf_rma::{Rma, WorldWireup};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors;
use crate::p2p::Matcher;

/// What one rank holds for the life of the process.
pub(crate) struct Runtime {
    /// The world (leaked at `init`: everything below borrows it for the process's life).
    pub world: &'static World,
    /// Tagged messages that arrived and receives waiting for them.
    pub p2p: Rc<RefCell<Matcher>>,
    /// The rma layer, created collectively by the first global array or counter.
    rma: OnceCell<Rma<'static>>,
}

/// This thread's runtime, if `init` ran here.
enum Slot {
    Empty,
    Live(&'static Runtime),
    Finalized,
}

thread_local! {
    static SLOT: RefCell<Slot> = const { RefCell::new(Slot::Empty) };
}

impl Runtime {
    /// Installs `world` as this thread's runtime (once per process).
    pub(crate) fn install(world: World, p2p: Rc<RefCell<Matcher>>) -> &'static Runtime {
        let world: &'static World = Box::leak(Box::new(world));
        let rt: &'static Runtime = Box::leak(Box::new(Runtime {
            world,
            p2p,
            rma: OnceCell::new(),
        }));
        SLOT.with(|s| *s.borrow_mut() = Slot::Live(rt));
        rt
    }

    /// Whether `init` already ran on this thread (and the runtime was not finalized).
    pub(crate) fn current() -> Option<&'static Runtime> {
        SLOT.with(|s| match *s.borrow() {
            Slot::Live(rt) => Some(rt),
            _ => None,
        })
    }

    /// Whether this thread's runtime was finalized.
    pub(crate) fn finalized() -> bool {
        SLOT.with(|s| matches!(*s.borrow(), Slot::Finalized))
    }

    /// The rma layer, made on first use (collective: every rank must get here together,
    /// which creating a global array guarantees).
    pub(crate) fn rma(&self) -> PyResult<&Rma<'static>> {
        if let Some(r) = self.rma.get() {
            return Ok(r);
        }
        let wire = WorldWireup::new(self.world)
            .map_err(|e| errors::rma("starting global memory (rma wire-up)", e))?;
        let rma = Rma::new(wire).map_err(|e| errors::rma("starting global memory", e))?;
        Ok(self.rma.get_or_init(|| rma))
    }

    /// Waits (running the runtime's progress) until `cond` holds; a Ctrl-C or other
    /// signal handler that raises ends the wait with its exception, and a dead peer
    /// with a [`errors::PeerError`].
    pub(crate) fn wait(
        &self,
        py: Python<'_>,
        what: &str,
        mut cond: impl FnMut() -> bool,
    ) -> PyResult<()> {
        let mut interrupted = None;
        let mut polls = 0u32;
        let mut next_check = Instant::now();
        let res = self.world.wait_until(|| {
            if cond() {
                return true;
            }
            // Signals are checked every few ms; the clock is read only every 256th
            // poll, so a busy wait does not pay for it on every pass.
            polls = polls.wrapping_add(1);
            if polls % 256 != 0 {
                return false;
            }
            let now = Instant::now();
            if now >= next_check {
                next_check = now + Duration::from_millis(5);
                if let Err(e) = py.check_signals() {
                    interrupted = Some(e);
                    return true;
                }
            }
            false
        });
        if let Some(e) = interrupted {
            return Err(e);
        }
        res.map_err(|e| errors::core(what, e))
    }

    /// Leaves the job: completes global memory, drains messages, tells the launcher
    /// (collective). Later calls of any kind raise.
    pub(crate) fn finalize() -> PyResult<()> {
        let Some(rt) = Self::current() else {
            return Ok(());
        };
        SLOT.with(|s| *s.borrow_mut() = Slot::Finalized);
        if let Some(rma) = rt.rma.get() {
            rma.wait_all()
                .map_err(|e| errors::rma("finalize: completing transfers", e))?;
            rma.barrier()
                .map_err(|e| errors::rma("finalize: barrier", e))?;
        }
        rt.world.leave().map_err(|e| errors::core("finalize", e))
    }
}

/// This thread's runtime, or the error that says why there is none.
pub(crate) fn get() -> PyResult<&'static Runtime> {
    SLOT.with(|s| match *s.borrow() {
        Slot::Live(rt) => Ok(rt),
        Slot::Empty => Err(PyRuntimeError::new_err(
            "ninefold is not initialised on this thread: call ninefold.init() first \
             (the runtime belongs to the thread that called it)",
        )),
        Slot::Finalized => Err(PyRuntimeError::new_err(
            "ninefold was finalized: no communication is possible after ninefold.finalize()",
        )),
    })
}
