//! Contiguous put / get / accumulate (blocking and `Nb`), the single-value calls
//! (`NbPutValue*` too), `ARMCI_Put_flag` and `ARMCI_Copy`.
//!
//! ARMCI names the two sides `src` and `dst`: for a put `src` is local and `dst`
//! remote, for a get the other way round. A length of 0 moves nothing and succeeds.

use std::ffi::{c_int, c_long, c_void};

use nf_rma::{Kind, Shape, Xfer};

use crate::args::{count, describe, nonnull, proc, scale};
use crate::ffi::fatal;
use crate::issue::{run, Mode};
use crate::nonblocking::ArmciHdl;
use crate::state::with;

/// A contiguous transfer of `bytes` between ARMCI's `src` and `dst` on `p`; for a get
/// the local side is `dst`, otherwise `src`.
fn contig(
    call: &str,
    kind: impl FnOnce() -> Kind,
    src: *const c_void,
    dst: *const c_void,
    bytes: c_int,
    p: c_int,
    mode: Mode,
) -> c_int {
    with(call, |st| {
        let p = proc(call, st, p);
        let n = count(call, "bytes", bytes);
        if n == 0 {
            return 0;
        }
        let kind = kind();
        let get = matches!(kind, Kind::Get);
        let (local, remote, remote_arg) = if get {
            (("dst", dst), ("src", src), "src")
        } else {
            (("src", src), ("dst", dst), "dst")
        };
        let (lp, rp) = (
            nonnull(call, local.0, local.1),
            nonnull(call, remote.0, remote.1) as u64,
        );
        if let (Mode::Blocking, Kind::Put | Kind::Get) = (mode, kind) {
            // Same node: the rma layer's direct path is one copy through the mapped
            // segment, complete at once; doing it here skips describing the transfer.
            // Anything else (another node, an address outside every segment) takes
            // the general path, which also words the errors.
            if let Ok(Some(there)) = st.rma.local_ptr(p, rp, n) {
                let (from, to) = if get { (there, lp) } else { (lp, there) };
                // SAFETY: `there` lies in a live segment mapped here (checked by
                // local_ptr) and ARMCI's contract makes `lp` valid for `n` bytes;
                // `copy` allows overlap (a process copying within its own segment).
                unsafe { std::ptr::copy(from, to, n) };
                return 0;
            }
        }
        let x = Xfer {
            kind,
            proc: p,
            shape: Shape::Contig {
                local: lp,
                remote: rp,
                bytes: n,
            },
        };
        // SAFETY: ARMCI's contract: the local side holds `bytes` valid bytes until
        // the operation completes (for Nb, until its handle is waited for).
        unsafe { run(call, remote_arg, st, &x, mode) }
    })
}

fn put(call: &str, src: *const c_void, dst: *mut c_void, bytes: c_int, p: c_int) -> c_int {
    contig(call, || Kind::Put, src, dst, bytes, p, Mode::Blocking)
}

fn get(call: &str, src: *mut c_void, dst: *mut c_void, bytes: c_int, p: c_int) -> c_int {
    contig(call, || Kind::Get, src, dst, bytes, p, Mode::Blocking)
}

/// The accumulate of `datatype` scaled by `*sc`.
fn acc_kind(call: &str, datatype: c_int, sc: *mut c_void) -> impl FnOnce() -> Kind + '_ {
    move || Kind::Acc(scale(call, datatype, sc))
}

/// `ARMCI_Put`.
#[no_mangle]
pub extern "C" fn PARMCI_Put(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    put("ARMCI_Put", src, dst, bytes, proc)
}

/// `ARMCI_Get`.
#[no_mangle]
pub extern "C" fn PARMCI_Get(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    get("ARMCI_Get", src, dst, bytes, proc)
}

/// `ARMCI_Acc`.
#[no_mangle]
pub extern "C" fn PARMCI_Acc(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Acc";
    contig(
        call,
        acc_kind(call, datatype, scale),
        src,
        dst,
        bytes,
        proc,
        Mode::Blocking,
    )
}

/// `ARMCI_NbPut`.
#[no_mangle]
pub extern "C" fn PARMCI_NbPut(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    contig(
        "ARMCI_NbPut",
        || Kind::Put,
        src,
        dst,
        bytes,
        proc,
        Mode::Nb(hdl),
    )
}

/// `ARMCI_NbGet`.
#[no_mangle]
pub extern "C" fn PARMCI_NbGet(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    contig(
        "ARMCI_NbGet",
        || Kind::Get,
        src,
        dst,
        bytes,
        proc,
        Mode::Nb(hdl),
    )
}

/// `ARMCI_NbAcc`.
#[no_mangle]
pub extern "C" fn PARMCI_NbAcc(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    let call = "ARMCI_NbAcc";
    contig(
        call,
        acc_kind(call, datatype, scale),
        src,
        dst,
        bytes,
        proc,
        Mode::Nb(hdl),
    )
}

