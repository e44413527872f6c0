//! Rank program for the `/mem` tests of `nf serve`: run it under `nf run`, with
//! `NF_MEM_REGISTRY` naming the registry `nf serve --mem-registry` reads.
//!
//! `nf-mem-check OUT MODE`, where OUT is a directory shared with the test:
//!
//! 1. Every rank allocates [`LEN`] bytes of global memory and puts a known pattern
//!    into its right neighbour's segment; after a barrier it gets its left
//!    neighbour's segment with `Rma::get` and writes it to `OUT/get.LEFT`.
//! 2. It says it is ready (`OUT/ready.RANK`) and waits (bounded) for `OUT/go`.
//! 3. MODE `check`: the test has written some segments over 9P, and put what each
//!    should now hold in `OUT/expect.RANK`; every rank gets its left neighbour's
//!    segment again and exits 0 only if it equals that file. MODE `hold`: wait for a
//!    `go` that does not come; the test kills ranks meanwhile.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nf_core::World;
use nf_rma::{GlobalArray, Rma, WorldWireup};

/// Bytes of each rank's segment: not a whole number of pages.
pub const LEN: usize = 3 * 4096 + 100;
/// How long a rank waits for the test, at most.
const PATIENCE: Duration = Duration::from_secs(60);

/// Byte `i` of the pattern rank `r` is given.
fn pattern(r: usize, i: usize) -> u8 {
    (r * 131 + i * 7 + i / 251) as u8
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("nf-mem-check {}: FAILED: {e}", args.join(" "));
        std::process::exit(1);
    }
}

/// Writes `data` to `path` whole (temporary file, then rename).
fn publish(path: &Path, data: &[u8]) -> Result<(), String> {
    // Appended, not a replaced extension: `get.0` and `get.1` need distinct temporaries.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, data)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Waits until `path` exists, at most [`PATIENCE`].
fn wait_for(path: &Path) -> Result<(), String> {
    let deadline = Instant::now() + PATIENCE;
    while !path.exists() {
        if Instant::now() > deadline {
            return Err(format!("{} did not appear", path.display()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let [out, mode] = args else {
        return Err("usage: nf-mem-check OUT check|hold".into());
    };
    let out = PathBuf::from(out);
    let world = World::init().map_err(|e| format!("world: {e}"))?;
    let wire = WorldWireup::new(&world).map_err(|e| format!("wire-up: {e}"))?;
    let rma = Rma::new(&wire).map_err(|e| format!("Rma::new: {e}"))?;
    let (me, n) = (rma.rank(), rma.size());
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let rma_err = |what: &str| {
        let what = what.to_string();
        move |e: nf_rma::RmaError| format!("{what}: {e}")
    };

    // Step 1.
    let a = GlobalArray::<u8>::new(&rma, LEN).map_err(rma_err("allocate"))?;
    let mine: Vec<u8> = (0..LEN).map(|i| pattern(right, i)).collect();
    a.put(right, 0, &mine).map_err(rma_err("put"))?;
    rma.barrier().map_err(rma_err("barrier"))?;
    let mut got = vec![0u8; LEN];
    a.get(left, 0, &mut got).map_err(rma_err("get"))?;
    if got.iter().enumerate().any(|(i, &b)| b != pattern(left, i)) {
        return Err(format!("rank {left}'s segment does not hold its pattern"));
    }
    publish(&out.join(format!("get.{left}")), &got)?;
    rma.barrier().map_err(rma_err("barrier"))?;

    // Step 2.
    publish(&out.join(format!("ready.{me}")), b"")?;
    wait_for(&out.join("go"))?;
    if mode == "hold" {
        return Err("go appeared in hold mode".into());
    }

    // Step 3.
    rma.barrier().map_err(rma_err("barrier"))?;
    let expect_path = out.join(format!("expect.{left}"));
    let expect = std::fs::read(&expect_path)
        .map_err(|e| format!("reading {}: {e}", expect_path.display()))?;
    a.get(left, 0, &mut got).map_err(rma_err("get"))?;
    if let Some(i) = (0..LEN).find(|&i| expect.get(i) != Some(&got[i])) {
        return Err(format!(
            "rank {left}'s segment differs from what the test wrote over 9P at byte {i}: \
             got {}, expected {:?}",
            got[i],
            expect.get(i)
        ));
    }
    rma.barrier().map_err(rma_err("barrier"))?;
    a.free().map_err(rma_err("free"))?;
    rma.finalize().map_err(rma_err("finalize"))?;
    world.finalize().map_err(|e| format!("finalize: {e}"))
}
