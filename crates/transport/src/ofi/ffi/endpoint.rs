//! The transport's own handle on an endpoint: every provider call goes through
//! [`Endpoint`] (rule 3 of `ffi/mod.rs`).

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::memory::{Region, RxBuf, RxShared};
use super::{
    check, lock, shim, strerror, text, Fail, Handle, OpenArgs, RawCompletion, RawEp, RawInfo,
    RawIov, RawMr, RawRiov, BATCH, FI_EAGAIN,
};

/// What `open` needs.
pub(crate) struct OpenParams<'a> {
    pub provider: &'a str,
    pub node: Option<&'a str>,
    pub domain: Option<&'a str>,
    pub rx_count: usize,
    pub tx_count: usize,
    pub buf_size: usize,
    pub npeers: usize,
    pub want_rma: bool,
    pub want_wait: bool,
}

/// What the provider granted.
#[derive(Debug, Clone)]
pub(crate) struct Granted {
    pub provider: String,
    pub fabric: String,
    pub domain: String,
    pub inject_size: usize,
    pub rma: bool,
    /// The completion queue's wait object, if it has one.
    pub wait_fd: Option<i32>,
    /// `FI_ORDER_*` bits the provider keeps between operations to one peer.
    pub msg_order: u64,
    /// Local and remote pieces one RMA operation may have.
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
}

/// What an RMA operation keeps alive until it completes (rule 5).
#[allow(dead_code)] // The fields are held for their drop, never read.
pub(crate) enum Keep {
    /// The region its local side lies in.
    Region(Arc<Region>),
    /// The bytes it writes.
    Bytes(Vec<u8>),
    /// Nothing: the caller keeps the local memory valid.
    Caller,
}

/// What a send slot is doing.
enum Slot {
    Free,
    Send,
    /// An RMA operation and what it keeps alive until it completes (rule 5).
    Rma {
        _keep: Keep,
    },
}

/// Something that happened, read from the completion queue.
pub(crate) enum Event {
    /// A packet arrived in a buffer now owned by the caller.
    Recv(RxBuf),
    /// A receive failed (`FI_ETRUNC`: longer than the buffer); the buffer is re-posted.
    RecvFailed(Fail),
    /// The RMA operation in `slot` completed; the bytes it kept come back.
    RmaDone(u32, Option<Vec<u8>>),
    /// The send in `slot` completed (the slot is free again).
    SendDone(u32),
    /// The send or RMA operation in `slot` failed (an RMA write's bytes come back).
    OpFailed(u32, Fail, Option<Vec<u8>>),
    /// An error completion we cannot attribute.
    Other(Fail),
}

/// How a send went.
pub(crate) enum Sent {
    /// Handed to the provider, which owns slot `0` until its completion.
    Posted(u32),
    /// Injected: the slot is free again.
    Injected,
    /// No free slot, or the provider said `EAGAIN`.
    Busy,
}

/// The transport's own handle on an endpoint: every provider call goes through here.
pub(crate) struct Endpoint {
    handle: Arc<Handle>,
    rx: Arc<RxShared>,
    rx_posted: Vec<bool>,
    tx_base: *mut u8,
    buf_size: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
    granted: Granted,
    batch: [RawCompletion; BATCH],
}

// SAFETY: the endpoint may move to another thread; being !Sync with `&mut self` calls,
// only one thread uses it at a time (rule 3). `tx_base` points into the pool owned by
// `handle`.
unsafe impl Send for Endpoint {}

