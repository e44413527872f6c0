//! Scenario program for the core's multi-process tests: run it under `nf run`.
//!
//! `nf-core-check MODE ARGS…` where MODE is one of
//! - `integrity SEED COUNT MAXSIZE`: COUNT messages from every rank to every rank
//!   (itself included) of random sizes 0 ..= MAXSIZE, each verified byte by byte,
//!   in per-pair order;
//! - `flood COUNT SIZE`: every rank but 0 sends COUNT messages to rank 0;
//! - `headtohead COUNT SIZE`: ranks 0 and 1 send to each other at the same time;
//! - `collectives`: barrier, broadcast from every root, allreduce sum/min/max;
//! - `badinput`: every misuse the API must refuse, with the error it must give;
//! - `peerlimit LIMIT`: rank 1 (by `NF_RANK`, so under `nf run`) accepts payloads of
//!   at most LIMIT bytes, rank 0 its default; rank 0 sends messages below and above
//!   LIMIT (fragmented and, with `NF_RNDV_THRESHOLD` low enough, single-copy) and
//!   rank 1 must receive the small ones, report each large one as a peer error
//!   naming the limit, and carry on;
//! - `routes H0,H1,… NET`: rank r claims host Hr (run with `NF_HOST` set accordingly);
//!   checks that same-host peers are reached by shm and the others by NET (tcp, ofi,
//!   or a route split by size such as tcp/ofi@4096);
//! - `die RANK`: RANK kills itself with SIGKILL while the others wait in a barrier;
//! - `vanish RANK`: RANK exits quietly (status 0, no finalize); the others must get an
//!   error naming it (`PeerDied`, or a transport's `PeerLost`), not hang;
//! - `idle DIR`: after a barrier, writes `DIR/addr-R` and waits for something that
//!   never comes; passes only when the wait ends in an error naming a peer (its
//!   link cut, say), which it also writes to `DIR/done-R`;
//! - `stream MAXSECS MAXSIZE DIR`: the fault-test workload (see `stream.rs`).
//! - `netrndv ROUNDS`: every rank sends every rank ROUNDS times a sequence of mixed
//!   sizes (8 B … 3 MiB + 7 B), each verified and in per-pair order; then checks
//!   that exactly the messages of at least `NF_OFI_RNDV` bytes to and from peers on
//!   ofi routes went by the ofi rendezvous (the core's counters) and none was refused;
//! - `netrndvvanish SIZE`: rank 0 sends SIZE-byte messages to rank 1, which exits
//!   quietly (`_exit(0)`) a few milliseconds after its second delivery, while the
//!   next ones are being read; rank 0 passes only if a send fails with an error
//!   naming rank 1 after at least two went by the ofi rendezvous.
//! - `rndvsource SOURCE [THRESHOLD]`: every rank's single-copy threshold came from
//!   SOURCE (given, measured, cached, default: the start-up measurement), every rank
//!   of the job has the same one, and it is THRESHOLD when given.
//! - `doorbell ROUNDS`: 2 ranks in yield mode; rank 1 sleeps on its shm doorbell and
//!   is woken by each of ROUNDS messages, then by rank 0's death (`doorbell.rs`).
//!
//! With `NF_CHECK_EXPECT_STRIPED=1`, `integrity` also checks that this rank sent and
//! received messages striped across tcp lanes (`NF_TCP_LANES`); with `0`, that it
//! striped none.
//!
//! With `NF_CHECK_RANK1_MAX_PAYLOAD=N`, rank 1 (by `NF_RANK`) accepts payloads of at
//! most N bytes, in any mode.
//!
//! With `NF_CHECK_SAY_SOURCE` set, each rank first prints `rank R of N via SOURCE`
//! (its wire-up source: nf run, PMIx, PMI-2, singleton).
//!
//! Exit status 0 means every check passed; failures print what differed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use nf_core::{CoreError, ReduceOp, World};

mod doorbell;
mod stream;

const DATA: u16 = 1;

type Check = Result<(), String>;

