//! Everything `unsafe` of the ofi transport: loading the shim and calling into it.
//!
//! The shim (`shim/nf_ofi_shim.c`, built by `build.rs` into its own shared object) wraps
//! libfabric's inline API in plain functions. Rules that make the safe types below sound:
//! 1. The shim is loaded once per process and never unloaded (a `OnceLock` holds the
//!    library), so its function pointers stay valid for the life of the process.
//! 2. An endpoint ([`Handle`]) is closed only when the last of its owners is gone: the
//!    [`Endpoint`] (the transport), every [`RxBuf`] (a received packet) and every
//!    [`Region`] hold an `Arc` of it.
//! 3. Only [`Endpoint`] calls into the provider. It is `Send` but not `Sync` and takes
//!    `&mut self` for every provider call: one thread at a time (`FI_THREAD_DOMAIN`).
//! 4. A receive buffer is either posted (the provider may write it) or owned by exactly
//!    one [`RxBuf`] (we only read it). `Endpoint` keeps `rx_posted` and makes an `RxBuf`
//!    only from the completion of a posted buffer; dropping the `RxBuf` queues its
//!    index, which the owner re-posts ([`Endpoint::repost`]).
//! 5. A send slot is free (only we touch its bytes) or in flight (only the provider
//!    reads them) until its completion; [`Endpoint::send`] fills only a free slot. An RMA
//!    operation keeps its [`Region`] alive in its slot until it completes.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// The shim's interface version (`NF_OFI_ABI` in the C file).
const ABI: c_int = 1;
/// `EAGAIN`: the provider has no resources now; retry after progress.
pub(crate) const FI_EAGAIN: i32 = 11;
/// `ENODATA`: `fi_getinfo` found no matching provider.
pub(crate) const FI_ENODATA: i32 = 61;
/// `FI_ETRUNC`: a message was longer than the receive buffer.
pub(crate) const FI_ETRUNC: i32 = 265;
/// Completions read per call into the shim.
const BATCH: usize = 16;

/// An opaque `struct nf_ep`.
#[repr(C)]
struct RawEp {
    _private: [u8; 0],
}

/// An opaque `struct nf_mr`.
#[repr(C)]
struct RawMr {
    _private: [u8; 0],
}

/// `struct nf_open_args`.
#[repr(C)]
struct OpenArgs {
    provider: *const c_char,
    node: *const c_char,
    domain: *const c_char,
    rx_count: u64,
    tx_count: u64,
    buf_size: u64,
    npeers: u64,
    want_rma: i32,
}

/// `struct nf_ep_info`.
#[repr(C)]
struct RawInfo {
    rx_base: *mut u8,
    tx_base: *mut u8,
    buf_size: u64,
    inject_size: u64,
    mr_mode: u64,
    max_msg_size: u64,
    rma: i32,
    provider: [c_char; 64],
    fabric: [c_char; 64],
    domain: [c_char; 64],
}

/// `struct nf_completion`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawCompletion {
    kind: u32,
    idx: u32,
    len: u64,
    err: i32,
    prov_errno: i32,
}

/// The shim's functions, resolved once.
struct Shim {
    abi: unsafe extern "C" fn() -> c_int,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    version: unsafe extern "C" fn() -> u32,
    open: unsafe extern "C" fn(*const OpenArgs, *mut *mut RawEp, *mut c_char, usize) -> c_int,
    close: unsafe extern "C" fn(*mut RawEp),
    info: unsafe extern "C" fn(*const RawEp, *mut RawInfo) -> c_int,
    getname: unsafe extern "C" fn(*mut RawEp, *mut c_void, *mut usize) -> c_int,
    insert: unsafe extern "C" fn(*mut RawEp, u64, *const c_void, usize) -> c_int,
    post_recv: unsafe extern "C" fn(*mut RawEp, u64) -> c_int,
    send: unsafe extern "C" fn(*mut RawEp, u64, u64, u64, i32) -> c_int,
    poll: unsafe extern "C" fn(*mut RawEp, *mut RawCompletion, usize) -> c_int,
    errtext: unsafe extern "C" fn(*const RawEp) -> *const c_char,
    mr_alloc: unsafe extern "C" fn(*mut RawEp, u64, *mut *mut RawMr, *mut u64, *mut u64) -> c_int,
    mr_buf: unsafe extern "C" fn(*const RawMr) -> *mut u8,
    mr_free: unsafe extern "C" fn(*mut RawMr),
    #[allow(clippy::type_complexity)]
    rma: unsafe extern "C" fn(*mut RawEp, i32, u64, u64, *mut RawMr, u64, u64, u64, u64) -> c_int,
    /// Keeps the code behind the pointers above mapped (rule 1).
    _lib: libloading::Library,
}