impl Endpoint {
    /// Opens an RDM endpoint, its pools, and posts every receive buffer.
    pub(crate) fn open(p: &OpenParams) -> Result<Self, Fail> {
        let shim = shim().map_err(|text| Fail { code: 0, text })?;
        let cstr = |s: &str| {
            CString::new(s).map_err(|_| Fail {
                code: 22,
                text: format!("{s:?} contains a NUL byte"),
            })
        };
        let provider = cstr(p.provider)?;
        let node = p.node.map(cstr).transpose()?;
        let domain = p.domain.map(cstr).transpose()?;
        let args = OpenArgs {
            provider: provider.as_ptr(),
            node: node.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            domain: domain.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            rx_count: p.rx_count as u64,
            tx_count: p.tx_count as u64,
            buf_size: p.buf_size as u64,
            npeers: p.npeers as u64,
            want_rma: p.want_rma as i32,
            want_wait: p.want_wait as i32,
        };
        let mut raw = std::ptr::null_mut();
        let mut err: [c_char; 256] = [0; 256];
        // SAFETY: `args` and its strings live across the call; `raw` and `err` are valid
        // for writes, `err` for its full length, which we pass.
        let ret = unsafe { (shim.open)(&args, &mut raw, err.as_mut_ptr(), err.len()) };
        let Some(raw) = NonNull::new(raw).filter(|_| ret == 0) else {
            let mut f = Fail::from_ret(ret.min(-1));
            f.text = text(&err);
            return Err(f);
        };
        let handle = Arc::new(Handle { shim, raw });
        // SAFETY: an all-zero RawInfo is valid (null pointers, zero numbers, empty
        // strings); nf_ofi_info fills it from the open endpoint.
        let mut info: RawInfo = unsafe { std::mem::zeroed() };
        // SAFETY: the endpoint is open; `info` is valid for writes.
        unsafe { (shim.info)(raw.as_ptr(), &mut info) };
        let granted = Granted {
            provider: text(&info.provider),
            fabric: text(&info.fabric),
            domain: text(&info.domain),
            inject_size: info.inject_size as usize,
            rma: info.rma != 0,
            wait_fd: (info.wait_fd >= 0).then_some(info.wait_fd),
            msg_order: info.msg_order,
            iov_limit: info.iov_limit as usize,
            rma_iov_limit: info.rma_iov_limit as usize,
        };
        let rx = Arc::new(RxShared {
            _handle: Arc::clone(&handle),
            base: info.rx_base,
            buf_size: p.buf_size,
            returned: Mutex::new((0..p.rx_count as u32).collect()),
            count: AtomicUsize::new(p.rx_count),
        });
        let mut ep = Endpoint {
            handle,
            rx,
            rx_posted: vec![false; p.rx_count],
            tx_base: info.tx_base,
            buf_size: p.buf_size,
            slots: (0..p.tx_count).map(|_| Slot::Free).collect(),
            free: (0..p.tx_count as u32).rev().collect(),
            granted,
            batch: [RawCompletion::default(); BATCH],
        };
        ep.repost()?;
        Ok(ep)
    }

    fn raw(&self) -> *mut RawEp {
        self.handle.raw.as_ptr()
    }

    /// What the provider granted.
    pub(crate) fn granted(&self) -> &Granted {
        &self.granted
    }

    /// The endpoint's name (its address, opaque bytes) for peers to insert.
    pub(crate) fn name(&mut self) -> Result<Vec<u8>, Fail> {
        let mut buf = vec![0u8; 1024];
        let mut len = buf.len();
        // SAFETY: `buf` is valid for `len` bytes; the shim writes at most `len` and
        // stores the real length in `len`.
        check(unsafe {
            (self.handle.shim.getname)(self.raw(), buf.as_mut_ptr().cast(), &mut len)
        })?;
        buf.truncate(len.min(1024));
        Ok(buf)
    }

    /// Inserts `rank`'s name into the address vector.
    pub(crate) fn insert(&mut self, rank: usize, addr: &[u8]) -> Result<(), Fail> {
        // SAFETY: `addr` is valid for `addr.len()` bytes; the shim checks `rank`.
        check(unsafe {
            (self.handle.shim.insert)(self.raw(), rank as u64, addr.as_ptr().cast(), addr.len())
        })?;
        Ok(())
    }