/// What `--help` prints: the modes of the module doc, briefly.
const USAGE: &str = "\
usage: nf-core-check MODE ARGS…   (run under nf run, mpirun or mpiexec)
modes:
  integrity SEED COUNT MAXSIZE   every rank sends COUNT random-size messages to every rank
  flood COUNT SIZE               every rank but 0 sends COUNT messages to rank 0
  headtohead COUNT SIZE          ranks 0 and 1 send to each other at once
  collectives                    barrier, broadcast, allreduce
  badinput                       misuses the API must refuse
  peerlimit LIMIT                rank 1 accepts payloads up to LIMIT bytes
  routes H0,H1,… NET             rank r claims host Hr; checks shm / NET routes
  die RANK | vanish RANK         RANK is killed / exits; the others must be told
  idle DIR                       waits for a peer error, written to DIR
  stream MAXSECS MAXSIZE DIR     the fault-test workload
  netrndv ROUNDS                 mixed sizes every pair; checks the ofi rendezvous counters
  netrndvvanish SIZE             rank 1 exits while rank 0's large sends are being read
  rndvsource SOURCE [THRESHOLD]  where every rank's single-copy threshold came from
  doorbell ROUNDS                2 ranks, NF_WAIT=yield: rank 1 sleeps on its doorbell, is woken
NF_CHECK_SAY_SOURCE=1 makes each rank print its wire-up source first.
NF_CHECK_EXPECT_STRIPED=1 (0) makes integrity check that messages were (not) striped.
NF_CHECK_RANK1_MAX_PAYLOAD=N makes rank 1 (under nf run) accept payloads up to N bytes.
";

fn main() {
    nf_core::log::init("nf-core-check", "warn");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(
        args.first().map(String::as_str),
        None | Some("-h" | "--help" | "help")
    ) {
        print!("{USAGE}");
        std::process::exit(if args.is_empty() { 2 } else { 0 });
    }
    if let Err(e) = run(&args) {
        eprintln!("nf-core-check {}: FAILED: {e}", args.join(" "));
        std::process::exit(1);
    }
}

fn num(args: &[String], i: usize) -> Result<u64, String> {
    args.get(i)
        .ok_or(format!("missing argument {i}"))?
        .parse()
        .map_err(|e| format!("argument {i}: {e}"))
}

fn run(args: &[String]) -> Check {
    let mode = args.first().map(String::as_str).unwrap_or("");
    let mut cfg = nf_core::Config::from_env().map_err(|e| e.to_string())?;
    if mode == "peerlimit" && std::env::var("NF_RANK").as_deref() == Ok("1") {
        cfg.max_payload = num(args, 1)? as usize;
    }
    if let (Ok(limit), Ok("1")) = (
        std::env::var("NF_CHECK_RANK1_MAX_PAYLOAD"),
        std::env::var("NF_RANK").as_deref(),
    ) {
        cfg.max_payload = limit
            .parse()
            .map_err(|e| format!("NF_CHECK_RANK1_MAX_PAYLOAD: {e}"))?;
    }
    let world = World::init_with(cfg).map_err(|e| e.to_string())?;
    if std::env::var_os("NF_CHECK_SAY_SOURCE").is_some() {
        println!(
            "rank {} of {} via {}",
            world.rank(),
            world.size(),
            world.bootstrap_source()
        );
    }
    match mode {
        "integrity" => integrity(
            &world,
            num(args, 1)?,
            num(args, 2)? as usize,
            num(args, 3)? as usize,
        )?,
        "flood" => flood(&world, num(args, 1)? as usize, num(args, 2)? as usize)?,
        "headtohead" => head_to_head(&world, num(args, 1)? as usize, num(args, 2)? as usize)?,
        "collectives" => collectives(&world)?,
        "badinput" => bad_input(&world)?,
        "peerlimit" => peer_limit(&world, num(args, 1)? as usize)?,
        "die" => die(&world, num(args, 1)? as usize)?,
        "routes" => routes(
            &world,
            args.get(1).ok_or("missing host list")?,
            args.get(2).ok_or("missing network transport")?,
        )?,

        "netrndv" => net_rndv(&world, num(args, 1)?)?,
        "rndvsource" => rndv_source(
            &world,
            args.get(1).ok_or("missing source")?,
            args.get(2).map(|_| num(args, 2)).transpose()?,
        )?,
        "netrndvvanish" => return net_rndv_vanish(&world, num(args, 1)? as usize),
        "vanish" => return vanish(&world, num(args, 1)? as usize),
        "doorbell" => return doorbell::doorbell(&world, num(args, 1)?),
        "idle" => {
            return idle(
                &world,
                std::path::Path::new(args.get(1).ok_or("missing directory")?),
            )
        }
        "stream" => stream::stream(
            &world,
            num(args, 1)?,
            num(args, 2)? as usize,
            std::path::Path::new(args.get(3).ok_or("missing report directory")?),
        )?,
        m => return Err(format!("unknown mode {m:?}")),
    }
    world.finalize().map_err(|e| format!("finalize: {e}"))
}

