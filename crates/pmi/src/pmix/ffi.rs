//! Everything `unsafe` of the PMIx client: loading the shim and calling into it.
//!
//! Rules that make the safe functions below sound:
//! 1. The shim is loaded once per process and never unloaded (a `OnceLock` holds the
//!    library), so its function pointers stay valid for the life of the process.
//! 2. Every pointer handed to the shim is valid for the call: `CString`s for inputs,
//!    Rust buffers with their true capacity for outputs. The shim keeps none of them.
//! 3. PMIx's client state is the process's; [`super::Client`] exists at most once per
//!    process at a time and takes `&mut self`, so calls never overlap.

use nf_sys::setting::Setting;
use nf_sys::shim::ShimSpec;
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::OnceLock;

/// The shim's interface version (`NF_PMIX_ABI` in the C file).
const ABI: c_int = 1;
/// `PMIX_ERR_OUT_OF_RESOURCE`: the output buffer was too small.
const PMIX_ERR_OUT_OF_RESOURCE: c_int = -29;

/// The shim's functions, resolved once.
struct Shim {
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    #[allow(clippy::type_complexity)]
    init: unsafe extern "C" fn(
        *mut c_char,
        usize,
        *mut u32,
        *mut u32,
        *mut u32,
        *mut u32,
        *mut *const c_char,
    ) -> c_int,
    put: unsafe extern "C" fn(*const c_char, *const c_char) -> c_int,
    fence: unsafe extern "C" fn(c_int) -> c_int,
    get: unsafe extern "C" fn(u32, *const c_char, c_int, *mut c_char, usize, *mut usize) -> c_int,
    abort: unsafe extern "C" fn(c_int, *const c_char) -> c_int,
    finalize: unsafe extern "C" fn() -> c_int,
    /// Keeps the code behind the pointers above mapped (rule 1).
    _lib: nf_sys::shim::Shim,
}

/// What `build.rs` found out about the shim.
const SPEC: ShimSpec = ShimSpec {
    library: "PMIx",
    env: "NF_PMIX_SHIM",
    built: option_env!("NF_PMIX_SHIM_BUILT"),
    unavailable: option_env!("NF_PMIX_UNAVAILABLE"),
    install_hint: "scripts/setup.sh installs libpmix-dev",
    abi_symbol: b"nf_pmix_abi\0",
    abi: ABI,
};

/// `NF_PMIX_SHIM`, as `nf config` lists it (in [`crate::SETTINGS`]).
pub(crate) const SHIM_SETTING: Setting = Setting::new(
    SPEC.env,
    "pmi",
    "path of the PMIx shim (libnf_pmix_shim.so) to load instead of the one build.rs built",
    "the shim build.rs built (when libpmix-dev was installed)",
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
        error_string: sym!("nf_pmix_error_string"),
        init: sym!("nf_pmix_init"),
        put: sym!("nf_pmix_put"),
        fence: sym!("nf_pmix_fence"),
        get: sym!("nf_pmix_get"),
        abort: sym!("nf_pmix_abort"),
        finalize: sym!("nf_pmix_finalize"),
        _lib: lib,
    })
}

/// The loaded shim, or why it cannot be loaded (the same answer every time).
fn shim() -> Result<&'static Shim, String> {
    static SHIM: OnceLock<Result<Shim, String>> = OnceLock::new();
    SHIM.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Whether the PMIx shim loads in this process.
pub(crate) fn available() -> Result<(), String> {
    shim().map(drop)
}

/// A failed PMIx call: its status and PMIx's text for it.
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    /// The (negative) pmix_status_t.
    pub status: i32,
    /// PMIx's name for it, e.g. `PMIX_ERR_TIMEOUT`.
    pub text: String,
}

fn fail(s: &Shim, status: c_int) -> Fail {
    // SAFETY: PMIx_Error_string returns a pointer to a static NUL-terminated string
    // for any status.
    let text = unsafe { CStr::from_ptr((s.error_string)(status)) }
        .to_string_lossy()
        .into_owned();
    Fail { status, text }
}

fn check(s: &Shim, status: c_int) -> Result<(), Fail> {
    if status == 0 {
        Ok(())
    } else {
        Err(fail(s, status))
    }
}

