//! Transfers of every shape, checked against serial expectations.

use nf_rma::{Handle, IoVec, Kind, Rma, Scale, Shape, Xfer};

use crate::model::{chunk_offsets, span};
use crate::{ctx, pattern, Check};

/// This proc's own bytes of a segment, as they are now.
pub fn own_bytes(rma: &Rma<'_>, base: u64, len: usize) -> Result<Vec<u8>, String> {
    let p = ctx(rma.local_ptr(rma.rank(), base, len), "local_ptr")?
        .ok_or("own memory is not directly reachable")?;
    // SAFETY: `p` points at `len` bytes of our own live segment; callers read after a
    // barrier, when nobody writes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) }.to_vec())
}

/// Overwrites this proc's own bytes of a segment.
pub fn set_own_bytes(rma: &Rma<'_>, base: u64, data: &[u8]) -> Check {
    let p = ctx(rma.local_ptr(rma.rank(), base, data.len()), "local_ptr")?
        .ok_or("own memory is not directly reachable")?;
    // SAFETY: as in `own_bytes`; callers write before a barrier, when nobody reads.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    Ok(())
}

fn first_diff(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(a, b)| a != b)
}

pub fn same(what: &str, got: &[u8], want: &[u8]) -> Check {
    match first_diff(got, want) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("{what}: {} B, expected {}", got.len(), want.len())),
        Some(i) => Err(format!(
            "{what}: byte {i} is {:#x}, expected {:#x}",
            got[i], want[i]
        )),
    }
}

pub fn contig(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    const MAX: usize = (3 << 20) + 5;
    let bases = ctx(rma.malloc(n * MAX), "malloc")?;
    let local = ctx(rma.malloc_local(MAX), "malloc_local")?;
    // SAFETY: `local` is MAX bytes from malloc_local, freed at the end.
    let buf = unsafe { std::slice::from_raw_parts_mut(local, MAX) };
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    for (k, &s) in [8usize, 100, 4096, 65539, 1 << 20, MAX].iter().enumerate() {
        let what = k as u64;
        for (i, b) in buf[..s].iter_mut().enumerate() {
            *b = pattern(me, what, i);
        }
        for (t, &base) in bases.iter().enumerate() {
            ctx(
                // SAFETY: `buf` holds `s` readable bytes.
                unsafe { rma.put(local, base + (me * MAX) as u64, s, t) },
                "put",
            )?;
        }
        ctx(rma.barrier(), "barrier")?;
        let mine = own_bytes(rma, bases[me], n * MAX)?;
        for w in 0..n {
            let want: Vec<u8> = (0..s).map(|i| pattern(w, what, i)).collect();
            same(
                &format!("{s} B put by proc {w}"),
                &mine[w * MAX..w * MAX + s],
                &want,
            )?;
        }
        buf[..s].fill(0);
        ctx(
            // SAFETY: `buf` holds `s` writable bytes.
            unsafe { rma.get(bases[next] + (prev * MAX) as u64, local, s, next) },
            "get",
        )?;
        let want: Vec<u8> = (0..s).map(|i| pattern(prev, what, i)).collect();
        same(&format!("{s} B got from proc {next}"), &buf[..s], &want)?;
        ctx(rma.barrier(), "barrier")?;
    }

    // Accumulate doubles (integers, so sums are exact) from every proc into every proc.
    let count = 1 << 17;
    set_own_bytes(rma, bases[me], &vec![0u8; count * 8])?;
    ctx(rma.barrier(), "barrier")?;
    let vals: Vec<f64> = (0..count).map(|i| i as f64).collect();
    for (t, &base) in bases.iter().enumerate() {
        let scale = Scale::Double((me + 1) as f64);
        ctx(
            // SAFETY: `vals` holds count doubles.
            unsafe { rma.acc(scale, vals.as_ptr().cast(), base, count * 8, t) },
            "acc",
        )?;
    }
    ctx(rma.barrier(), "barrier")?;
    let mine = own_bytes(rma, bases[me], count * 8)?;
    let total = (n * (n + 1) / 2) as f64;
    for (i, c) in mine.chunks_exact(8).enumerate() {
        let got = f64::from_le_bytes(c.try_into().expect("8 bytes"));
        if got != i as f64 * total {
            return Err(format!(
                "acc element {i} is {got}, expected {}",
                i as f64 * total
            ));
        }
    }
    ctx(rma.free(bases[me]), "free")?;
    ctx(rma.free_local(local), "free_local")?;

    // Odd procs ask for nothing: their entry is 0 and the others still work.
    let bytes = if me % 2 == 1 { 0 } else { 4096 };
    let some = ctx(rma.malloc(bytes), "malloc with zero-byte procs")?;
    for (p, &b) in some.iter().enumerate() {
        if (b == 0) != (p % 2 == 1) {
            return Err(format!("proc {p}'s base is {b:#x}"));
        }
    }
    let word = 0x5a5a_5a5a_u32.to_le_bytes();
    ctx(
        // SAFETY: `word` holds 4 readable bytes.
        unsafe { rma.put(word.as_ptr(), some[0] + 4 * me as u64, 4, 0) },
        "put to proc 0",
    )?;
    ctx(rma.barrier(), "barrier")?;
    ctx(rma.free(some[me]), "free with zero-byte procs")
}