/// Deterministic bytes for message `seq` from `src` to `dst`.
fn fill(buf: &mut [u8], src: usize, dst: usize, seq: u64) {
    let mut x = (src as u64) << 48 ^ (dst as u64) << 32 ^ seq ^ 0x9E37_79B9_7F4A_7C15;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    for b in chunks.into_remainder() {
        *b = x as u8;
        x >>= 8;
    }
}

/// Sizes log-uniform in 0 ..= max, so small and huge both occur.
fn size_for(rng: &mut u64, max: usize) -> usize {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let bits = 64 - (max as u64).leading_zeros() as u64;
    let b = *rng % (bits + 1);
    let s = if b == 0 { 0 } else { (*rng >> 8) % (1u64 << b) };
    (s as usize).min(max)
}

/// Per-source receive bookkeeping shared with the handler.
#[derive(Default)]
struct Inbox {
    next: Vec<u64>,
    bytes: u64,
    errors: Vec<String>,
}

/// Registers the checking handler on every rank, then waits for all to have done so.
fn verifying_inbox(world: &World) -> Result<Rc<RefCell<Inbox>>, String> {
    let inbox = Rc::new(RefCell::new(Inbox {
        next: vec![0; world.size()],
        ..Inbox::default()
    }));
    let ib = Rc::clone(&inbox);
    let me = world.rank();
    world
        .register(DATA, move |_, am| {
            let mut ib = ib.borrow_mut();
            let seq = u64::from_le_bytes(am.header.try_into().unwrap_or([0xff; 8]));
            if seq != ib.next[am.src] {
                let e = format!(
                    "from {}: got message {seq}, expected {}",
                    am.src, ib.next[am.src]
                );
                ib.errors.push(e);
            }
            let mut want = vec![0u8; am.payload.len()];
            fill(&mut want, am.src, me, seq);
            if want != am.payload {
                let e = format!(
                    "from {}: message {seq} ({} B) corrupted",
                    am.src,
                    am.payload.len()
                );
                ib.errors.push(e);
            }
            ib.next[am.src] = seq + 1;
            ib.bytes += am.payload.len() as u64;
        })
        .map_err(|e| e.to_string())?;
    world.barrier().map_err(|e| e.to_string())?;
    Ok(inbox)
}

/// The mismatches the handler recorded, as a failure.
fn inbox_ok(inbox: &RefCell<Inbox>) -> Check {
    let ib = inbox.borrow();
    if ib.errors.is_empty() {
        Ok(())
    } else {
        Err(ib.errors.join("; "))
    }
}

fn integrity(world: &World, seed: u64, count: usize, max: usize) -> Check {
    let (me, n) = (world.rank(), world.size());
    let inbox = verifying_inbox(world)?;
    let mut rng = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (me as u64 + 1);
    let mut buf = Vec::new();
    for seq in 0..count as u64 {
        for k in 0..n {
            let dst = (me + k) % n;
            let size = if seq == 0 {
                max
            } else {
                size_for(&mut rng, max)
            };
            buf.resize(size, 0);
            fill(&mut buf, me, dst, seq);
            world
                .send(dst, DATA, &seq.to_le_bytes(), &buf)
                .map_err(|e| e.to_string())?;
        }
        world.poll().map_err(|e| e.to_string())?;
    }
    let done = || inbox.borrow().next.iter().all(|&c| c == count as u64);
    world.wait_until(done).map_err(|e| e.to_string())?;
    inbox_ok(&inbox)?;
    let stripes = world.stripe_stats();
    match std::env::var("NF_CHECK_EXPECT_STRIPED").as_deref() {
        Ok("1") if stripes.sent == 0 || stripes.received == 0 => {
            return Err(format!("no message striped across tcp lanes: {stripes:?}"))
        }
        Ok("0") if stripes != nf_core::StripeStats::default() => {
            return Err(format!(
                "messages striped although they should not: {stripes:?}"
            ))
        }
        _ => {}
    }
    let ib = inbox.borrow();
    println!(
        "rank {me}: integrity ok, {} messages, {} bytes received, {stripes:?}",
        count * n,
        ib.bytes
    );
    Ok(())
}