    /// Re-posts the buffers of dropped packets.
    pub(crate) fn repost(&mut self) -> Result<(), Fail> {
        if self.rx.count.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let idxs = {
            let mut q = lock(&self.rx.returned);
            self.rx.count.store(0, Ordering::Release);
            std::mem::take(&mut *q)
        };
        let mut first_err = None;
        for (n, &idx) in idxs.iter().enumerate() {
            // SAFETY: `idx` came from a dropped RxBuf (or the initial list), so no one
            // reads the buffer; the shim checks it is in range.
            let ret = unsafe { (self.handle.shim.post_recv)(self.raw(), idx as u64) };
            if ret == 0 {
                self.rx_posted[idx as usize] = true;
                continue;
            }
            // Not posted now: back in the queue for the next call.
            let mut q = lock(&self.rx.returned);
            q.extend_from_slice(&idxs[n..]);
            self.rx.count.store(q.len(), Ordering::Release);
            if ret != -FI_EAGAIN {
                first_err = Some(Fail::from_ret(ret));
            }
            break;
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Number of slots in flight (sends and RMA operations).
    pub(crate) fn busy(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The slots in flight.
    pub(crate) fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slots.len() as u32).filter(|&i| !matches!(self.slots[i as usize], Slot::Free))
    }

    /// Fills a free slot with `fill` (which returns the length used) and sends it to
    /// `rank`, injecting when `inject` and it fits.
    pub(crate) fn send(
        &mut self,
        rank: usize,
        inject: bool,
        fill: impl FnOnce(&mut [u8]) -> usize,
    ) -> Result<Sent, Fail> {
        let Some(slot) = self.free.pop() else {
            return Ok(Sent::Busy);
        };
        let off = slot as usize * self.buf_size;
        // SAFETY: `slot` is free, so neither the provider nor anyone else touches its
        // bytes (rule 5); the range lies inside the tx pool, which `handle` keeps alive;
        // the borrow ends before the slot is handed to the provider.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.tx_base.add(off), self.buf_size) };
        let len = fill(buf).min(self.buf_size);
        // SAFETY: the shim checks `rank`, `slot` and `len` against its pools.
        let ret = unsafe {
            (self.handle.shim.send)(
                self.raw(),
                rank as u64,
                slot as u64,
                len as u64,
                inject as i32,
            )
        };
        match ret {
            0 => {
                self.slots[slot as usize] = Slot::Send;
                Ok(Sent::Posted(slot))
            }
            1 => {
                self.free.push(slot);
                Ok(Sent::Injected)
            }
            r => {
                self.free.push(slot);
                if r == -FI_EAGAIN {
                    Ok(Sent::Busy)
                } else {
                    Err(Fail::from_ret(r))
                }
            }
        }
    }

    /// Allocates and registers a region of `len` bytes for RMA.
    pub(crate) fn region(&mut self, len: usize) -> Result<Region, Fail> {
        let shim = self.handle.shim;
        let raw = self.raw();
        // SAFETY: the out-pointers are valid for writes; the shim checks `len`.
        self.new_region(len, "nf_ofi_mr_alloc", |r, k, b| unsafe {
            (shim.mr_alloc)(raw, len as u64, r, k, b)
        })
    }

    /// Registers the caller's `len` bytes at `buf` for local and remote RMA (rule 6).
    ///
    /// # Safety
    /// The memory must stay mapped until the returned region is dropped.
    pub(crate) unsafe fn register(&mut self, buf: *mut u8, len: usize) -> Result<Region, Fail> {
        let shim = self.handle.shim;
        let raw = self.raw();
        // SAFETY: the out-pointers are valid for writes; the caller keeps `buf` mapped
        // for as long as the registration lives; the shim checks null and zero.
        self.new_region(len, "nf_ofi_mr_reg", |r, k, b| unsafe {
            (shim.mr_reg)(raw, buf, len as u64, r, k, b)
        })
    }

    /// A region from `call`, which fills in the shim's region, key and base.
    fn new_region(
        &self,
        len: usize,
        name: &str,
        call: impl FnOnce(*mut *mut RawMr, *mut u64, *mut u64) -> c_int,
    ) -> Result<Region, Fail> {
        let (mut raw, mut key, mut base) = (std::ptr::null_mut(), 0u64, 0u64);
        check(call(&mut raw, &mut key, &mut base))?;
        let raw = NonNull::new(raw).ok_or(Fail {
            code: 12,
            text: format!("{name} returned no region"),
        })?;
        // SAFETY: `raw` is a live region from the shim.
        let buf = unsafe { (self.handle.shim.mr_buf)(raw.as_ptr()) };
        Ok(Region {
            handle: Arc::clone(&self.handle),
            raw,
            buf,
            len,
            key,
            base,
        })
    }

    /// Whether a thread may sleep on the wait fd now (`false`: read completions first).
    pub(crate) fn trywait(&mut self) -> Result<bool, Fail> {
        // SAFETY: the endpoint is open; the shim answers -FI_ENOSYS without a wait fd.
        match unsafe { (self.handle.shim.trywait)(self.raw()) } {
            0 => Ok(true),
            r if r == -FI_EAGAIN => Ok(false),
            r => Err(Fail::from_ret(r)),
        }
    }

    /// Issues an RMA write of the `local` pieces, in order, to the `remote` ones (or a
    /// read of the remote pieces into the local ones) to `rank`; once posted, `keep` is
    /// taken into the slot and stays alive until the completion (rule 5). The local
    /// pieces lie in `region` when it is given.
    ///
    /// # Safety
    /// Unless `keep` holds them, the local pieces must stay valid (readable for a write,
    /// writable and untouched for a read) until the operation's completion is read or the
    /// endpoint is closed.
    pub(crate) unsafe fn rmav(
        &mut self,
        write: bool,
        rank: usize,
        region: Option<&Region>,
        local: &[RawIov],
        remote: &[RawRiov],
        keep: &mut Option<Keep>,
    ) -> Result<Sent, Fail> {
        let Some(slot) = self.free.pop() else {
            return Ok(Sent::Busy);
        };
        let mr = region.map_or(std::ptr::null_mut(), |r| r.raw.as_ptr());
        // SAFETY: the arrays are valid for their lengths during the call; the shim checks
        // rank, slot, counts, lengths and (with a region) that the pieces lie in it; the
        // memory stays valid until the completion (`keep`, the region held by the caller's
        // `keep`, or the caller's promise).
        let ret = unsafe {
            (self.handle.shim.rmav)(
                self.raw(),
                write as i32,
                rank as u64,
                slot as u64,
                mr,
                local.as_ptr(),
                local.len() as u64,
                remote.as_ptr(),
                remote.len() as u64,
            )
        };
        if ret == 0 {
            let keep = keep.take().unwrap_or(Keep::Caller);
            self.slots[slot as usize] = Slot::Rma { _keep: keep };
            return Ok(Sent::Posted(slot));
        }
        self.free.push(slot);
        if ret == -FI_EAGAIN {
            Ok(Sent::Busy)
        } else {
            Err(Fail::from_ret(ret))
        }
    }

    /// Reads completions (driving the provider's progress) into `out`; returns how many
    /// were read.
    pub(crate) fn progress(
        &mut self,
        out: &mut std::collections::VecDeque<Event>,
    ) -> Result<usize, Fail> {
        // SAFETY: `batch` is valid for BATCH completions, the count we pass.
        let n =
            check(unsafe { (self.handle.shim.poll)(self.raw(), self.batch.as_mut_ptr(), BATCH) })?
                as usize;
        for i in 0..n.min(BATCH) {
            let c = self.batch[i];
            let fail = (c.err != 0).then(|| self.fail_of(c));
            match c.kind {
                0 if (c.idx as usize) < self.rx_posted.len() && self.rx_posted[c.idx as usize] => {
                    self.rx_posted[c.idx as usize] = false;
                    let buf = RxBuf {
                        pool: Arc::clone(&self.rx),
                        idx: c.idx,
                        len: (c.len as usize).min(self.buf_size),
                    };
                    match fail {
                        None => out.push_back(Event::Recv(buf)),
                        Some(f) => out.push_back(Event::RecvFailed(f)), // `buf` re-posts
                    }
                }
                1 if (c.idx as usize) < self.slots.len()
                    && !matches!(self.slots[c.idx as usize], Slot::Free) =>
                {
                    let was = std::mem::replace(&mut self.slots[c.idx as usize], Slot::Free);
                    self.free.push(c.idx);
                    // The provider is done with the slot's memory: kept bytes may go back.
                    let rma = matches!(was, Slot::Rma { .. });
                    let bytes = match was {
                        Slot::Rma {
                            _keep: Keep::Bytes(b),
                        } => Some(b),
                        _ => None,
                    };
                    match (fail, rma) {
                        (Some(f), _) => out.push_back(Event::OpFailed(c.idx, f, bytes)),
                        (None, true) => out.push_back(Event::RmaDone(c.idx, bytes)),
                        (None, false) => out.push_back(Event::SendDone(c.idx)),
                    }
                }
                _ => out.push_back(Event::Other(fail.unwrap_or(Fail {
                    code: 0,
                    text: format!(
                        "completion for an unknown operation (kind {}, index {})",
                        c.kind, c.idx
                    ),
                }))),
            }
        }
        Ok(n)
    }

    fn fail_of(&self, c: RawCompletion) -> Fail {
        // SAFETY: nf_ofi_errtext returns the endpoint's NUL-terminated text buffer,
        // written by the poll call that returned this error completion.
        let prov = unsafe { CStr::from_ptr((self.handle.shim.errtext)(self.raw())) }
            .to_string_lossy()
            .into_owned();
        let mut text = strerror(c.err);
        if !prov.is_empty() {
            text = format!("{text} ({prov}, provider errno {})", c.prov_errno);
        }
        Fail { code: c.err, text }
    }
}
