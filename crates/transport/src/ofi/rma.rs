//! Native RMA (`fi_write` / `fi_read`) on registered memory: the ofi transport's
//! [`NativeRma`] (the steps are the trait's), plus what only ofi offers.
//!
//! 1. **Regions.** [`OfiTransport::register`] allocates a region (page-aligned, zeroed)
//!    registered for local and remote access; [`NativeRma::register_memory`]
//!    registers memory the caller owns (say a shared-memory segment), which must stay
//!    mapped until [`NativeRma::deregister`]. [`NativeRma::remote`] is what a
//!    peer needs to reach a region ([`RemoteRegion`], 24 bytes to publish).
//! 2. **Operations.** Each takes a send slot (the same `queue_limit` as messaging:
//!    `NoCredit` when none is free, or while the provider says `EAGAIN`) and carries
//!    the caller's `tag`:
//!    - [`OfiTransport::put`] / [`OfiTransport::get`]: one contiguous piece between a
//!      region of ours and a peer's;
//!    - [`NativeRma::write`]: bytes the transport keeps until the completion, to up
//!      to [`RmaCaps::rma_iov_limit`] pieces of peers' regions;
//!    - [`NativeRma::read`]: up to that many remote pieces into as many pieces of
//!      the caller's memory (`unsafe`: it must stay valid until the completion).
//!
//!    A write completes only once its data is in the target's memory
//!    (`FI_DELIVERY_COMPLETE`), so its completion is *remote* completion; a read
//!    completes when its data is in ours.
//! 3. **Completions** are read by `poll` or [`NativeRma::progress`] (which also
//!    drives the provider: with manual progress a target's memory is written or read
//!    only while its owner reads its queue) and wait in order for
//!    [`NativeRma::pop_rma_done`], each with its tag and outcome (and a write's
//!    bytes, to reuse). A failed operation marks its peer lost, as a send does.
//! 4. **Sleeping.** With [`super::OfiConfig::wait`] the completion queue has a wait
//!    object: a thread may sleep on [`NativeRma::wait_fd`] after
//!    [`NativeRma::trywait`] said yes (libfabric's rule: else a completion, or
//!    progress the provider owes, could be missed).
//!
//! A provider without `FI_RMA` (or a transport opened with `rma: false`) answers
//! [`TransportError::Unsupported`].

use std::os::fd::RawFd;
use std::sync::Arc;

use super::ffi::{Keep, RawIov, RawRiov, Region, Sent, MAX_IOV};
use super::{ofi_error, OfiTransport, Op};
use crate::error::TransportError;
use crate::rma::{NativeRma, RegionId, RemoteRegion, RemoteSpan, RmaCaps, RmaDone};
use crate::SendStatus;

const NO_RMA: &str = "native RMA (the provider lacks FI_RMA, or rma was off at open)";

/// `FI_ORDER_*` bits (rdma/fabric.h): the general ones, and (libfabric 1.16+) the
/// ones for RMA alone; either promises the order for RMA operations.
const FI_ORDER_RAW: u64 = 1 << 1 | 1 << 33;
const FI_ORDER_WAR: u64 = 1 << 3 | 1 << 34;
const FI_ORDER_WAW: u64 = 1 << 4 | 1 << 35;

impl OfiTransport {
    /// Whether the provider granted native RMA.
    pub fn rma_supported(&self) -> bool {
        self.ep.granted().rma
    }

    /// Step 1: allocates and registers a region of `len` bytes.
    pub fn register(&mut self, len: usize) -> Result<RegionId, TransportError> {
        self.need_rma()?;
        let region = self
            .ep
            .region(len)
            .map_err(|f| register_error(f, format!("registering {len} B for RMA")))?;
        Ok(self.keep_region(region))
    }

    fn keep_region(&mut self, region: Region) -> RegionId {
        self.regions.push(Some(Arc::new(region)));
        RegionId::new(self.regions.len() - 1)
    }

    fn need_rma(&self) -> Result<(), TransportError> {
        if self.rma_supported() {
            Ok(())
        } else {
            Err(TransportError::Unsupported(NO_RMA))
        }
    }

