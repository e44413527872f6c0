//! `Rma::adopt`: a page-aligned range of this program's bss becomes a segment in
//! place — its bytes stay, every proc reaches it by the address the adoption returned
//! (put, get, rmw on every path), a misaligned range is refused, and freeing puts it
//! back on private memory with its bytes, never into the cache of freed allocations.

use nf_rma::{Rma, RmaError, RmwOp};

use crate::{ctx, pattern, Check};

/// Bytes adopted: three pages of 4 KiB.
const LEN: usize = 3 * 4096;

/// Page-aligned bss of this program standing in for an executable's data.
#[repr(C, align(4096))]
struct Pages([u8; LEN]);

static mut STATIC: Pages = Pages([0; LEN]);

/// Whether the mapping holding `addr` is shared (`s` in `/proc/self/maps`).
fn shared(addr: usize) -> Result<bool, String> {
    let maps = ctx(std::fs::read_to_string("/proc/self/maps"), "reading maps")?;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (range, perms) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let lo = usize::from_str_radix(lo, 16).unwrap_or(usize::MAX);
        let hi = usize::from_str_radix(hi, 16).unwrap_or(0);
        if (lo..hi).contains(&addr) {
            return Ok(perms.ends_with('s'));
        }
    }
    Err(format!("{addr:#x} is in no mapping"))
}

/// See the module docs.
pub fn adopt(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let at = (&raw mut STATIC).cast::<u8>();
    // SAFETY: this thread alone touches STATIC, and only through `mem` and the rma
    // layer (which reaches it once adopted).
    let mem = unsafe { std::slice::from_raw_parts_mut(at, LEN) };
    for (i, b) in mem.iter_mut().enumerate() {
        *b = pattern(me, 1, i);
    }
    // SAFETY: one past the start is not page-aligned: refused before anything happens.
    match unsafe { rma.adopt(at.wrapping_add(1), LEN) } {
        Err(RmaError::Misaligned { .. }) => {}
        other => return Err(format!("a misaligned adoption gave {other:?}")),
    }
    // SAFETY: bss of this program (never unmapped), written by no other thread.
    let bases = ctx(unsafe { rma.adopt(at, LEN) }, "adopt")?;
    if bases[me] != at as u64 || !shared(at as usize)? {
        return Err(format!(
            "adopted at {:#x}, not in place at {at:p}",
            bases[me]
        ));
    }
    if let Some(i) = (0..LEN).find(|&i| mem[i] != pattern(me, 1, i)) {
        return Err(format!("byte {i} changed on adoption"));
    }
    rma.barrier().map_err(|e| e.to_string())?;
    let out: Vec<u8> = (0..LEN).map(|i| pattern(me, 2, i)).collect();
    // SAFETY: `out` is LEN readable bytes.
    let put = unsafe { rma.put(out.as_ptr(), bases[right], LEN, right) };
    ctx(put, "put")?;
    rma.barrier().map_err(|e| e.to_string())?;
    let mut got = vec![0u8; LEN];
    // SAFETY: `got` is LEN writable bytes.
    let get = unsafe { rma.get(bases[right], got.as_mut_ptr(), LEN, right) };
    ctx(get, "get")?;
    if let Some(i) = (0..LEN).find(|&i| got[i] != pattern(me, 2, i)) {
        return Err(format!("get from proc {right}: byte {i} differs"));
    }
    rma.barrier().map_err(|e| e.to_string())?;
    ctx(rma.rmw(RmwOp::FetchAddLong(1), bases[0], 0), "rmw")?;
    rma.barrier().map_err(|e| e.to_string())?;
    let first = u64::from_le_bytes(mem[..8].try_into().expect("8 bytes"));
    let put_first = u64::from_le_bytes(
        (0..8)
            .map(|i| pattern(left, 2, i))
            .collect::<Vec<_>>()
            .try_into()
            .expect("8 bytes"),
    );
    let want = if me == 0 {
        put_first.wrapping_add(n as u64)
    } else {
        put_first
    };
    if first != want || (8..LEN).any(|i| mem[i] != pattern(left, 2, i)) {
        return Err(format!(
            "proc {left}'s put and the fetch-adds did not land here"
        ));
    }
    rma.barrier().map_err(|e| e.to_string())?;
    ctx(rma.free(at as u64), "free")?;
    if shared(at as usize)? || first != u64::from_le_bytes(mem[..8].try_into().expect("8")) {
        return Err("after free the range is still shared, or lost its bytes".into());
    }
    mem[8] ^= 0xff; // private and writable again
                    // The same size again is a fresh zeroed allocation, never the adopted range.
    let again = ctx(rma.malloc(LEN), "malloc after free")?;
    // SAFETY: our part of a fresh allocation, LEN bytes.
    let fresh = unsafe { std::slice::from_raw_parts(again[me] as *const u8, LEN) };
    if again[me] == at as u64 || fresh.iter().any(|&b| b != 0) {
        return Err("a malloc after freeing the adopted range reused it".into());
    }
    ctx(rma.free(again[me]), "free")
}
