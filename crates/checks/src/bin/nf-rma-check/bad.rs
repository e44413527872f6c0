//! Every misuse the API must refuse, each with the error (and text) it must give;
//! afterwards the memory still works.

use nf_rma::{Handle, IoVec, Kind, Rma, RmaError, RmwOp, Scale, Shape, Xfer};

use crate::{ctx, Check};

/// Runs `what`, which must fail with an error matching `ok` whose text contains
/// every word of `text`.
fn refused<T: std::fmt::Debug>(
    case: &str,
    r: Result<T, RmaError>,
    ok: impl Fn(&RmaError) -> bool,
    text: &[&str],
) -> Check {
    match r {
        Err(e) if ok(&e) && text.iter().all(|t| e.to_string().contains(t)) => Ok(()),
        Err(e) => Err(format!("{case}: wrong error: {e:?} ({e})")),
        Ok(v) => Err(format!("{case}: accepted (gave {v:?})")),
    }
}

/// A strided get of `t`'s memory at `b` into `p`.
fn strided_get<'a>(
    p: *mut u8,
    b: u64,
    t: usize,
    ls: &'a [usize],
    rs: &'a [usize],
    count: &'a [usize],
) -> Xfer<'a> {
    Xfer {
        kind: Kind::Get,
        proc: t,
        shape: Shape::Strided {
            local: p,
            local_strides: ls,
            remote: b,
            remote_strides: rs,
            count,
        },
    }
}