    fn region(&self, id: RegionId) -> Result<&Arc<Region>, TransportError> {
        self.regions
            .get(id.index())
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                TransportError::Config(format!("ofi region {} is not registered", id.index()))
            })
    }

    /// Copies bytes of region `id` from `off` into `out`.
    pub fn region_read(
        &self,
        id: RegionId,
        off: usize,
        out: &mut [u8],
    ) -> Result<(), TransportError> {
        let r = self.region(id)?;
        if !r.read_at(off, out) {
            return Err(out_of_range(off, out.len(), r.len()));
        }
        Ok(())
    }

    /// Copies `data` into region `id` at `off`.
    pub fn region_write(
        &mut self,
        id: RegionId,
        off: usize,
        data: &[u8],
    ) -> Result<(), TransportError> {
        let r = self.region(id)?;
        if !r.write_at(off, data) {
            return Err(out_of_range(off, data.len(), r.len()));
        }
        Ok(())
    }

    /// Step 2: writes `len` bytes of region `id` at `off` to `to` at `to_off` on `dest`.
    #[allow(clippy::too_many_arguments)]
    pub fn put(
        &mut self,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        to: &RemoteRegion,
        to_off: u64,
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        self.region_op(true, dest, id, off, len, to, to_off, tag)
    }

    /// Step 2: reads `len` bytes from `from` at `from_off` on `dest` into region `id`
    /// at `off`.
    #[allow(clippy::too_many_arguments)]
    pub fn get(
        &mut self,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        from: &RemoteRegion,
        from_off: u64,
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        self.region_op(false, dest, id, off, len, from, from_off, tag)
    }

    #[allow(clippy::too_many_arguments)]
    fn region_op(
        &mut self,
        write: bool,
        dest: usize,
        id: RegionId,
        off: usize,
        len: usize,
        remote: &RemoteRegion,
        remote_off: u64,
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        self.need_rma()?;
        let region = Arc::clone(self.region(id)?);
        let local = region
            .piece(off, len)
            .ok_or_else(|| out_of_range(off, len, region.len()))?;
        let span = RemoteSpan {
            region: *remote,
            off: remote_off,
            len: len as u64,
        };
        let remote = self.remote_pieces(dest, &[span])?;
        let mut keep = Some(Keep::Region(Arc::clone(&region)));
        // SAFETY: the local piece lies in `region` (checked), which `keep` holds until
        // the completion.
        unsafe {
            self.issue(
                write,
                dest,
                Some(&region),
                &[local],
                &remote,
                &mut keep,
                tag,
            )
        }
    }

    /// Checks `dest` and the remote pieces (each inside its region, at most
    /// `rma_iov_limit`) and names them as the provider wants.
    fn remote_pieces(
        &self,
        dest: usize,
        spans: &[RemoteSpan],
    ) -> Result<Vec<RawRiov>, TransportError> {
        self.reachable(dest)?;
        let limit = self.rma_caps().rma_iov_limit;
        if spans.is_empty() || spans.len() > limit {
            return Err(TransportError::Config(format!(
                "an ofi RMA operation has {} remote pieces; 1 ..= {limit} allowed",
                spans.len()
            )));
        }
        spans
            .iter()
            .map(|s| {
                let r = &s.region;
                if s.off > r.len || s.len > r.len - s.off {
                    return Err(TransportError::Config(format!(
                        "ofi RMA of {} B at offset {} of rank {dest}'s {} B region is out of \
                         range",
                        s.len, s.off, r.len
                    )));
                }
                Ok(RawRiov {
                    addr: r.base + s.off,
                    len: s.len,
                    key: r.key,
                })
            })
            .collect()
    }

    /// Issues one checked operation in a free slot; `keep` moves into the slot once
    /// the operation is posted, and stays with the caller otherwise.
    ///
    /// # Safety
    /// As for [`super::ffi::Endpoint::rmav`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn issue(
        &mut self,
        write: bool,
        dest: usize,
        region: Option<&Region>,
        local: &[RawIov],
        remote: &[RawRiov],
        keep: &mut Option<Keep>,
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        if local.is_empty() || local.len() > self.rma_caps().iov_limit {
            return Err(TransportError::Config(format!(
                "an ofi RMA operation has {} local pieces; 1 ..= {} allowed",
                local.len(),
                self.rma_caps().iov_limit
            )));
        }
        if self.ep.busy() == self.cfg.queue_limit {
            self.progress()?;
        }
        let len: u64 = remote.iter().map(|r| r.len).sum();
        // SAFETY: forwarded from the caller.
        let issued = unsafe { self.ep.rmav(write, dest, region, local, remote, keep) };
        let issued = issued.map_err(|f| {
            let dir = if write { "writing" } else { "reading" };
            ofi_error(
                format!("{dir} {len} B of rank {dest}'s memory"),
                f,
                "check that the region is still registered on that rank",
            )
        })?;
        match issued {
            Sent::Posted(slot) => {
                self.slot_op[slot as usize] = Op::Rma(dest, tag);
                self.slot_since[slot as usize] = std::time::Instant::now();
                self.rma_in_flight += 1;
                self.stalled_since[dest] = None;
                Ok(SendStatus::Sent)
            }
            Sent::Injected => unreachable!("RMA operations are never injected"),
            Sent::Busy => self.refused(dest),
        }
    }

    /// Operations issued and not yet completed.
    pub fn rma_in_flight(&self) -> usize {
        self.rma_in_flight
    }
}