/// Where the shim is: `NF_OFI_SHIM` at run time, else the path baked in by `build.rs`.
fn shim_path() -> Result<String, String> {
    if let Ok(p) = std::env::var("NF_OFI_SHIM") {
        return Ok(p);
    }
    match option_env!("NF_OFI_SHIM_BUILT") {
        Some(p) => Ok(p.to_owned()),
        None => Err(option_env!("NF_OFI_UNAVAILABLE")
            .unwrap_or("built without libfabric-dev; install it and rebuild")
            .to_owned()),
    }
}

fn load() -> Result<Shim, String> {
    let path = shim_path()?;
    // SAFETY: loading runs the shim's and libfabric's initialisers, which have no
    // preconditions; the library is kept for the life of the process (rule 1).
    let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| {
        format!(
            "cannot load the libfabric shim {path}: {e} (is libfabric1 installed, and was \
             the shim built on this machine? scripts/setup.sh installs libfabric)"
        )
    })?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is one of the shim's exported functions and the field
            // it is stored in has the C signature declared in nf_ofi_shim.c (checked by
            // the ABI number below); the pointer is copied out and stays valid while
            // `lib` lives, which is forever (rule 1).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("libfabric shim {path} lacks {}: {e}", $name))?
        };
    }
    let shim = Shim {
        abi: sym!("nf_ofi_abi"),
        strerror: sym!("nf_ofi_strerror"),
        version: sym!("nf_ofi_version"),
        open: sym!("nf_ofi_open"),
        close: sym!("nf_ofi_close"),
        info: sym!("nf_ofi_info"),
        getname: sym!("nf_ofi_getname"),
        insert: sym!("nf_ofi_insert"),
        post_recv: sym!("nf_ofi_post_recv"),
        send: sym!("nf_ofi_send"),
        poll: sym!("nf_ofi_poll"),
        errtext: sym!("nf_ofi_errtext"),
        mr_alloc: sym!("nf_ofi_mr_alloc"),
        mr_buf: sym!("nf_ofi_mr_buf"),
        mr_free: sym!("nf_ofi_mr_free"),
        rma: sym!("nf_ofi_rma"),
        _lib: lib,
    };
    // SAFETY: nf_ofi_abi takes nothing and returns a constant.
    let abi = unsafe { (shim.abi)() };
    if abi != ABI {
        return Err(format!(
            "libfabric shim {path} has interface version {abi}, this build expects {ABI}; \
             rebuild ninefold"
        ));
    }
    Ok(shim)
}

/// The loaded shim, or why it cannot be loaded (the same answer every time).
fn shim() -> Result<&'static Shim, String> {
    static SHIM: OnceLock<Result<Shim, String>> = OnceLock::new();
    SHIM.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Whether the shim and libfabric load, and libfabric's version (major, minor).
pub(crate) fn available() -> Result<(u32, u32), String> {
    let s = shim()?;
    // SAFETY: fi_version takes nothing.
    let v = unsafe { (s.version)() };
    Ok((v >> 16, v & 0xffff))
}

/// libfabric's text for a (positive or negative) fi_errno.
pub(crate) fn strerror(code: i32) -> String {
    match shim() {
        // SAFETY: fi_strerror returns a pointer to a static NUL-terminated string for
        // any input.
        Ok(s) => unsafe { CStr::from_ptr((s.strerror)(code)) }
            .to_string_lossy()
            .into_owned(),
        Err(_) => format!("fi_errno {code}"),
    }
}

