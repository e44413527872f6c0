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
//!    operation keeps what its local side lies in ([`Keep`]: its [`Region`], or the
//!    bytes it writes) alive in its slot until it completes; local memory it does not
//!    keep is the caller's to keep valid (`Endpoint::rmav` is `unsafe`).
//! 6. A region over the caller's memory ([`Endpoint::register`]) never frees it: the
//!    caller keeps it mapped until the region is dropped.
//!
//! Here: loading and the C structs; `memory.rs`: receive buffers and regions;
//! `endpoint.rs`: the endpoint and every call into the provider.

mod endpoint;
mod memory;

use nf_sys::setting::Setting;
use nf_sys::shim::ShimSpec;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

pub(crate) use endpoint::{Endpoint, Event, Keep, OpenParams, Sent};
pub(crate) use memory::{Region, RxBuf};

/// The shim's interface version (`NF_OFI_ABI` in the C file).
const ABI: c_int = 2;
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

/// `struct nf_iov`: one local piece of an RMA operation.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawIov {
    pub buf: *mut u8,
    pub len: u64,
}

/// `struct nf_riov`: one remote piece (address as the target's registration names it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawRiov {
    pub addr: u64,
    pub len: u64,
    pub key: u64,
}

/// Most pieces on either side of one RMA operation (`NF_MAX_IOV` in the shim).
pub(crate) const MAX_IOV: usize = 8;

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
    want_wait: i32,
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
    wait_fd: i32,
    msg_order: u64,
    iov_limit: u64,
    rma_iov_limit: u64,
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
    mr_reg: unsafe extern "C" fn(
        *mut RawEp,
        *mut u8,
        u64,
        *mut *mut RawMr,
        *mut u64,
        *mut u64,
    ) -> c_int,
    trywait: unsafe extern "C" fn(*mut RawEp) -> c_int,
    #[allow(clippy::type_complexity)]
    rmav: unsafe extern "C" fn(
        *mut RawEp,
        i32,
        u64,
        u64,
        *mut RawMr,
        *const RawIov,
        u64,
        *const RawRiov,
        u64,
    ) -> c_int,
    /// Keeps the code behind the pointers above mapped (rule 1).
    _lib: nf_sys::shim::Shim,
}

/// What `build.rs` found out about the shim.
const SPEC: ShimSpec = ShimSpec {
    library: "libfabric",
    env: "NF_OFI_SHIM",
    built: option_env!("NF_OFI_SHIM_BUILT"),
    unavailable: option_env!("NF_OFI_UNAVAILABLE"),
    install_hint: "scripts/setup.sh installs libfabric-dev",
    abi_symbol: b"nf_ofi_abi\0",
    abi: ABI,
};

/// `NF_OFI_SHIM`, as `nf config` lists it (in [`crate::SETTINGS`]).
pub(crate) const SHIM_SETTING: Setting = Setting::new(
    SPEC.env,
    "transport",
    "path of the libfabric shim (libnf_ofi_shim.so) to load instead of the one build.rs built",
    "the shim build.rs built (when libfabric-dev was installed)",
);

fn load() -> Result<Shim, String> {
    let lib = nf_sys::shim::Shim::load(&SPEC)?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is one of the shim's exported functions and the field
            // it is stored in has the C signature declared in the shim's C file (checked
            // by the ABI number `load` compared); the pointer stays valid while `lib`
            // lives, which is forever (rule 1).
            unsafe { lib.symbol(concat!($name, "\0").as_bytes()) }?
        };
    }
    Ok(Shim {
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
        mr_reg: sym!("nf_ofi_mr_reg"),
        trywait: sym!("nf_ofi_trywait"),
        rmav: sym!("nf_ofi_rmav"),
        _lib: lib,
    })
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