impl NativeRma for OfiTransport {
    fn rma_caps(&self) -> RmaCaps {
        let g = self.ep.granted();
        RmaCaps {
            iov_limit: g.iov_limit.clamp(1, MAX_IOV),
            rma_iov_limit: g.rma_iov_limit.clamp(1, MAX_IOV),
            read_after_write: g.msg_order & FI_ORDER_RAW != 0,
            write_after_write: g.msg_order & FI_ORDER_WAW != 0,
            write_after_read: g.msg_order & FI_ORDER_WAR != 0,
        }
    }

    unsafe fn register_memory(
        &mut self,
        ptr: *mut u8,
        len: usize,
    ) -> Result<RegionId, TransportError> {
        self.need_rma()?;
        // SAFETY: forwarded from the caller.
        let region = unsafe { self.ep.register(ptr, len) }
            .map_err(|f| register_error(f, format!("registering {len} B at {ptr:p} for RMA")))?;
        Ok(self.keep_region(region))
    }

    fn remote(&self, id: RegionId) -> Result<RemoteRegion, TransportError> {
        let r = self.region(id)?;
        Ok(RemoteRegion {
            base: r.base,
            key: r.key,
            len: r.len() as u64,
        })
    }

    fn deregister(&mut self, id: RegionId) -> Result<(), TransportError> {
        self.region(id)?;
        self.regions[id.index()] = None;
        Ok(())
    }

    fn write(
        &mut self,
        dest: usize,
        data: &mut Vec<u8>,
        to: &[RemoteSpan],
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        self.need_rma()?;
        let remote = self.remote_pieces(dest, to)?;
        let local = [RawIov {
            buf: data.as_mut_ptr(),
            len: data.len() as u64,
        }];
        // A Vec's heap buffer does not move when the Vec does, so `local` stays valid
        // while `keep` holds it.
        let mut keep = Some(Keep::Bytes(std::mem::take(data)));
        // SAFETY: the local piece is the buffer `keep` holds until the completion.
        let status = unsafe { self.issue(true, dest, None, &local, &remote, &mut keep, tag) };
        if let Some(Keep::Bytes(back)) = keep {
            *data = back;
        }
        status
    }

    unsafe fn read(
        &mut self,
        dest: usize,
        into: &[(*mut u8, usize)],
        from: &[RemoteSpan],
        tag: u64,
    ) -> Result<SendStatus, TransportError> {
        self.need_rma()?;
        let remote = self.remote_pieces(dest, from)?;
        let local: Vec<RawIov> = into
            .iter()
            .map(|&(buf, len)| RawIov {
                buf,
                len: len as u64,
            })
            .collect();
        // SAFETY: forwarded from the caller.
        unsafe {
            self.issue(
                false,
                dest,
                None,
                &local,
                &remote,
                &mut Some(Keep::Caller),
                tag,
            )
        }
    }

    fn progress(&mut self) -> Result<usize, TransportError> {
        OfiTransport::progress(self)
    }

    fn pop_rma_done(&mut self) -> Option<RmaDone> {
        self.rma_done.pop_front()
    }

    fn rma_done_waiting(&self) -> bool {
        !self.rma_done.is_empty()
    }

    fn expire_stuck(&mut self) {
        OfiTransport::expire_stuck(self)
    }

    fn wait_fd(&self) -> Option<RawFd> {
        self.ep.granted().wait_fd
    }

    fn trywait(&mut self) -> Result<bool, TransportError> {
        self.ep.trywait().map_err(|f| {
            ofi_error(
                "asking whether the completion queue may be waited on".into(),
                f,
                "open the transport with `wait: true` on a provider with FI_WAIT_FD",
            )
        })
    }
}

fn register_error(f: super::ffi::Fail, what: String) -> TransportError {
    ofi_error(
        what,
        f,
        "check the memory-lock limit (ulimit -l) and the provider's MR limits",
    )
}

fn out_of_range(off: usize, len: usize, size: usize) -> TransportError {
    TransportError::Config(format!(
        "ofi region range {off}+{len} B is outside the region's {size} B"
    ))
}
