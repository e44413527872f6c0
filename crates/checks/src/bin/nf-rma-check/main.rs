//! Scenario program for the rma layer's multi-process tests: run it under `nf run`.
//!
//! `nf-rma-check MODE ARGS…` where MODE is one of
//! - `contig`: put / get / acc between every pair, sizes 8 B … 3 MiB, allocations of
//!   differing sizes (some 0), `malloc_local` as the local side;
//! - `strided`: put / get / acc with 1–4 stride levels and differing local and remote
//!   strides, checked against an independent serial computation;
//! - `vector`: put / get / acc in the vector form;
//! - `nonblocking`: many non-blocking gets and puts in flight, with wait / test /
//!   wait_proc / wait_all and implicit handles;
//! - `stress SEED ITERS`: random strided put / get / acc to random targets with
//!   fences; the final memory equals a serial model's;
//! - `atomicity ITERS`: every proc accumulates into the same elements at once (int,
//!   long, double, complex); the sums are exact;
//! - `mutex ITERS`: a counter incremented under a mutex by every proc is exact;
//! - `rmw ITERS`: fetch-and-add tickets are unique and gap-free; swap hands values on;
//! - `progress SECONDS`: the last proc computes without library calls until released;
//!   proc 0's gets on its memory complete meanwhile (it checks the target's
//!   "computing" marker in every one), then it releases the target;
//! - `teams`: allocation, transfers and free over a team of the even procs;
//! - `nodeteam`: a team's collectives (`NodeTeam`) over every proc but the first,
//!   the leaders' step an allgather among the nodes' leaders;
//! - `typed`: the safe `GlobalArray` API;
//! - `badinput`: every misuse the API must refuse, with the error it must give;
//! - `vanish`: the last proc exits without a word; gets on its memory fail with
//!   `PeerLost` (service path only);
//! - `holderdies`: proc 1 leaves holding a mutex of proc 0; other takers get an error
//!   naming it;
//! - `toobig`: every proc asks for a share of twice the host's memory; all must get
//!   `NoRoom` at once (not the OOM killer), and a small allocation then works;
//! - `adopt`: a page-aligned range of the program's bss becomes a segment in place
//!   (`Rma::adopt`), reached by every proc, and private again after free;
//! - `refused`: start-up must fail (say `NF_RMA_OFI=on` where ofi cannot run) with an
//!   error naming the setting and a proc.
//!
//! With `NF_RMA_CHECK_ROUTE=native` (or `service`), every proc first checks that it
//! reaches every proc outside its domain that way, so a test cannot pass on the
//! wrong path.
//!
//! Exit status 0 means every check passed; failures print what differed.

mod adopt;
mod bad;
mod faults;
mod model;
mod room;
mod shapes;
mod sync;
mod teams;

use nf_core::World;
use nf_rma::{Rma, Route, WorldWireup};

/// A check's outcome: `Err` says what differed.
pub type Check = Result<(), String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("nf-rma-check {}: FAILED: {e}", args.join(" "));
        std::process::exit(1);
    }
}

/// Argument `i` as a number.
pub fn num(args: &[String], i: usize) -> Result<u64, String> {
    args.get(i)
        .ok_or(format!("missing argument {i}"))?
        .parse()
        .map_err(|e| format!("argument {i}: {e}"))
}

/// Shorthand: any error as text, with what we were doing.
pub fn ctx<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn run(args: &[String]) -> Check {
    let world = World::init().map_err(|e| e.to_string())?;
    let wire = ctx(WorldWireup::new(&world), "wire-up")?;
    let mode = args.first().map(String::as_str).unwrap_or("");
    if mode == "refused" {
        return match Rma::new(&wire) {
            Ok(_) => Err("start-up succeeded".into()),
            Err(e) if e.to_string().contains("NF_RMA_OFI=on, but proc") => Ok(()),
            Err(e) => Err(format!(
                "start-up failed, but not naming NF_RMA_OFI and a proc: {e}"
            )),
        };
    }
    let rma = ctx(Rma::new(&wire), "Rma::new")?;
    check_routes(&rma)?;
    match mode {
        "contig" => shapes::contig(&rma)?,
        "strided" => shapes::strided(&rma)?,
        "vector" => shapes::vector(&rma)?,
        "nonblocking" => shapes::nonblocking(&rma)?,
        "stress" => model::stress(&rma, num(args, 1)?, num(args, 2)? as usize)?,
        "atomicity" => sync::atomicity(&rma, num(args, 1)? as usize)?,
        "mutex" => sync::mutex(&rma, num(args, 1)? as usize)?,
        "rmw" => sync::rmw(&rma, num(args, 1)? as usize)?,
        "progress" => sync::progress(&rma, num(args, 1)?)?,
        "teams" => teams::teams(&rma, &wire)?,
        "typed" => teams::typed(&rma)?,
        "reuse" => teams::reuse(&rma, &wire)?,
        "nodeteam" => teams::node_team(&rma, &wire)?,
        "badinput" => bad::bad_input(&rma)?,
        "toobig" => room::too_big(&rma)?,
        "adopt" => adopt::adopt(&rma)?,
        "vanish" | "holderdies" => {
            if mode == "vanish" {
                faults::vanish(&rma)?;
            } else {
                faults::holder_dies(&rma)?;
            }
            // The world cannot finish a barrier without the victim: leave now.
            std::process::exit(0);
        }
        m => return Err(format!("unknown mode {m:?}")),
    }
    ctx(rma.finalize(), "rma finalize")?;
    world.finalize().map_err(|e| format!("finalize: {e}"))
}

/// Checks `NF_RMA_CHECK_ROUTE` (see the module docs).
fn check_routes(rma: &Rma<'_>) -> Check {
    let want = match std::env::var("NF_RMA_CHECK_ROUTE").as_deref() {
        Ok("native") => Route::Native,
        Ok("service") => Route::Service,
        Ok(other) => return Err(format!("NF_RMA_CHECK_ROUTE={other:?}: native or service")),
        Err(_) => return Ok(()),
    };
    let remote: Vec<usize> = (0..rma.size()).filter(|&p| !rma.same_node(p)).collect();
    if remote.is_empty() {
        return Err("NF_RMA_CHECK_ROUTE is set, but no proc is outside our domain".into());
    }
    match remote.iter().find(|&&p| rma.route(p) != want) {
        Some(&p) => Err(format!(
            "proc {p} is reached by {:?}, expected {want:?}",
            rma.route(p)
        )),
        None => Ok(()),
    }
}

/// Deterministic bytes for (`who`, `what`, position): a pattern each check can
/// recompute on any proc.
pub fn pattern(who: usize, what: u64, i: usize) -> u8 {
    let mut x = (who as u64) << 40 ^ what << 20 ^ i as u64 ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    x as u8
}

/// A small xorshift generator: the same sequence on every run for a seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn step(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.step() % n
    }
}