pub fn bad_input(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let t = (me + 1) % n;
    let bases = ctx(rma.malloc(4096), "malloc")?;
    let b = bases[t];
    let mut buf = [0u8; 64];
    let p = buf.as_mut_ptr();
    let contig = |kind: Kind, local: *mut u8, remote: u64, bytes: usize, proc: usize| Xfer {
        kind,
        proc,
        shape: Shape::Contig {
            local,
            remote,
            bytes,
        },
    };
    // SAFETY: (every transfer below) the local side is `buf` or null; the library
    // must refuse before touching anything.
    let run = |x: Xfer<'_>| unsafe { rma.xfer(&x) };

    refused(
        "proc out of range",
        run(contig(Kind::Put, p, b, 8, n)),
        |e| matches!(e, RmaError::NoSuchProc { op: "put", .. }),
        &["put", &format!("proc {n}")],
    )?;
    refused(
        "range past the segment end",
        run(contig(Kind::Put, p, b + 4092, 8, t)),
        |e| matches!(e, RmaError::OutOfSegment { op: "put", arg, proc, .. } if arg == "remote" && *proc == t),
        &["not inside any segment"],
    )?;
    refused(
        "address in no segment",
        run(contig(Kind::Get, p, 0x10, 8, t)),
        |e| matches!(e, RmaError::OutOfSegment { op: "get", .. }),
        &["get", "remote"],
    )?;
    refused(
        "null local",
        run(contig(Kind::Put, std::ptr::null_mut(), b, 8, t)),
        |e| matches!(e, RmaError::Null { op: "put", arg } if arg == "local"),
        &["put: local is a null pointer"],
    )?;
    refused(
        "null remote",
        run(contig(Kind::Get, p, 0, 8, t)),
        |e| matches!(e, RmaError::Null { op: "get", arg } if arg == "remote"),
        &[],
    )?;
    refused(
        "zero bytes",
        run(contig(Kind::Put, p, b, 0, t)),
        |e| matches!(e, RmaError::Zero { op: "put", .. }),
        &["bytes"],
    )?;
    let deep = [8usize; 9];
    let counts = [8usize; 10];
    let strided = |ls, rs, c| strided_get(p, b, t, ls, rs, c);
    refused(
        "9 stride levels",
        run(strided(&deep, &deep, &counts)),
        |e| {
            matches!(
                e,
                RmaError::StrideLevels {
                    op: "get_strided",
                    levels: 9,
                    max: 8
                }
            )
        },
        &["9 stride levels exceed the limit of 8"],
    )?;
    refused(
        "count of the wrong length",
        run(strided(&[8], &[8], &[8])),
        |e| matches!(e, RmaError::BadShape { op: "get_strided", arg, .. } if arg == "count"),
        &[],
    )?;
    refused(
        "strided range past the end",
        run(strided(&[1024], &[1024], &[8, 5])),
        |e| {
            matches!(
                e,
                RmaError::OutOfSegment {
                    op: "get_strided",
                    ..
                }
            )
        },
        &[],
    )?;
    refused(
        "accumulate length not a multiple",
        run(contig(Kind::Acc(Scale::Double(1.0)), p, b, 12, t)),
        |e| matches!(e, RmaError::BadShape { op: "acc", .. }),
        &["multiple"],
    )?;
    let locals = [p, p];
    let iov = [IoVec {
        local: &locals,
        remote: &[b],
        bytes: 8,
    }];
    refused(
        "vector lengths differ",
        run(Xfer {
            kind: Kind::Put,
            proc: t,
            shape: Shape::Vector(&iov),
        }),
        |e| {
            matches!(
                e,
                RmaError::BadShape {
                    op: "put_vector",
                    ..
                }
            )
        },
        &["iov[0]"],
    )?;
    let far = [b + 8192];
    let iov = [IoVec {
        local: &locals[..1],
        remote: &far,
        bytes: 8,
    }];
    refused(
        "vector address outside",
        run(Xfer {
            kind: Kind::Put,
            proc: t,
            shape: Shape::Vector(&iov),
        }),
        |e| matches!(e, RmaError::OutOfSegment { arg, .. } if arg == "iov[0].remote[0]"),
        &[],
    )?;
    refused(
        "misaligned rmw",
        rma.rmw(RmwOp::FetchAddInt(1), b + 2, t),
        |e| {
            matches!(
                e,
                RmaError::Misaligned {
                    op: "rmw",
                    align: 4,
                    ..
                }
            )
        },
        &["aligned"],
    )?;
    refused(
        "rmw outside",
        rma.rmw(RmwOp::SwapLong(1), b + 4096, t),
        |e| matches!(e, RmaError::OutOfSegment { op: "rmw", .. }),
        &[],
    )?;
    refused(
        "unknown handle",
        rma.wait(Handle::from_id(1 << 40)),
        |e| matches!(e, RmaError::UnknownHandle { op: "wait", .. }),
        &[],
    )?;
    refused(
        "lock without mutexes",
        rma.lock(0, t),
        |e| {
            matches!(
                e,
                RmaError::NoSuchMutex {
                    op: "lock",
                    mutex: 0,
                    count: 0,
                    ..
                }
            )
        },
        &[],
    )?;
    refused(
        "too many mutexes",
        rma.create_mutexes(if me == 0 { 5000 } else { 1 }),
        |e| {
            matches!(
                e,
                RmaError::Collective {
                    op: "create_mutexes",
                    ..
                }
            )
        },
        &["proc 0 asked for 5000"],
    )?;
    ctx(rma.create_mutexes(1), "create_mutexes")?;
    if rma.same_node(t) {
        refused(
            "unlock not held",
            rma.unlock(0, t),
            |e| {
                matches!(
                    e,
                    RmaError::NotHeld {
                        op: "unlock",
                        mutex: 0,
                        ..
                    }
                )
            },
            &[],
        )?;
    } else {
        // Through the service the refusal comes back with the next fence.
        ctx(rma.unlock(0, t), "unlock (refused later)")?;
        refused(
            "unlock not held",
            rma.fence(t),
            |e| matches!(e, RmaError::Remote { proc, .. } if *proc == t),
            &["is not held"],
        )?;
    }
    ctx(rma.destroy_mutexes(), "destroy_mutexes")?;
    refused(
        "free_local of a stranger",
        rma.free_local(p),
        |e| {
            matches!(
                e,
                RmaError::NotAllocated {
                    op: "free_local",
                    ..
                }
            )
        },
        &[],
    )?;
    refused(
        "malloc_local of nothing",
        rma.malloc_local(0),
        |e| {
            matches!(
                e,
                RmaError::Zero {
                    op: "malloc_local",
                    ..
                }
            )
        },
        &[],
    )?;
    // Every proc passes a wrong base: all refuse alike, and the allocation lives on.
    refused(
        "free of a wrong base",
        rma.free(bases[me] + 8),
        |e| matches!(e, RmaError::NotAllocated { op: "free", .. }),
        &[],
    )?;

    // Nothing above changed anything: a normal round trip still works.
    buf[..8].copy_from_slice(&(me as u64).to_le_bytes());
    ctx(
        // SAFETY: `buf` holds 64 bytes.
        unsafe { rma.put(p, b + 8 * me as u64, 8, t) },
        "put after refusals",
    )?;
    ctx(rma.barrier(), "barrier")?;
    ctx(
        // SAFETY: as above.
        unsafe { rma.get(b + 8 * me as u64, p.wrapping_add(8), 8, t) },
        "get after refusals",
    )?;
    if buf[8..16] != buf[..8] {
        return Err("the round trip after the refusals lost data".into());
    }
    ctx(rma.barrier(), "barrier")?;
    ctx(rma.free(bases[me]), "free")
}