/// A string for C, or a `Fail` naming the NUL byte inside it.
fn c_string(what: &str) -> Result<CString, Fail> {
    CString::new(what).map_err(|_| Fail {
        status: -1,
        text: format!("{what:?} contains a NUL byte"),
    })
}

/// What `PMIx_Init` told us about this process.
pub(crate) struct Joined {
    pub nspace: String,
    pub rank: u32,
    pub size: u32,
    pub local_rank: u32,
    pub local_size: u32,
}

/// Joins the job; on failure also says which step (`PMIx_Init` or an attribute).
pub(crate) fn init() -> Result<Result<Joined, (String, Fail)>, String> {
    let s = shim()?;
    let mut nspace = [0 as c_char; 256];
    let (mut rank, mut size, mut lrank, mut lsize) = (0u32, 0u32, 0u32, 0u32);
    let mut failed: *const c_char = std::ptr::null();
    // SAFETY: every pointer is to a live local of the declared type; `nspace` has the
    // capacity passed (rule 2).
    let status = unsafe {
        (s.init)(
            nspace.as_mut_ptr(),
            nspace.len(),
            &mut rank,
            &mut size,
            &mut lrank,
            &mut lsize,
            &mut failed,
        )
    };
    if status != 0 {
        let step = if failed.is_null() {
            "PMIx_Init".to_owned()
        } else {
            // SAFETY: the shim sets `failed` to a static NUL-terminated string.
            unsafe { CStr::from_ptr(failed) }
                .to_string_lossy()
                .into_owned()
        };
        return Ok(Err((step, fail(s, status))));
    }
    // SAFETY: the shim wrote a NUL-terminated string into `nspace` (snprintf).
    let nspace = unsafe { CStr::from_ptr(nspace.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(Ok(Joined {
        nspace,
        rank,
        size,
        local_rank: lrank,
        local_size: lsize,
    }))
}

/// The shim, once [`init`] succeeded (it loaded then).
fn loaded() -> &'static Shim {
    shim().expect("the PMIx shim loaded before init")
}

/// `PMIx_Put(PMIX_GLOBAL, key, value)`.
pub(crate) fn put(key: &str, value: &str) -> Result<(), Fail> {
    let s = loaded();
    let (k, v) = (c_string(key)?, c_string(value)?);
    // SAFETY: both are valid NUL-terminated strings for the call (rule 2).
    check(s, unsafe { (s.put)(k.as_ptr(), v.as_ptr()) })
}

/// `PMIx_Commit` then a data-collecting `PMIx_Fence` of the whole job.
pub(crate) fn fence(timeout_s: i32) -> Result<(), Fail> {
    let s = loaded();
    // SAFETY: takes an integer only.
    check(s, unsafe { (s.fence)(timeout_s) })
}

/// `PMIx_Get` of the string `rank` put under `key`.
pub(crate) fn get(rank: u32, key: &str, timeout_s: i32) -> Result<String, Fail> {
    let s = loaded();
    let k = c_string(key)?;
    let mut buf = vec![0 as c_char; 1024];
    loop {
        let mut len = 0usize;
        // SAFETY: `k` is a valid C string; `buf` has the capacity passed; `len` is a
        // live local (rule 2).
        let status = unsafe {
            (s.get)(
                rank,
                k.as_ptr(),
                timeout_s,
                buf.as_mut_ptr(),
                buf.len(),
                &mut len,
            )
        };
        if status == PMIX_ERR_OUT_OF_RESOURCE && len + 1 > buf.len() {
            buf.resize(len + 1, 0);
            continue;
        }
        check(s, status)?;
        // SAFETY: on success the shim copied a NUL-terminated string into `buf`.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        return Ok(text.to_string_lossy().into_owned());
    }
}

/// `PMIx_Abort(status, msg)`.
pub(crate) fn abort(status: i32, msg: &str) -> Result<(), Fail> {
    let s = loaded();
    let m = c_string(&msg.replace('\0', " "))?;
    // SAFETY: `m` is a valid C string for the call (rule 2).
    check(s, unsafe { (s.abort)(status, m.as_ptr()) })
}

/// `PMIx_Finalize`.
pub(crate) fn finalize() -> Result<(), Fail> {
    let s = loaded();
    // SAFETY: takes nothing.
    check(s, unsafe { (s.finalize)() })
}