/// Strides for `count` with per-level padding `pad`, in bytes.
fn strides(count: &[usize], pad: &[usize]) -> Vec<usize> {
    let mut s = Vec::new();
    let mut prev = count[0];
    for k in 1..count.len() {
        let stride = prev + pad[k - 1];
        s.push(stride);
        prev = stride * count[k];
    }
    s
}

pub fn strided(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    const OFF: usize = 8;
    for levels in 1..=4usize {
        let count: Vec<usize> = [24, 3, 2, 3, 2][..=levels].to_vec();
        let ls = strides(&count, &[8, 16, 8, 24]);
        let rs = strides(&count, &[40, 24, 16, 8]);
        let (lspan, rspan) = (span(&count, &ls), span(&count, &rs));
        let lo = chunk_offsets(&count, &ls);
        let ro = chunk_offsets(&count, &rs);
        let seg = rspan + OFF;
        let bases = ctx(rma.malloc(seg), "malloc")?;
        let tag = levels as u64;

        // Put: our pattern, strided, into the next proc's segment.
        let mut local: Vec<u8> = (0..lspan).map(|i| pattern(me, tag, i)).collect();
        let x = Xfer {
            kind: Kind::Put,
            proc: next,
            shape: Shape::Strided {
                local: local.as_mut_ptr(),
                local_strides: &ls,
                remote: bases[next] + OFF as u64,
                remote_strides: &rs,
                count: &count,
            },
        };
        ctx(
            // SAFETY: the local side lies within `local` (lspan bytes).
            unsafe { rma.xfer(&x) },
            &format!("put_strided {levels} levels"),
        )?;
        ctx(rma.barrier(), "barrier")?;
        let mut want = vec![0u8; seg];
        for (l, r) in lo.iter().zip(&ro) {
            for j in 0..count[0] {
                want[OFF + r + j] = pattern(prev, tag, l + j);
            }
        }
        same(
            &format!("put_strided {levels} levels from proc {prev}"),
            &own_bytes(rma, bases[me], seg)?,
            &want,
        )?;
        ctx(rma.barrier(), "barrier")?;

        // Get: the next proc's segment, strided, into our layout.
        let fill: Vec<u8> = (0..seg).map(|i| pattern(me, 100 + tag, i)).collect();
        set_own_bytes(rma, bases[me], &fill)?;
        ctx(rma.barrier(), "barrier")?;
        local.fill(0);
        let x = Xfer {
            kind: Kind::Get,
            proc: next,
            shape: Shape::Strided {
                local: local.as_mut_ptr(),
                local_strides: &ls,
                remote: bases[next] + OFF as u64,
                remote_strides: &rs,
                count: &count,
            },
        };
        ctx(
            // SAFETY: as for the put.
            unsafe { rma.xfer(&x) },
            &format!("get_strided {levels} levels"),
        )?;
        let mut want = vec![0u8; lspan];
        for (l, r) in lo.iter().zip(&ro) {
            for j in 0..count[0] {
                want[l + j] = pattern(next, 100 + tag, OFF + r + j);
            }
        }
        same(
            &format!("get_strided {levels} levels from proc {next}"),
            &local,
            &want,
        )?;
        ctx(rma.barrier(), "barrier")?;

        // Accumulate doubles from every proc into every proc.
        set_own_bytes(rma, bases[me], &vec![0u8; seg])?;
        ctx(rma.barrier(), "barrier")?;
        let mut vals = vec![0u8; lspan];
        for &l in &lo {
            for e in 0..count[0] / 8 {
                let v = (e + 1) as f64;
                vals[l + 8 * e..l + 8 * e + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        for (t, &base) in bases.iter().enumerate() {
            let x = Xfer {
                kind: Kind::Acc(Scale::Double((me + 1) as f64)),
                proc: t,
                shape: Shape::Strided {
                    local: vals.as_mut_ptr(),
                    local_strides: &ls,
                    remote: base + OFF as u64,
                    remote_strides: &rs,
                    count: &count,
                },
            };
            ctx(
                // SAFETY: as for the put.
                unsafe { rma.xfer(&x) },
                &format!("acc_strided {levels} levels"),
            )?;
        }
        ctx(rma.barrier(), "barrier")?;
        let total = (n * (n + 1) / 2) as f64;
        let mut want = vec![0u8; seg];
        for &r in &ro {
            for e in 0..count[0] / 8 {
                let v = (e + 1) as f64 * total;
                want[OFF + r + 8 * e..OFF + r + 8 * e + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        same(
            &format!("acc_strided {levels} levels"),
            &own_bytes(rma, bases[me], seg)?,
            &want,
        )?;
        ctx(rma.free(bases[me]), "free")?;
    }
    Ok(())
}

/// Checks chunk `k` of vector entry `e` (of `shapes[e].0` bytes) in `got` at
/// `at(e, k)`: its byte `j` must be `want(e, k, j)`.
fn vector_chunks(
    what: &str,
    shapes: &[(usize, usize, usize, usize)],
    got: &[u8],
    at: impl Fn(usize, usize) -> usize,
    want: impl Fn(usize, usize, usize) -> u8,
) -> Check {
    for (e, &(bytes, chunks, _, _)) in shapes.iter().enumerate() {
        for k in 0..chunks {
            let expect: Vec<u8> = (0..bytes).map(|j| want(e, k, j)).collect();
            let from = at(e, k);
            same(
                &format!("{what} entry {e} chunk {k}"),
                &got[from..from + bytes],
                &expect,
            )?;
        }
    }
    Ok(())
}

pub fn vector(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    const SEG: usize = 1 << 16;
    let bases = ctx(rma.malloc(SEG), "malloc")?;
    // Two entries: 5 chunks of 16 B and 3 chunks of 40 B, scattered on both sides.
    let shapes = [(16usize, 5usize, 1000usize, 37usize), (40, 3, 7000, 301)];
    let mut local = vec![0u8; 4096];
    let roff = |e: usize, k: usize| shapes[e].2 + k * 997;
    let loff = |e: usize, k: usize| 2048 * e + k * shapes[e].3 % 1024;
    let lp: Vec<Vec<*mut u8>> = (0..2)
        .map(|e| {
            (0..shapes[e].1)
                .map(|k| local.as_mut_ptr().wrapping_add(loff(e, k)))
                .collect()
        })
        .collect();
    let rp = |t: usize| -> Vec<Vec<u64>> {
        (0..2)
            .map(|e| {
                (0..shapes[e].1)
                    .map(|k| bases[t] + roff(e, k) as u64)
                    .collect()
            })
            .collect()
    };
    let rnext = rp(next);
    let iov: Vec<IoVec<'_>> = (0..2)
        .map(|e| IoVec {
            local: &lp[e],
            remote: &rnext[e],
            bytes: shapes[e].0,
        })
        .collect();
    for (i, b) in local.iter_mut().enumerate() {
        *b = pattern(me, 1, i);
    }
    let put = Xfer {
        kind: Kind::Put,
        proc: next,
        shape: Shape::Vector(&iov),
    };
    // SAFETY: every local pointer lies in `local` with its chunk.
    ctx(unsafe { rma.xfer(&put) }, "put_vector")?;
    ctx(rma.barrier(), "barrier")?;
    let mine = own_bytes(rma, bases[me], SEG)?;
    vector_chunks("put_vector", &shapes, &mine, roff, |e, k, j| {
        pattern(prev, 1, loff(e, k) + j)
    })?;
    ctx(rma.barrier(), "barrier")?;

    let fill: Vec<u8> = (0..SEG).map(|i| pattern(me, 2, i)).collect();
    set_own_bytes(rma, bases[me], &fill)?;
    ctx(rma.barrier(), "barrier")?;
    local.fill(0);
    let get = Xfer {
        kind: Kind::Get,
        ..put
    };
    // SAFETY: as for the put.
    ctx(unsafe { rma.xfer(&get) }, "get_vector")?;
    vector_chunks("get_vector", &shapes, &local, loff, |e, k, j| {
        pattern(next, 2, roff(e, k) + j)
    })?;
    ctx(rma.barrier(), "barrier")?;

    // Accumulate ints from every proc into every proc's scattered chunks.
    set_own_bytes(rma, bases[me], &vec![0u8; SEG])?;
    ctx(rma.barrier(), "barrier")?;
    for (i, c) in local.chunks_exact_mut(4).enumerate() {
        c.copy_from_slice(&((i % 7) as i32).to_le_bytes());
    }
    for t in 0..n {
        let rt = rp(t);
        let iov: Vec<IoVec<'_>> = (0..2)
            .map(|e| IoVec {
                local: &lp[e],
                remote: &rt[e],
                bytes: shapes[e].0,
            })
            .collect();
        let acc = Xfer {
            kind: Kind::Acc(Scale::Int(me as i32 + 1)),
            proc: t,
            shape: Shape::Vector(&iov),
        };
        // SAFETY: as for the put.
        ctx(unsafe { rma.xfer(&acc) }, "acc_vector")?;
    }
    ctx(rma.barrier(), "barrier")?;
    let mine = own_bytes(rma, bases[me], SEG)?;
    let total = (n * (n + 1) / 2) as i32;
    for (e, &(bytes, chunks, _, _)) in shapes.iter().enumerate() {
        for k in 0..chunks {
            for w in 0..bytes / 4 {
                let l = loff(e, k) + 4 * w;
                let v = i32::from_le_bytes(local[l..l + 4].try_into().expect("4"));
                let r = roff(e, k) + 4 * w;
                let got = i32::from_le_bytes(mine[r..r + 4].try_into().expect("4"));
                if got != v * total {
                    return Err(format!("acc_vector entry {e} chunk {k} word {w}: {got}"));
                }
            }
        }
    }
    ctx(rma.free(bases[me]), "free")
}

pub fn nonblocking(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    const SEG: usize = 1 << 20;
    const PIECE: usize = 4096;
    let bases = ctx(rma.malloc(SEG), "malloc")?;
    let fill: Vec<u8> = (0..SEG).map(|i| pattern(me, 7, i)).collect();
    set_own_bytes(rma, bases[me], &fill)?;
    ctx(rma.barrier(), "barrier")?;
    let mut bufs = vec![vec![0u8; PIECE]; 64];
    let src = |k: usize| ((me + k) % n, (k * 7919 % (SEG / PIECE)) * PIECE);
    let mut handles: Vec<Handle> = Vec::new();
    for (k, b) in bufs.iter_mut().enumerate() {
        let (t, off) = src(k);
        let x = Xfer {
            kind: Kind::Get,
            proc: t,
            shape: Shape::Contig {
                local: b.as_mut_ptr(),
                remote: bases[t] + off as u64,
                bytes: PIECE,
            },
        };
        // SAFETY: `bufs` outlives every handle (all are waited below).
        handles.push(ctx(unsafe { rma.start(&x) }, "start get")?);
    }
    // Test the even ones until done (bounded), wait for the odd ones.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for (k, h) in handles.iter().enumerate() {
        if k % 2 == 0 {
            while !ctx(rma.test(*h), "test")? {
                if std::time::Instant::now() > deadline {
                    return Err(format!("get {k} never tested complete"));
                }
            }
        } else {
            ctx(rma.wait(*h), "wait")?;
        }
    }
    for (k, b) in bufs.iter().enumerate() {
        let (t, off) = src(k);
        let want: Vec<u8> = (0..PIECE).map(|i| pattern(t, 7, off + i)).collect();
        same(&format!("non-blocking get {k} from proc {t}"), b, &want)?;
    }
    // Implicit handles: completed by wait_proc, then by wait_all.
    for pass in 0..2 {
        for b in bufs.iter_mut() {
            b.fill(0);
        }
        let t = (me + 1 + pass) % n;
        for (k, b) in bufs.iter_mut().enumerate() {
            let x = Xfer {
                kind: Kind::Get,
                proc: t,
                shape: Shape::Contig {
                    local: b.as_mut_ptr(),
                    remote: bases[t] + (k * PIECE) as u64,
                    bytes: PIECE,
                },
            };
            // SAFETY: `bufs` outlives the wait below.
            ctx(unsafe { rma.start_implicit(&x) }, "start_implicit get")?;
        }
        if pass == 0 {
            ctx(rma.wait_proc(t), "wait_proc")?;
        } else {
            ctx(rma.wait_all(), "wait_all")?;
        }
        for (k, b) in bufs.iter().enumerate() {
            let want: Vec<u8> = (0..PIECE).map(|i| pattern(t, 7, k * PIECE + i)).collect();
            same(&format!("implicit get {k} (pass {pass})"), b, &want)?;
        }
    }
    ctx(rma.barrier(), "barrier")?;
    // Non-blocking puts: local completion at once, remote after the fence.
    let mine: Vec<u8> = (0..PIECE).map(|i| pattern(me, 8, i)).collect();
    for (t, &base) in bases.iter().enumerate() {
        let x = Xfer {
            kind: Kind::Put,
            proc: t,
            shape: Shape::Contig {
                local: mine.as_ptr() as *mut u8,
                remote: base + (me * PIECE) as u64,
                bytes: PIECE,
            },
        };
        // SAFETY: a put reads `mine` before returning.
        let h = ctx(unsafe { rma.start(&x) }, "start put")?;
        ctx(rma.wait(h), "wait put")?;
    }
    ctx(rma.barrier(), "barrier")?;
    let got = own_bytes(rma, bases[me], n * PIECE)?;
    for w in 0..n {
        let want: Vec<u8> = (0..PIECE).map(|i| pattern(w, 8, i)).collect();
        same(
            &format!("non-blocking put from {w}"),
            &got[w * PIECE..(w + 1) * PIECE],
            &want,
        )?;
    }
    ctx(rma.free(bases[me]), "free")
}
