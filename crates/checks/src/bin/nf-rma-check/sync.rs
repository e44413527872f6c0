//! Atomicity, mutexes, rmw and asynchronous progress.

use std::time::{Duration, Instant};

use nf_rma::{Rma, RmwOp, Scale};

use crate::shapes::{own_bytes, set_own_bytes};
use crate::{ctx, pattern, Check};

fn word<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b[at..at + N].try_into().expect("in range")
}

pub fn atomicity(rma: &Rma<'_>, iters: usize) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    // Areas: 256 ints, 256 longs, 256 doubles, 128 complex doubles.
    const E: usize = 256;
    let (ints, longs, dbls, cplx) = (0usize, 4 * E, 12 * E, 20 * E);
    let bases = ctx(rma.malloc(36 * E), "malloc")?;
    let ones_i: Vec<i32> = vec![1; E];
    let ones_l: Vec<i64> = vec![1; E];
    let halves: Vec<f64> = (0..E).map(|i| (i % 4) as f64 * 0.5).collect();
    let units: Vec<[f64; 2]> = vec![[1.0, 0.0]; E / 2];
    ctx(rma.barrier(), "barrier")?;
    for _ in 0..iters {
        for (t, &b) in bases.iter().enumerate() {
            // SAFETY: each local vector holds the bytes passed.
            unsafe {
                ctx(
                    rma.acc(
                        Scale::Int(1),
                        ones_i.as_ptr().cast(),
                        b + ints as u64,
                        4 * E,
                        t,
                    ),
                    "acc int",
                )?;
                ctx(
                    rma.acc(
                        Scale::Long(3),
                        ones_l.as_ptr().cast(),
                        b + longs as u64,
                        8 * E,
                        t,
                    ),
                    "acc long",
                )?;
                ctx(
                    rma.acc(
                        Scale::Double(2.0),
                        halves.as_ptr().cast(),
                        b + dbls as u64,
                        8 * E,
                        t,
                    ),
                    "acc double",
                )?;
                ctx(
                    rma.acc(
                        Scale::ComplexDouble([0.0, 1.0]),
                        units.as_ptr().cast(),
                        b + cplx as u64,
                        8 * E,
                        t,
                    ),
                    "acc complex double",
                )?;
            }
        }
    }
    ctx(rma.barrier(), "barrier")?;
    let mine = own_bytes(rma, bases[me], 36 * E)?;
    let k = (iters * n) as i64;
    for i in 0..E {
        let vi = i32::from_le_bytes(word(&mine, ints + 4 * i));
        let vl = i64::from_le_bytes(word(&mine, longs + 8 * i));
        let vd = f64::from_le_bytes(word(&mine, dbls + 8 * i));
        let want_d = (i % 4) as f64 * k as f64;
        if vi as i64 != k || vl != 3 * k || vd != want_d {
            return Err(format!(
                "element {i}: int {vi} (want {k}), long {vl} (want {}), double {vd} (want {want_d})",
                3 * k
            ));
        }
    }
    for i in 0..E / 2 {
        let re = f64::from_le_bytes(word(&mine, cplx + 16 * i));
        let im = f64::from_le_bytes(word(&mine, cplx + 16 * i + 8));
        if re != 0.0 || im != k as f64 {
            return Err(format!("complex {i} is {re}+{im}i, want 0+{k}i"));
        }
    }
    ctx(rma.barrier(), "barrier")?;
    ctx(rma.free(bases[me]), "free")
}

pub fn mutex(rma: &Rma<'_>, iters: usize) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let bases = ctx(rma.malloc(64), "malloc")?;
    ctx(rma.create_mutexes(2), "create_mutexes")?;
    let homes = [(0usize, 0usize), (1, n - 1)];
    for _ in 0..iters {
        for &(m, p) in &homes {
            ctx(rma.lock(m, p), "lock")?;
            let mut v = [0u8; 8];
            ctx(
                // SAFETY: `v` holds 8 bytes.
                unsafe { rma.get(bases[p] + 8 * m as u64, v.as_mut_ptr(), 8, p) },
                "get",
            )?;
            let next = (i64::from_le_bytes(v) + 1).to_le_bytes();
            ctx(
                // SAFETY: `next` holds 8 bytes.
                unsafe { rma.put(next.as_ptr(), bases[p] + 8 * m as u64, 8, p) },
                "put",
            )?;
            ctx(rma.fence(p), "fence")?;
            ctx(rma.unlock(m, p), "unlock")?;
        }
    }
    ctx(rma.barrier(), "barrier")?;
    let mine = own_bytes(rma, bases[me], 16)?;
    for &(m, p) in &homes {
        let got = i64::from_le_bytes(word(&mine, 8 * m));
        if p == me && got != (iters * n) as i64 {
            return Err(format!(
                "counter under mutex {m} is {got}, want {}",
                iters * n
            ));
        }
    }
    ctx(rma.destroy_mutexes(), "destroy_mutexes")?;
    ctx(rma.free(bases[me]), "free")
}

