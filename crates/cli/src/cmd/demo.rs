//! `nf demo`: the embedded default job — local ranks greet each other with active
//! messages, pass a token around a ring, agree on sums with allreduce, and end with a
//! short ping-pong between ranks 0 and 1.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::Context;
use clap::Args;
use nf_core::{ReduceOp, World};

const HELLO: u16 = 1;
const TOKEN: u16 = 2;

/// Arguments of `nf demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Number of local ranks.
    #[arg(short = 'n', long = "np", default_value_t = 4)]
    pub nprocs: usize,
    /// Laps of the token around the ring.
    #[arg(long, default_value_t = 1000)]
    pub laps: u64,
}

/// Runs the demo (starting the job first when run by hand).
pub fn main(a: DemoArgs) -> anyhow::Result<i32> {
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(a.nprocs);
    }
    let world = World::init().context("joining the job")?;
    let (me, n) = (world.rank(), world.size());

    let greetings = Rc::new(RefCell::new(Vec::new()));
    let g = Rc::clone(&greetings);
    world.register(HELLO, move |_, am| {
        g.borrow_mut()
            .push((am.src, String::from_utf8_lossy(am.payload).into_owned()))
    })?;
    let token = Rc::new(RefCell::new(None::<u64>));
    let t = Rc::clone(&token);
    world.register(TOKEN, move |_, am| {
        *t.borrow_mut() = Some(u64::from_le_bytes(
            am.payload.try_into().unwrap_or_default(),
        ));
    })?;
    world.barrier()?;

    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let hello = format!(
        "rank {me} of {n}, pid {}, host {}",
        std::process::id(),
        host.trim()
    );
    world.send(0, HELLO, &[], hello.as_bytes())?;
    if me == 0 {
        world.wait_until(|| greetings.borrow().len() == n)?;
        let mut g = greetings.borrow_mut();
        g.sort();
        println!("== {n} ranks said hello by active message:");
        for (_, text) in g.iter() {
            println!("   {text}");
        }
    }

    // A token travels the ring `laps` times; every hop adds one.
    let t0 = std::time::Instant::now();
    let next = (me + 1) % n;
    if me == 0 {
        world.send(next, TOKEN, &[], &1u64.to_le_bytes())?;
    }
    for lap in 0..a.laps {
        world.wait_until(|| token.borrow().is_some())?;
        let hops = token.borrow_mut().take().context("token vanished")?;
        if me == 0 && lap + 1 == a.laps {
            anyhow::ensure!(
                hops == a.laps * n as u64,
                "token made {hops} hops, expected {}",
                a.laps * n as u64
            );
            let per_hop = t0.elapsed().as_secs_f64() * 1e6 / hops as f64;
            println!(
                "== token made {} laps of the {n}-rank ring: {hops} hops, {per_hop:.2} µs per hop",
                a.laps
            );
        } else {
            world.send(next, TOKEN, &[], &(hops + 1).to_le_bytes())?;
        }
    }

    let mut sums = [me as u64, 1];
    world.allreduce(&mut sums, ReduceOp::Sum)?;
    let mut max = [me as f64];
    world.allreduce(&mut max, ReduceOp::Max)?;
    if me == 0 {
        println!(
            "== allreduce: sum of ranks = {}, ranks counted = {}, max rank = {}",
            sums[0], sums[1], max[0]
        );
    }

    if n >= 2 {
        let params = nf_bench::pingpong::Params {
            sizes: vec![8, 1024, 65536, 1 << 20],
            iters: 2000,
            warmup: 200,
        };
        if let Some(m) = nf_bench::pingpong::run(&world, &params, |_| {})? {
            println!("== ping-pong rank 0 <-> rank 1 (half round trip):");
            print!(
                "{}",
                super::bench::report_of(&m, &world, &params).to_table()
            );
        }
    }
    world.finalize()?;
    Ok(0)
}
