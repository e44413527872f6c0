//! `doorbell ROUNDS`: a rank that does not busy-poll sleeps in the kernel on its shm
//! doorbell, is woken by what a peer sends, and a dead peer still ends its sleep.
//!
//! Two ranks, run with `NF_WAIT=yield`. Rank 1 sends rank 0 its process id, then waits
//! for ROUNDS messages; rank 0 sends each only once it sees rank 1 asleep in a futex
//! wait (`/proc/PID/wchan`; rank 1 has no other thread and nothing else that waits on
//! a futex). Rank 1 then checks its doorbell counters: a sleep per round at least
//! (it was seen asleep before each message, and the send after each sighting finds
//! it asleep and rings, which makes it runnable and clears its wchan, or finds it
//! already awake: no sleep is seen twice), and at least one sleep ended by rank 0's
//! ring rather than by the timeout (each sleep lasts up to 10 ms and rank 0 sends
//! within microseconds of seeing it, so all ROUNDS missing is not a realistic
//! outcome). Last, rank 0 exits quietly (no finalize) once rank 1 sleeps again, and
//! rank 1's wait must end with an error naming rank 0.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nf_core::{CoreError, World};

use super::{Check, DATA};

/// How long rank 0 waits to see rank 1 asleep before failing (a safety net: rank 1
/// parks within `NF_PARK_US` of going idle).
const SEE_ASLEEP: Duration = Duration::from_secs(30);

pub(crate) fn doorbell(world: &World, rounds: u64) -> Check {
    if world.size() != 2 {
        return Err(format!("doorbell needs 2 ranks, got {}", world.size()));
    }
    let got = Rc::new(Cell::new(0u64));
    let peer_pid = Rc::new(Cell::new(0u32));
    {
        let (got, peer_pid) = (Rc::clone(&got), Rc::clone(&peer_pid));
        world
            .register(DATA, move |_, am| match <[u8; 4]>::try_from(am.payload) {
                Ok(pid) => peer_pid.set(u32::from_le_bytes(pid)),
                Err(_) => got.set(got.get() + 1),
            })
            .map_err(|e| e.to_string())?;
    }
    world.barrier().map_err(|e| e.to_string())?;
    if world.rank() == 1 {
        sleeper(world, rounds, &got)
    } else {
        world
            .wait_until(|| peer_pid.get() != 0)
            .map_err(|e| e.to_string())?;
        for _ in 0..rounds {
            see_asleep(peer_pid.get())?;
            world.send(1, DATA, &[], &[]).map_err(|e| e.to_string())?;
        }
        see_asleep(peer_pid.get())?;
        println!("rank 0: woke rank 1 {rounds} times; leaving without a word");
        std::process::exit(0);
    }
}

/// Rank 1: ROUNDS messages, the counters, then the wait only rank 0's death ends.
fn sleeper(world: &World, rounds: u64, got: &Rc<Cell<u64>>) -> Check {
    let pid = std::process::id().to_le_bytes();
    world.send(0, DATA, &[], &pid).map_err(|e| e.to_string())?;
    for k in 1..=rounds {
        world
            .wait_until(|| got.get() >= k)
            .map_err(|e| format!("waiting for message {k}: {e}"))?;
    }
    let stats = world.doorbell_stats();
    println!("rank 1: {rounds} messages; doorbell {stats:?}");
    if stats.sleeps < rounds {
        return Err(format!(
            "seen asleep before each of {rounds} messages, yet counted {} sleeps",
            stats.sleeps
        ));
    }
    if stats.rung == 0 {
        return Err(format!(
            "no sleep of {} was ended by the sender's ring",
            stats.sleeps
        ));
    }
    match world.wait_until(|| false) {
        Err(CoreError::PeerDied { rank: 0, .. }) => {
            println!("rank 1: asleep, and still told that rank 0 died");
            Ok(())
        }
        Err(e) => Err(format!("the wait ended in an error not naming rank 0: {e}")),
        Ok(()) => unreachable!("the condition is never true"),
    }
}

/// Waits until process `pid` sleeps in a futex wait (its doorbell).
fn see_asleep(pid: u32) -> Check {
    let path = format!("/proc/{pid}/wchan");
    let start = Instant::now();
    loop {
        let wchan = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        if wchan.contains("futex") {
            return Ok(());
        }
        if start.elapsed() > SEE_ASLEEP {
            return Err(format!(
                "rank 1 (pid {pid}) never slept in a futex wait (wchan {wchan:?})"
            ));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}