pub fn rmw(rma: &Rma<'_>, iters: usize) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let bases = ctx(rma.malloc(64), "malloc")?;
    let mut tickets = Vec::new();
    for i in 0..iters {
        let t = ctx(
            rma.rmw(RmwOp::FetchAddInt(1), bases[0], 0),
            "fetch-and-add int",
        )?;
        tickets.push(t);
        let big = ctx(
            rma.rmw(RmwOp::FetchAddLong(1 << 33), bases[n - 1] + 8, n - 1),
            "fetch-and-add long",
        )?;
        if big % (1 << 33) != 0 {
            return Err(format!(
                "long ticket {big} at {i} is not a multiple of 2^33"
            ));
        }
    }
    let olds = ctx(
        rma.rmw(RmwOp::SwapLong(me as i64 + 1), bases[0] + 16, 0),
        "swap",
    )?;
    let mine: Vec<u8> = tickets
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .chain(olds.to_le_bytes())
        .collect();
    let all = ctx(rma.wireup().allgather(&mine), "allgather")?;
    ctx(rma.barrier(), "barrier")?;
    let mut seen: Vec<i64> = Vec::new();
    let mut swapped: Vec<i64> = Vec::new();
    for b in &all {
        let v: Vec<i64> = b
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8")))
            .collect();
        seen.extend(&v[..iters]);
        swapped.push(v[iters]);
    }
    seen.sort_unstable();
    if seen != (0..(n * iters) as i64).collect::<Vec<_>>() {
        return Err(format!(
            "fetch-and-add tickets are not 0..{} exactly once",
            n * iters
        ));
    }
    if me == 0 {
        let end = own_bytes(rma, bases[0], 24)?;
        swapped.push(i64::from_le_bytes(word(&end, 16)));
        let count = i64::from_le_bytes(word(&own_bytes(rma, bases[0], 8)?, 0)) as i32;
        if count != (n * iters) as i32 {
            return Err(format!("counter ended at {count}"));
        }
        swapped.sort_unstable();
        if swapped != (0..=n as i64).collect::<Vec<_>>() {
            return Err(format!(
                "swap chain lost or duplicated a value: {swapped:?}"
            ));
        }
    }
    ctx(rma.barrier(), "barrier")?;
    ctx(rma.free(bases[me]), "free")
}

/// Marker values in the target's first word.
const COMPUTING: i64 = 1;
const DONE: i64 = 2;

pub fn progress(rma: &Rma<'_>, seconds: u64) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    if n < 2 {
        return Err("progress needs 2 procs".into());
    }
    const SEG: usize = 1 << 20;
    const DATA: usize = 4096;
    let target = n - 1;
    let bases = ctx(rma.malloc(SEG), "malloc")?;
    if me == target {
        let mut fill: Vec<u8> = (0..SEG).map(|i| pattern(me, 3, i)).collect();
        fill[..8].copy_from_slice(&COMPUTING.to_le_bytes());
        fill[8..16].copy_from_slice(&0i64.to_le_bytes());
        set_own_bytes(rma, bases[me], &fill)?;
    }
    ctx(rma.barrier(), "barrier")?;
    if me == target {
        let p = ctx(rma.local_ptr(me, bases[me], 16), "local_ptr")?.ok_or("own memory")?;
        let (marker, flag) = (p.cast::<i64>(), p.wrapping_add(8).cast::<i64>());
        // Compute, with no library call, until proc 0 releases us (or a generous
        // bound against hangs passes).
        let bound = Duration::from_secs(seconds * 4 + 60);
        let start = Instant::now();
        let mut x = 1.0f64;
        // SAFETY: both words lie in our live segment; volatile because another process
        // or our service thread writes the flag.
        while unsafe { flag.read_volatile() } == 0 {
            for _ in 0..100_000 {
                x = x * 1.000_000_1 + 1.0;
            }
            if start.elapsed() > bound {
                return Err(format!(
                    "nobody released the target within {bound:?} (x = {x})"
                ));
            }
        }
        // SAFETY: as above.
        unsafe { marker.write_volatile(DONE) };
        println!(
            "rank {me}: computed {:?} without calling the library",
            start.elapsed()
        );
    } else if me == 0 {
        let mut buf = vec![0u8; DATA];
        let start = Instant::now();
        let mut gets = 0u64;
        while gets < 100 || start.elapsed() < Duration::from_secs(seconds) {
            let off = 8 + (gets as usize * 4099) % (SEG - DATA - 8);
            let off = off - off % 8;
            ctx(
                // SAFETY: `buf` holds DATA bytes.
                unsafe { rma.get(bases[target], buf.as_mut_ptr(), 8, target) },
                "get marker",
            )?;
            let marker = i64::from_le_bytes(word(&buf, 0));
            if marker != COMPUTING {
                return Err(format!(
                    "get {gets}: the target's marker is {marker}: it stopped computing"
                ));
            }
            ctx(
                // SAFETY: as above.
                unsafe { rma.get(bases[target] + off as u64, buf.as_mut_ptr(), DATA, target) },
                "get",
            )?;
            if let Some(i) =
                (0..DATA).find(|&i| i + off >= 16 && buf[i] != pattern(target, 3, off + i))
            {
                return Err(format!(
                    "get {gets}: byte {} of the target's memory is wrong",
                    off + i
                ));
            }
            gets += 1;
        }
        println!("rank 0: {gets} gets completed while proc {target} computed");
        let one = 1i64.to_le_bytes();
        ctx(
            // SAFETY: `one` holds 8 bytes.
            unsafe { rma.put(one.as_ptr(), bases[target] + 8, 8, target) },
            "put flag",
        )?;
        ctx(rma.fence(target), "fence")?;
    }
    ctx(rma.barrier(), "barrier")?;
    if me == target {
        let end = own_bytes(rma, bases[me], 16)?;
        if i64::from_le_bytes(word(&end, 0)) != DONE || i64::from_le_bytes(word(&end, 8)) != 1 {
            return Err("the target left its loop without the flag".into());
        }
    }
    ctx(rma.free(bases[me]), "free")
}