fn flood(world: &World, count: usize, size: usize) -> Check {
    let (me, n) = (world.rank(), world.size());
    let inbox = verifying_inbox(world)?;
    if me != 0 {
        let mut buf = vec![0u8; size];
        for seq in 0..count as u64 {
            fill(&mut buf, me, 0, seq);
            world
                .send(0, DATA, &seq.to_le_bytes(), &buf)
                .map_err(|e| e.to_string())?;
        }
    } else {
        let done = || inbox.borrow().next[1..].iter().all(|&c| c == count as u64);
        world.wait_until(done).map_err(|e| e.to_string())?;
        inbox_ok(&inbox)?;
        println!(
            "rank 0: flood ok, {} messages from {} senders",
            count * (n - 1),
            n - 1
        );
    }
    Ok(())
}

fn head_to_head(world: &World, count: usize, size: usize) -> Check {
    let (me, n) = (world.rank(), world.size());
    let inbox = verifying_inbox(world)?;
    if me < 2 && n >= 2 {
        let peer = 1 - me;
        let mut buf = vec![0u8; size];
        for seq in 0..count as u64 {
            fill(&mut buf, me, peer, seq);
            world
                .send(peer, DATA, &seq.to_le_bytes(), &buf)
                .map_err(|e| e.to_string())?;
        }
        world
            .wait_until(|| inbox.borrow().next[peer] == count as u64)
            .map_err(|e| e.to_string())?;
        inbox_ok(&inbox)?;
        println!("rank {me}: head-to-head ok, {count} × {size} B each way");
    }
    Ok(())
}