/// A failed call: the (positive) fi_errno and what the shim said about it.
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    /// Positive fi_errno.
    pub code: i32,
    /// The failing step and libfabric's text.
    pub text: String,
}

impl Fail {
    fn from_ret(ret: c_int) -> Self {
        let code = ret.abs();
        Fail {
            code,
            text: strerror(code),
        }
    }
}

/// Turns a shim return value (negative fi_errno on failure) into a `Result`.
fn check(ret: c_int) -> Result<c_int, Fail> {
    if ret < 0 {
        Err(Fail::from_ret(ret))
    } else {
        Ok(ret)
    }
}

fn text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Locks a mutex, recovering the data if a thread panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open endpoint of the shim; closed when the last owner drops it (rule 2).
struct Handle {
    shim: &'static Shim,
    raw: NonNull<RawEp>,
}

// SAFETY: the handle is a pointer to an endpoint that no thread calls through except
// the single `Endpoint` (rule 3); `Drop` runs once, when no one else holds it.
unsafe impl Send for Handle {}
// SAFETY: a shared `&Handle` offers no method that calls the provider.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nf_ofi_open, is closed exactly once, here, and no
        // buffer, region or endpoint user is left (they all hold this Arc).
        unsafe { (self.shim.close)(self.raw.as_ptr()) }
    }
}

/// The receive pool as seen by packets: memory to read and a queue of buffers to re-post.
struct RxShared {
    /// Keeps the pool (and endpoint) alive while packets use it (rule 2).
    _handle: Arc<Handle>,
    base: *const u8,
    buf_size: usize,
    /// Indices of dropped `RxBuf`s, waiting for the owner to re-post them.
    returned: Mutex<Vec<u32>>,
    /// `returned.len()`, readable without the lock.
    count: AtomicUsize,
}

// SAFETY: `base` points into the pool, which lives as long as `handle`; a buffer is read
// through it only by the single `RxBuf` that owns it (rule 4).
unsafe impl Send for RxShared {}
// SAFETY: as above; `returned` and `count` are synchronised.
unsafe impl Sync for RxShared {}

/// A received buffer, owned until dropped; then it goes back to be re-posted (rule 4).
pub(crate) struct RxBuf {
    pool: Arc<RxShared>,
    idx: u32,
    len: usize,
}

impl RxBuf {
    /// The bytes received.
    pub(crate) fn bytes(&self) -> &[u8] {
        let off = self.idx as usize * self.pool.buf_size;
        // SAFETY: the buffer `idx` is not posted while this RxBuf exists (rule 4), so
        // nothing writes it; `len <= buf_size` was checked when the RxBuf was made, and
        // `idx < rx_count`, so the range lies inside the pool, which outlives `self`
        // through `pool._handle`.
        unsafe { std::slice::from_raw_parts(self.pool.base.add(off), self.len) }
    }
}

impl Drop for RxBuf {
    fn drop(&mut self) {
        let mut q = lock(&self.pool.returned);
        q.push(self.idx);
        self.pool.count.store(q.len(), Ordering::Release);
    }
}

/// A registered memory region, owned by the transport; its memory lives until the
/// last operation using it has completed (rule 5).
pub(crate) struct Region {
    handle: Arc<Handle>,
    raw: NonNull<RawMr>,
    buf: *mut u8,
    len: usize,
    /// The key a peer names this region with.
    pub key: u64,
    /// The remote address of byte 0 (0 when the provider addresses by offset).
    pub base: u64,
}

// SAFETY: the region's memory and registration are reached only through the owning
// transport (`&mut` for writes) or through the provider during an operation, and freed
// once, in `Drop`, after the last operation holding it completed.
unsafe impl Send for Region {}
// SAFETY: shared access only reads the fields above or copies out of the memory.
unsafe impl Sync for Region {}

