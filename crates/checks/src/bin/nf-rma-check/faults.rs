//! Peers that leave: operations on them fail with a clear error instead of hanging.
//! The victim exits with status 0 (so the launcher sees nothing wrong); survivors
//! exit 0 only if they got the error they must get, and skip finalizing (the world
//! barrier cannot complete without the victim).

use std::time::{Duration, Instant};

use nf_rma::{Rma, RmaError, RmwOp};

use crate::{ctx, Check};

/// Longest a survivor tries before calling it a hang.
const BOUND: Duration = Duration::from_secs(60);

/// The last proc vanishes; proc 0's gets on its memory must fail with `PeerLost`.
pub fn vanish(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let victim = n - 1;
    if me != victim && rma.same_node(victim) {
        return Err("the victim shares our node: run with NF_RMA_DIRECT=0 or across hosts".into());
    }
    let bases = ctx(rma.malloc(4096), "malloc")?;
    ctx(rma.barrier(), "barrier")?;
    if me == victim {
        std::process::exit(0);
    }
    let mut buf = [0u8; 8];
    let start = Instant::now();
    loop {
        // SAFETY: `buf` holds 8 bytes.
        match unsafe { rma.get(bases[victim], buf.as_mut_ptr(), 8, victim) } {
            Ok(()) if start.elapsed() < BOUND => std::thread::sleep(Duration::from_millis(5)),
            Ok(()) => {
                return Err(format!(
                    "gets still succeed {BOUND:?} after proc {victim} left"
                ))
            }
            Err(RmaError::PeerLost { proc, .. }) if proc == victim => return Ok(()),
            Err(e) => return Err(format!("expected PeerLost naming proc {victim}, got {e}")),
        }
    }
}

/// Proc 1 takes mutex 0 of proc 0 and leaves without unlocking; everyone else's lock
/// must fail naming proc 1. Proc 0 stays until the others have checked (they count
/// themselves in its memory), since its service answers them.
pub fn holder_dies(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let victim = 1;
    let bases = ctx(rma.malloc(64), "malloc")?;
    ctx(rma.create_mutexes(1), "create_mutexes")?;
    if me == victim {
        ctx(rma.lock(0, 0), "lock")?;
    }
    ctx(rma.barrier(), "barrier")?;
    if me == victim {
        std::process::exit(0);
    }
    let start = Instant::now();
    let r = rma.lock(0, 0);
    let named = match &r {
        Err(RmaError::PeerDied { proc, .. }) => *proc == victim,
        Err(RmaError::Remote { why, .. }) => why.contains(&format!("proc {victim} left")),
        _ => false,
    };
    if !named {
        return Err(format!("lock after the holder left gave {r:?}"));
    }
    if start.elapsed() > BOUND {
        return Err(format!("the error took {:?}", start.elapsed()));
    }
    if me != 0 {
        ctx(rma.rmw(RmwOp::FetchAddInt(1), bases[0], 0), "counting in")?;
        return Ok(());
    }
    let done = ctx(rma.local_ptr(0, bases[0], 4), "local_ptr")?.ok_or("own memory")?;
    // SAFETY: the first word of our own live segment; other procs add to it.
    while unsafe { done.cast::<i32>().read_volatile() } < n as i32 - 2 {
        if start.elapsed() > BOUND {
            return Err("the other survivors never counted in".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