fn collectives(world: &World) -> Check {
    let (me, n) = (world.rank(), world.size());
    let e = |e: CoreError| e.to_string();
    for _ in 0..3 {
        world.barrier().map_err(e)?;
    }
    for root in 0..n {
        let len = 1 + root * 1000;
        let mut data = if me == root {
            (0..len).map(|i| (i * 7 + root) as u8).collect()
        } else {
            Vec::new()
        };
        world.broadcast(root, &mut data).map_err(e)?;
        let want: Vec<u8> = (0..len).map(|i| (i * 7 + root) as u8).collect();
        if data != want {
            return Err(format!(
                "broadcast from {root}: got {} B, wrong content",
                data.len()
            ));
        }
    }
    let mut sum: Vec<i64> = (0..5).map(|i| me as i64 * 10 + i).collect();
    world.allreduce(&mut sum, ReduceOp::Sum).map_err(e)?;
    let ranks: i64 = (0..n as i64).sum();
    let want: Vec<i64> = (0..5).map(|i| ranks * 10 + i * n as i64).collect();
    check("allreduce sum", &sum, &want)?;
    let mut min = [me as f64 - 0.5, -(me as f64)];
    world.allreduce(&mut min, ReduceOp::Min).map_err(e)?;
    check("allreduce min", &min, &[-0.5, -(n as f64 - 1.0)])?;
    let mut max = [me as u32, 1000 - me as u32];
    world.allreduce(&mut max, ReduceOp::Max).map_err(e)?;
    check("allreduce max", &max, &[n as u32 - 1, 1000])?;
    let mut big = vec![1.0f32; 50_000];
    world.allreduce(&mut big, ReduceOp::Sum).map_err(e)?;
    if big.iter().any(|&x| x != n as f32) {
        return Err("allreduce of 50000 floats: wrong sum".into());
    }
    println!("rank {me}: collectives ok on {n} ranks");
    Ok(())
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Check {
    if got != want {
        return Err(format!("{what}: got {got:?}, want {want:?}"));
    }
    Ok(())
}

fn expect_err(what: &str, r: Result<(), CoreError>, needle: &str) -> Check {
    match r {
        Err(e) if e.to_string().contains(needle) => {
            println!("{what}: refused as expected: {e}");
            Ok(())
        }
        Err(e) => Err(format!("{what}: wrong error: {e}")),
        Ok(()) => Err(format!("{what}: was accepted")),
    }
}

fn bad_input(world: &World) -> Check {
    let (me, n) = (world.rank(), world.size());
    let e = |e: CoreError| e.to_string();
    world.register(DATA, |_, _| {}).map_err(e)?;
    expect_err(
        "register twice",
        world.register(DATA, |_, _| {}),
        "already registered",
    )?;
    expect_err(
        "reserved id",
        world.register(nf_core::RESERVED_BASE, |_, _| {}),
        "reserved",
    )?;
    expect_err(
        "a runtime protocol's id as a user id",
        world.send(0, nf_core::Reserved::RmaTeams.id(), &[], b""),
        "reserved",
    )?;
    expect_err(
        "the collectives' reserved handler registered again",
        world.register_reserved(nf_core::Reserved::Collectives, |_, _| {}),
        "already registered",
    )?;
    expect_err(
        "rank outside world",
        world.send(n, DATA, &[], b"x"),
        "outside the world",
    )?;
    expect_err(
        "big header",
        world.send(0, DATA, &[0; 100], b""),
        "header of 100 B",
    )?;
    let limit = world.config().max_payload;
    expect_err(
        "big payload",
        world.send(0, DATA, &[], &vec![0; limit + 1]),
        "NF_MAX_PAYLOAD",
    )?;
    world.barrier().map_err(|x| format!("first barrier: {x}"))?;
    // Rank 0 sends to a handler no one registered: the receiver reports it, by id and sender.
    if me == 0 && n > 1 {
        world
            .send(1, 77, &[], b"who handles this?")
            .map_err(|x| format!("send to 77: {x}"))?;
    }
    if me == 1 {
        // Poll until the error surfaces (bounded: the message is already on its way).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut seen = None;
        while seen.is_none() && std::time::Instant::now() < deadline {
            if let Err(err) = world.poll() {
                seen = Some(err.to_string());
            }
        }
        let msg = seen.unwrap_or_default();
        if !msg.contains("handler 77") || !msg.contains("rank 0") {
            return Err(format!("unknown handler: wrong error {msg:?}"));
        }
        println!("unknown handler: reported as expected: {msg}");
    }
    world.barrier().map_err(|x| format!("last barrier: {x}"))
}

fn peer_limit(world: &World, limit: usize) -> Check {
    if world.size() != 2 {
        return Err("peerlimit runs on 2 ranks".into());
    }
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = Rc::clone(&got);
    world
        .register(DATA, move |_, am| g.borrow_mut().push(am.payload.len()))
        .map_err(|e| e.to_string())?;
    world.barrier().map_err(|e| e.to_string())?;
    let sizes = [limit / 4, 5 * limit, 10 * limit, limit];
    if world.rank() == 0 {
        for size in sizes {
            world
                .send(1, DATA, &[], &vec![7u8; size])
                .map_err(|e| format!("send {size} B: {e}"))?;
        }
    } else {
        // Per-pair order: once the last (small) message is in, everything was handled.
        world
            .wait_until(|| got.borrow().len() == 2)
            .map_err(|e| e.to_string())?;
        let mut errors = Vec::new();
        loop {
            match world.poll() {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
        if *got.borrow() != [limit / 4, limit] {
            return Err(format!("delivered sizes {:?}", got.borrow()));
        }
        for size in [5 * limit, 10 * limit] {
            let want = format!("announced {size} B, above NF_MAX_PAYLOAD={limit}");
            if !errors.iter().any(|e| e.contains(&want)) {
                return Err(format!("no error saying {want:?} in {errors:?}"));
            }
        }
        println!(
            "rank 1: oversized messages refused with {} errors, small ones delivered",
            errors.len()
        );
    }
    world.barrier().map_err(|e| e.to_string())
}

fn die(world: &World, victim: usize) -> Check {
    world.barrier().map_err(|e| e.to_string())?;
    if world.rank() == victim {
        // SAFETY: raising a signal on ourselves has no memory-safety preconditions.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    // The others wait for a barrier the victim never joins; the launcher (or our own
    // liveness check) must end this.
    world.barrier().map_err(|e| e.to_string())
}

fn vanish(world: &World, victim: usize) -> Check {
    // The victim leaves only once every survivor is past the first barrier and told it
    // so: a rank still in that barrier may rightly see the victim's exit as a loss.
    let past = Rc::new(Cell::new(0usize));
    let seen = Rc::clone(&past);
    world
        .register(DATA, move |_, _| seen.set(seen.get() + 1))
        .map_err(|e| e.to_string())?;
    world.barrier().map_err(|e| e.to_string())?;
    if world.rank() == victim {
        let survivors = world.size() - 1;
        world
            .wait_until(|| past.get() == survivors)
            .map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    world
        .send(victim, DATA, &[], &[])
        .map_err(|e| e.to_string())?;
    let named = |e: &CoreError| match e {
        CoreError::PeerDied { rank, .. } => *rank == victim,
        CoreError::Transport(nf_transport::TransportError::PeerLost { peer, .. }) => {
            *peer == victim
        }
        _ => false,
    };
    match world.barrier() {
        Err(e) if named(&e) => {
            let rank = victim;
            println!("rank {}: peer death detected: rank {rank}", world.rank());
            // Stay a moment, so the other survivors detect the victim, not us.
            std::thread::sleep(std::time::Duration::from_secs(2));
            Ok(())
        }
        Err(e) => Err(format!("expected an error naming rank {victim}, got {e}")),
        Ok(()) => Err("barrier completed without the vanished rank".into()),
    }
}

fn idle(world: &World, dir: &std::path::Path) -> Check {
    let me = world.rank();
    world.barrier().map_err(|e| e.to_string())?;
    std::fs::write(dir.join(format!("addr-{me}")), "waiting\n").map_err(|e| e.to_string())?;
    let lost = match world.wait_until(|| false) {
        Err(CoreError::PeerDied { rank, .. }) => rank,
        Err(CoreError::Transport(nf_transport::TransportError::PeerLost { peer, .. })) => peer,
        Err(e) => return Err(format!("the wait ended in an error naming no peer: {e}")),
        Ok(()) => unreachable!("the condition is never true"),
    };
    let line = format!("rank {me}: lost rank {lost} while waiting\n");
    print!("{line}");
    std::fs::write(dir.join(format!("done-{me}")), line).map_err(|e| e.to_string())
}

fn routes(world: &World, hosts: &str, net: &str) -> Check {
    let hosts: Vec<&str> = hosts.split(',').collect();
    let me = world.rank();
    for (r, host) in hosts.iter().enumerate() {
        let want = if r == me {
            "self"
        } else if *host == hosts[me] {
            "shm"
        } else {
            net
        };
        let got = world.route_description(r).unwrap_or_else(|| "none".into());
        if got != want {
            return Err(format!("route to rank {r}: {got}, expected {want}"));
        }
    }
    println!("rank {me}: routes as expected for hosts {hosts:?}");
    Ok(())
}

/// `rndvsource`: where the threshold came from, and that every rank has the same.
fn rndv_source(world: &World, source: &str, threshold: Option<u64>) -> Check {
    let t = world.rndv_threshold() as u64;
    let got = world.rndv_source().name();
    println!("rank {}: single-copy threshold {t} ({got})", world.rank());
    if got != source {
        return Err(format!("the threshold's source is {got}, not {source}"));
    }
    if threshold.is_some_and(|want| want != t) {
        return Err(format!("the threshold is {t}, not {threshold:?}"));
    }
    let (mut lo, mut hi) = ([t], [t]);
    world
        .allreduce(&mut lo, ReduceOp::Min)
        .map_err(|e| e.to_string())?;
    world
        .allreduce(&mut hi, ReduceOp::Max)
        .map_err(|e| e.to_string())?;
    if lo != hi {
        return Err(format!(
            "the ranks' thresholds differ: {} to {}",
            lo[0], hi[0]
        ));
    }
    Ok(())
}

/// The sizes `netrndv` cycles through: small and large interleaved, around the
/// packet size and the default ofi threshold, and an odd tail.
const NET_RNDV_SIZES: [usize; 10] = [
    8,
    1 << 20,
    100,
    (3 << 20) + 7,
    0,
    65536,
    20000,
    70001,
    (2 << 20) + 1,
    65535,
];

fn net_rndv(world: &World, rounds: u64) -> Check {
    let (me, n) = (world.rank(), world.size());
    let inbox = verifying_inbox(world)?;
    let mut buf = Vec::new();
    let mut seq = 0u64;
    for _ in 0..rounds {
        for &size in &NET_RNDV_SIZES {
            for k in 0..n {
                let dst = (me + k) % n;
                buf.resize(size, 0);
                fill(&mut buf, me, dst, seq);
                world
                    .send(dst, DATA, &seq.to_le_bytes(), &buf)
                    .map_err(|e| format!("send {size} B to {dst}: {e}"))?;
            }
            seq += 1;
        }
    }
    let done = || inbox.borrow().next.iter().all(|&c| c == seq);
    world.wait_until(done).map_err(|e| e.to_string())?;
    inbox_ok(&inbox)?;
    // Every rank sends the same sizes to every peer, so each sends and receives as
    // many large messages over ofi as it has ofi peers times the large sizes.
    let ofi_peers = (0..n)
        .filter(|&r| world.route(r) == Some(nf_core::peers::Route::Ofi))
        .count() as u64;
    let threshold = world.config().ofi_rndv;
    let large = NET_RNDV_SIZES.iter().filter(|&&s| s >= threshold).count() as u64;
    let want = ofi_peers * large * rounds;
    let stats = world.rndv_stats();
    if stats.ofi_sent != want || stats.ofi_received != want || stats.refused != 0 {
        return Err(format!(
            "rendezvous counters {stats:?}: expected {want} sent and received over ofi \
             ({ofi_peers} ofi peers, {large} sizes ≥ {threshold} B, {rounds} rounds), none refused"
        ));
    }
    println!("rank {me}: netrndv ok, {seq} messages from each of {n} ranks, {stats:?}");
    Ok(())
}

fn net_rndv_vanish(world: &World, size: usize) -> Check {
    if world.size() != 2 {
        return Err("netrndvvanish runs on 2 ranks".into());
    }
    let got = Rc::new(Cell::new(0usize));
    let g = Rc::clone(&got);
    world
        .register(DATA, move |_, _| {
            g.set(g.get() + 1);
            if g.get() == 2 {
                // Leave while the next message is (most likely) being read: the main
                // thread goes on serving reads until then.
                std::thread::spawn(|| {
                    std::thread::sleep(std::time::Duration::from_millis(3));
                    // SAFETY: _exit has no memory-safety preconditions; it ends the
                    // process at once, as a crash would, without finalizing.
                    unsafe { libc::_exit(0) };
                });
            }
        })
        .map_err(|e| e.to_string())?;
    world.barrier().map_err(|e| e.to_string())?;
    if world.rank() == 1 {
        world.wait_until(|| false).map_err(|e| e.to_string())?;
        return Err("rank 1 outlived its exit".into());
    }
    let buf = vec![5u8; size];
    for i in 0..100_000u32 {
        match world.send(1, DATA, &[], &buf) {
            Ok(()) => {}
            Err(e) => {
                let named = match &e {
                    CoreError::PeerDied { rank, .. } => *rank == 1,
                    CoreError::Transport(nf_transport::TransportError::PeerLost {
                        peer, ..
                    }) => *peer == 1,
                    _ => false,
                };
                let stats = world.rndv_stats();
                if !named || stats.ofi_sent < 2 {
                    return Err(format!(
                        "send {i} failed with {e}; expected an error naming rank 1 after \
                         at least 2 ofi rendezvous ({stats:?})"
                    ));
                }
                println!("rank 0: send {i} failed as expected: {e} ({stats:?})");
                return Ok(());
            }
        }
    }
    Err("every send succeeded although the receiver left".into())
}