/// Fences `p`, then stores `value` into the remote int `flag`: the flag arrives after
/// the data before it.
pub fn raise_flag(call: &str, flag: *mut c_int, value: c_int, p: c_int) -> c_int {
    with(call, |st| {
        let q = proc(call, st, p);
        st.rma
            .fence(q)
            .unwrap_or_else(|e| fatal(call, describe("dst", &e)));
    });
    put_value(call, value, flag.cast(), p)
}

/// `ARMCI_Put_flag`: put, then set the remote flag.
#[no_mangle]
pub extern "C" fn PARMCI_Put_flag(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Put_flag";
    if flag.is_null() {
        fatal(call, "argument 'flag' is NULL");
    }
    put(call, src, dst, bytes, proc);
    raise_flag(call, flag, value, proc)
}

/// Puts one value of type `T`.
fn put_value<T: Copy>(call: &str, v: T, dst: *mut c_void, p: c_int) -> c_int {
    let n = std::mem::size_of::<T>() as c_int;
    put(call, (&v as *const T).cast(), dst, n, p)
}

/// Gets one value of type `T`.
fn get_value<T: Copy + Default>(call: &str, src: *mut c_void, p: c_int) -> T {
    let mut v = T::default();
    let n = std::mem::size_of::<T>() as c_int;
    get(call, src, (&mut v as *mut T).cast(), n, p);
    v
}

/// `ARMCI_PutValueInt`.
#[no_mangle]
pub extern "C" fn PARMCI_PutValueInt(src: c_int, dst: *mut c_void, proc: c_int) -> c_int {
    put_value("ARMCI_PutValueInt", src, dst, proc)
}

/// `ARMCI_PutValueLong`.
#[no_mangle]
pub extern "C" fn PARMCI_PutValueLong(src: c_long, dst: *mut c_void, proc: c_int) -> c_int {
    put_value("ARMCI_PutValueLong", src, dst, proc)
}

/// `ARMCI_PutValueFloat`.
#[no_mangle]
pub extern "C" fn PARMCI_PutValueFloat(src: f32, dst: *mut c_void, proc: c_int) -> c_int {
    put_value("ARMCI_PutValueFloat", src, dst, proc)
}

/// `ARMCI_PutValueDouble`.
#[no_mangle]
pub extern "C" fn PARMCI_PutValueDouble(src: f64, dst: *mut c_void, proc: c_int) -> c_int {
    put_value("ARMCI_PutValueDouble", src, dst, proc)
}

/// `ARMCI_NbPutValue*`: a put of one value that is complete on return (the value is
/// in the caller's frame, as in ARMCI-MPI); the handle is left as it was, so waiting
/// on it returns at once.
macro_rules! nb_put_value {
    ($($name:ident: $t:ty),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: a put of one value, complete on return.")]
        #[no_mangle]
        pub extern "C" fn $name(src: $t, dst: *mut c_void, proc: c_int, _hdl: *mut ArmciHdl) -> c_int {
            put_value(&stringify!($name)[1..], src, dst, proc)
        }
    )*};
}

nb_put_value!(
    PARMCI_NbPutValueInt: c_int,
    PARMCI_NbPutValueLong: c_long,
    PARMCI_NbPutValueFloat: f32,
    PARMCI_NbPutValueDouble: f64
);

/// `ARMCI_GetValueInt`.
#[no_mangle]
pub extern "C" fn PARMCI_GetValueInt(src: *mut c_void, proc: c_int) -> c_int {
    get_value("ARMCI_GetValueInt", src, proc)
}

/// `ARMCI_GetValueLong`.
#[no_mangle]
pub extern "C" fn PARMCI_GetValueLong(src: *mut c_void, proc: c_int) -> c_long {
    get_value("ARMCI_GetValueLong", src, proc)
}

/// `ARMCI_GetValueFloat`.
#[no_mangle]
pub extern "C" fn PARMCI_GetValueFloat(src: *mut c_void, proc: c_int) -> f32 {
    get_value("ARMCI_GetValueFloat", src, proc)
}

/// `ARMCI_GetValueDouble`.
#[no_mangle]
pub extern "C" fn PARMCI_GetValueDouble(src: *mut c_void, proc: c_int) -> f64 {
    get_value("ARMCI_GetValueDouble", src, proc)
}

/// `ARMCI_Copy`: a local copy (the ranges may overlap).
#[no_mangle]
pub extern "C" fn ARMCI_Copy(src: *mut c_void, dst: *mut c_void, bytes: c_int) {
    let call = "ARMCI_Copy";
    let n = count(call, "bytes", bytes);
    if n == 0 {
        return;
    }
    let (s, d) = (nonnull(call, "src", src), nonnull(call, "dst", dst));
    // SAFETY: ARMCI's contract: both point to `bytes` valid bytes (checked non-NULL);
    // `copy` allows overlap.
    unsafe { std::ptr::copy(s, d, n) };
}
