//! `stream MAXSECS MAXSIZE DIR`: the fault-test workload. Every rank streams verified
//! messages of random sizes (0 ..= MAXSIZE) to every other rank, round after round,
//! until the file `DIR/stop` appears or MAXSECS pass; then each rank tells every peer
//! how many it sent and waits until it has received (and checked) as many from each.
//!
//! Files in DIR (written whole, then renamed, so a reader never sees half of one):
//! - `addr-R`: rank R's network addresses, one `transport address` per line, written
//!   once the stream starts;
//! - `streaming-R`: written once rank R has received from every peer (a test waits for
//!   every rank's before it meddles, so that data is flowing both ways by then);
//! - `done-R`: `rank R: stream ok, S sent, V received, B bad packets absorbed`;
//! - `error-R`: `rank R: ERROR` when rank R failed (a lost peer, corrupt data), and
//!   on a second line how many messages it striped across tcp lanes each way.
//!
//! Errors that a peer's bad packet caused (`is_peer_fault`) are counted, not fatal: the
//! stream must go on unaffected while strangers knock. A rank on host
//! `NF_CHECK_VANISH_HOST` (its `NF_HOST`) vanishes after `NF_CHECK_VANISH_AFTER` rounds
//! (and once every peer has sent it at least that many messages): it exits 0 at once without clean-up, so its sockets close as a killed process's do
//! but the launcher sees no failure — only the survivors can notice.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nf_core::{CoreError, World};

use crate::{fill, inbox_ok, size_for, verifying_inbox, Check, DATA};

/// Handler of the final "I sent you N messages" message.
const COUNT: u16 = 2;

/// Runs the stream; on failure leaves `error-R` in `dir`.
pub fn stream(world: &World, max_secs: u64, max: usize, dir: &Path) -> Check {
    let r = run(world, Duration::from_secs(max_secs), max, dir);
    if let Err(e) = &r {
        write(
            dir,
            &format!("error-{}", world.rank()),
            &format!("rank {}: {e}\n{:?}\n", world.rank(), world.stripe_stats()),
        );
    }
    r
}

/// Writes `name` in `dir` whole: to a temporary name first, then renamed.
fn write(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join(name));
    }
}

/// `err`, unless this rank is on the vanishing host: then it exits 0 at once, as at
/// its vanishing point. Its host's ranks vanish one after another, and one that sees a
/// host-mate gone first (a send waiting for a rendezvous notices) is part of the host
/// disappearing, not the survivors' failure the scenario is about.
fn quietly_if_vanishing(vanish: Option<u64>, err: String) -> String {
    if vanish.is_some() {
        // SAFETY: _exit ends the process at once; nothing runs after it.
        unsafe { libc::_exit(0) }
    }
    err
}

/// After how many rounds this rank vanishes, if it is on the victim host.
fn vanish_after(world: &World) -> Option<u64> {
    let host = std::env::var("NF_CHECK_VANISH_HOST").ok()?;
    if std::env::var("NF_HOST").ok()? != host {
        return None;
    }
    let after = std::env::var("NF_CHECK_VANISH_AFTER").ok()?.parse().ok()?;
    eprintln!("rank {}: will vanish after {after} rounds", world.rank());
    Some(after)
}

fn run(world: &World, max_time: Duration, max: usize, dir: &Path) -> Check {
    let (me, n) = (world.rank(), world.size());
    let e = |e: CoreError| e.to_string();
    let counts = Rc::new(RefCell::new(vec![None::<u64>; n]));
    let c = Rc::clone(&counts);
    world
        .register(COUNT, move |_, am| {
            let sent = u64::from_le_bytes(am.header.try_into().unwrap_or([0xff; 8]));
            c.borrow_mut()[am.src] = Some(sent);
        })
        .map_err(e)?;
    let inbox = verifying_inbox(world)?;
    let addrs: String = world
        .network_addresses()
        .iter()
        .map(|(t, a)| format!("{t} {a}\n"))
        .collect();
    write(dir, &format!("addr-{me}"), &addrs);
    let vanish = vanish_after(world);
    let (start, stop) = (Instant::now(), dir.join("stop"));
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (me as u64 + 1);
    let (mut rounds, mut absorbed, mut buf) = (0u64, 0u64, Vec::new());
    let mut streaming = false;
    loop {
        for k in 1..n {
            let dst = (me + k) % n;
            buf.resize(size_for(&mut rng, max), 0);
            fill(&mut buf, me, dst, rounds);
            world
                .send(dst, DATA, &rounds.to_le_bytes(), &buf)
                .map_err(|x| quietly_if_vanishing(vanish, e(x)))?;
        }
        rounds += 1;
        match world.poll() {
            Ok(_) => {}
            Err(err) if err.is_peer_fault() => absorbed += 1,
            Err(err) => return Err(quietly_if_vanishing(vanish, err.to_string())),
        }
        // Vanish mid-stream from both sides: only once every peer has delivered `after`
        // messages too, so that on a busy machine a slow survivor has streamed (and
        // striped) to this host before it disappears.
        let heard = |after| (0..n).all(|s| s == me || inbox.borrow().next[s] >= after);
        if !streaming && heard(1) {
            write(dir, &format!("streaming-{me}"), "streaming\n");
            streaming = true;
        }
        if vanish.is_some_and(|after| rounds >= after && heard(after)) {
            // SAFETY: _exit ends the process at once; nothing runs after it.
            unsafe { libc::_exit(0) }
        }
        if rounds % 16 == 0 && (stop.exists() || start.elapsed() > max_time) {
            break;
        }
    }
    for k in 1..n {
        let dst = (me + k) % n;
        world
            .send(dst, COUNT, &rounds.to_le_bytes(), &[])
            .map_err(e)?;
    }
    let all_in = || {
        let (counts, ib) = (counts.borrow(), inbox.borrow());
        (0..n).all(|s| s == me || counts[s] == Some(ib.next[s]))
    };
    world.wait_until(all_in).map_err(e)?;
    loop {
        match world.poll() {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) if err.is_peer_fault() => absorbed += 1,
            Err(err) => return Err(err.to_string()),
        }
    }
    inbox_ok(&inbox)?;
    let received: u64 = inbox.borrow().next.iter().sum();
    let line = format!(
        "rank {me}: stream ok, {} sent, {received} received, {absorbed} bad packets absorbed",
        rounds * (n as u64 - 1)
    );
    println!("{line}");
    write(dir, &format!("done-{me}"), &format!("{line}\n"));
    Ok(())
}