impl Region {
    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `out.len()` bytes from offset `off`; false if out of bounds.
    pub(crate) fn read_at(&self, off: usize, out: &mut [u8]) -> bool {
        if off > self.len || out.len() > self.len - off {
            return false;
        }
        // SAFETY: in bounds (checked); the memory is live while `self` is. Bytes an RMA
        // in flight is writing read as unspecified values, as on any RDMA interface.
        unsafe { std::ptr::copy_nonoverlapping(self.buf.add(off), out.as_mut_ptr(), out.len()) }
        true
    }

    /// Copies `data` to offset `off`; false if out of bounds.
    pub(crate) fn write_at(&self, off: usize, data: &[u8]) -> bool {
        if off > self.len || data.len() > self.len - off {
            return false;
        }
        // SAFETY: in bounds (checked); callers reach this only through `&mut` of the
        // owning transport, so no other thread writes it from our side.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(off), data.len()) }
        true
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nf_ofi_mr_alloc and is freed once; no operation uses
        // it any more (each holds an Arc of this region until its completion); the
        // endpoint is still open (we hold `handle`).
        unsafe { (self.handle.shim.mr_free)(self.raw.as_ptr()) }
    }
}

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
}

/// What the provider granted.
#[derive(Debug, Clone)]
pub(crate) struct Granted {
    pub provider: String,
    pub fabric: String,
    pub domain: String,
    pub inject_size: usize,
    pub rma: bool,
}

/// What a send slot is doing.
enum Slot {
    Free,
    Send,
    /// An RMA operation, keeping its region alive until it completes (rule 5).
    Rma {
        _keep: Arc<Region>,
    },
}

/// Something that happened, read from the completion queue.
pub(crate) enum Event {
    /// A packet arrived in a buffer now owned by the caller.
    Recv(RxBuf),
    /// A receive failed (`FI_ETRUNC`: longer than the buffer); the buffer is re-posted.
    RecvFailed(Fail),
    /// An RMA operation completed.
    RmaDone,
    /// The send in `slot` completed (the slot is free again).
    SendDone(u32),
    /// The send or RMA operation in `slot` failed.
    OpFailed(u32, Fail),
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
        let (mut raw, mut key, mut base) = (std::ptr::null_mut(), 0u64, 0u64);
        // SAFETY: the out-pointers are valid for writes; the shim checks `len`.
        check(unsafe {
            (self.handle.shim.mr_alloc)(self.raw(), len as u64, &mut raw, &mut key, &mut base)
        })?;
        let raw = NonNull::new(raw).ok_or(Fail {
            code: 12,
            text: "nf_ofi_mr_alloc returned no region".into(),
        })?;
        // SAFETY: `raw` is a live region from nf_ofi_mr_alloc.
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

    /// Issues an RMA write (or read) of `[off, off + len)` of `region` to (from) the
    /// peer's `raddr` under `rkey`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rma(
        &mut self,
        write: bool,
        rank: usize,
        region: &Arc<Region>,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u64,
    ) -> Result<Sent, Fail> {
        if off > region.len || len > region.len - off {
            return Err(Fail {
                code: 22,
                text: format!("range {off}+{len} outside a region of {} B", region.len),
            });
        }
        let Some(slot) = self.free.pop() else {
            return Ok(Sent::Busy);
        };
        // SAFETY: the range was checked against the region, which stays alive in the
        // slot until the operation completes (rule 5); the shim checks rank and slot.
        let ret = unsafe {
            (self.handle.shim.rma)(
                self.raw(),
                write as i32,
                rank as u64,
                slot as u64,
                region.raw.as_ptr(),
                off as u64,
                len as u64,
                raddr,
                rkey,
            )
        };
        if ret == 0 {
            self.slots[slot as usize] = Slot::Rma {
                _keep: Arc::clone(region),
            };
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
                    match (fail, was) {
                        (Some(f), _) => out.push_back(Event::OpFailed(c.idx, f)),
                        (None, Slot::Rma { .. }) => out.push_back(Event::RmaDone),
                        (None, _) => out.push_back(Event::SendDone(c.idx)),
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
