//! One-sided benchmark between procs 0 and 1.
//!
//! Proc 0 times each operation on proc 1's memory; proc 1 does not call the library
//! while it is measured: it sleeps, checking a word of its own memory that proc 0
//! sets when a measurement is over (so the service path's asynchronous progress is
//! what is measured, and proc 1 does not steal a core by polling). Other procs only
//! join the barriers.
//!
//! Operations ([`Op`]):
//! - `put`: a blocking put timed at the sender (local completion);
//! - `put-fence`: a put followed by a fence (remote completion);
//! - `get`: a blocking get;
//! - `acc`: an accumulate of doubles (scale 1) followed by a fence.
//!
//! Layouts ([`Layout`]): `contig`, or `strided`: a 2-D patch of `min(16, size / 8)`
//! rows, with row strides of row + 64 B locally and row + 128 B remotely.
//! Iterations follow [`crate::pingpong::iters_for`], so large sizes take about as long
//! as small ones; warm-up operations are not recorded.

use std::time::{Duration, Instant};

use nf_rma::{Kind, Rma, RmaError, Route, Scale, Shape, Xfer};

use crate::params::{check_iters, check_sizes, ParamError};
use crate::pingpong::{iters_for, SizeSamples};

/// How a report names the route to a proc's memory.
pub fn route_name(r: Route) -> &'static str {
    match r {
        Route::Direct => "rma-direct",
        Route::Native => "rma-ofi-native",
        Route::Service => "rma-service-tcp",
    }
}

/// An operation to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Put, timed at the sender.
    Put,
    /// Put then fence.
    PutFence,
    /// Get.
    Get,
    /// Accumulate (doubles) then fence.
    Acc,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 4] = [Op::Put, Op::PutFence, Op::Get, Op::Acc];

    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::PutFence => "put-fence",
            Op::Get => "get",
            Op::Acc => "acc",
        }
    }
}

impl std::str::FromStr for Op {
    type Err = String;

    fn from_str(s: &str) -> Result<Op, String> {
        Op::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| format!("unknown operation {s:?} (put, put-fence, get, acc)"))
    }
}

/// A memory layout on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One contiguous block.
    Contig,
    /// A 2-D strided patch.
    Strided,
}

impl Layout {
    /// Both layouts.
    pub const ALL: [Layout; 2] = [Layout::Contig, Layout::Strided];

    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Layout::Contig => "contig",
            Layout::Strided => "strided",
        }
    }
}

impl std::str::FromStr for Layout {
    type Err = String;

    fn from_str(s: &str) -> Result<Layout, String> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| format!("unknown layout {s:?} (contig, strided)"))
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct Params {
    /// Transfer sizes in bytes (multiples of 8).
    pub sizes: Vec<usize>,
    /// Timed operations for small sizes (see [`iters_for`]).
    pub iters: usize,
    /// Untimed operations before each size.
    pub warmup: usize,
    /// Operations, each measured over every layout and size.
    pub ops: Vec<Op>,
    /// Layouts.
    pub layouts: Vec<Layout>,
}

impl Params {
    /// Whether the benchmark can run these: sizes positive multiples of 8 (accumulates
    /// move doubles), at least one iteration, operation and layout.
    pub fn check(&self) -> Result<(), ParamError> {
        check_sizes(
            &self.sizes,
            |s| s > 0 && s.is_multiple_of(8),
            "a positive multiple of 8 (accumulates move doubles)",
        )?;
        check_iters(self.iters)?;
        if self.ops.is_empty() {
            return Err(ParamError::new("ops", "", "give at least one operation"));
        }
        if self.layouts.is_empty() {
            return Err(ParamError::new("layouts", "", "give at least one layout"));
        }
        Ok(())
    }
}

/// The default sizes: powers of two from 8 B to 4 MiB.
pub fn default_sizes() -> Vec<usize> {
    (3..=22).map(|p| 1usize << p).collect()
}

/// Samples of one (operation, layout).
#[derive(Debug, Clone)]
pub struct Measured {
    /// The operation.
    pub op: Op,
    /// The layout.
    pub layout: Layout,
    /// Per size, latencies in µs.
    pub sizes: Vec<SizeSamples>,
}

/// Rows of the strided patch of `size` bytes.
fn rows(size: usize) -> usize {
    (size / 8).clamp(1, 16)
}

/// The words on `nf bench rma`'s plots.
pub const PLOT_TEXT: crate::plot::PlotText = crate::plot::PlotText {
    title: "rma",
    time_caption: "time per operation (median)",
    time_axis: "time per operation (µs)",
    rate_caption: "bandwidth (size / median time per operation)",
    x_axis: "transfer size",
};

/// Bytes of the header word area at the start of proc 1's segment.
const FLAG_AREA: usize = 4096;

/// Runs every (operation, layout, size) of `p`; proc 0 gets the samples, the others
/// `None`. `on_step` is called on proc 0 after each size.
pub fn run(
    rma: &Rma<'_>,
    p: &Params,
    mut on_step: impl FnMut(Op, Layout, usize),
) -> Result<Option<Vec<Measured>>, RmaError> {
    if rma.size() < 2 {
        return Err(RmaError::Collective {
            op: "bench rma",
            why: "needs at least 2 procs (nf run -n 2)".into(),
        });
    }
    p.check().map_err(|e| RmaError::BadShape {
        op: "bench rma",
        arg: e.arg.into(),
        why: e.to_string(),
    })?;
    let max = p.sizes.iter().copied().max().unwrap_or(8);
    let room = 2 * max + 128 * 16 + 64;
    let bases = rma.malloc(FLAG_AREA + room)?;
    let local = rma.malloc_local(room)?;
    let me = rma.rank();
    let mut out = Vec::new();
    let mut step = 0u64;
    for &op in &p.ops {
        for &layout in &p.layouts {
            let mut sizes = Vec::new();
            for &size in &p.sizes {
                step += 1;
                rma.barrier()?;
                let iters = iters_for(size, p.iters);
                match me {
                    0 => {
                        let samples =
                            measure(rma, op, layout, size, iters, p.warmup, local, bases[1])?;
                        release(rma, bases[1], step)?;
                        sizes.push(SizeSamples {
                            size,
                            half_rtt_us: samples,
                        });
                        on_step(op, layout, size);
                    }
                    1 => sleep_until_released(rma, bases[1], step)?,
                    _ => {}
                }
            }
            out.push(Measured { op, layout, sizes });
        }
    }
    rma.barrier()?;
    rma.free_local(local)?;
    rma.free(bases[me])?;
    Ok((me == 0).then_some(out))
}

/// Times `iters` operations after `warmup` untimed ones (proc 0).
#[allow(clippy::too_many_arguments)]
fn measure(
    rma: &Rma<'_>,
    op: Op,
    layout: Layout,
    size: usize,
    iters: usize,
    warmup: usize,
    local: *mut u8,
    target: u64,
) -> Result<Vec<f64>, RmaError> {
    let remote = target + FLAG_AREA as u64;
    let r = rows(size);
    let row = size / r;
    let (ls, rs, count) = ([row + 64], [row + 128], [row, r]);
    let shape = match layout {
        Layout::Contig => Shape::Contig {
            local,
            remote,
            bytes: size,
        },
        Layout::Strided => Shape::Strided {
            local,
            local_strides: &ls,
            remote,
            remote_strides: &rs,
            count: &count,
        },
    };
    let kind = match op {
        Op::Put | Op::PutFence => Kind::Put,
        Op::Get => Kind::Get,
        Op::Acc => Kind::Acc(Scale::Double(1.0)),
    };
    let x = Xfer {
        kind,
        proc: 1,
        shape,
    };
    let fence = matches!(op, Op::PutFence | Op::Acc);
    let mut samples = Vec::with_capacity(iters);
    for i in 0..warmup.min(iters) + iters {
        let t = Instant::now();
        // SAFETY: `local` is a malloc_local block of `room` bytes, which covers both
        // layouts' local side (at most 2 × size + 64 × rows bytes).
        unsafe { rma.xfer(&x) }?;
        if fence {
            rma.fence(1)?;
        }
        if i >= warmup.min(iters) {
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    rma.fence(1)?;
    Ok(samples)
}

/// Proc 0 sets proc 1's flag word to `step`.
fn release(rma: &Rma<'_>, target: u64, step: u64) -> Result<(), RmaError> {
    let v = step.to_le_bytes();
    // SAFETY: `v` holds 8 readable bytes.
    unsafe { rma.put(v.as_ptr(), target, 8, 1) }?;
    rma.fence(1)
}

/// Longest proc 1 waits for one measurement (a bound against hangs, not a limit).
const RELEASE_BOUND: Duration = Duration::from_secs(600);

/// Proc 1 sleeps until its flag word says `step`, without calling the library.
fn sleep_until_released(rma: &Rma<'_>, own: u64, step: u64) -> Result<(), RmaError> {
    let p = rma
        .local_ptr(1, own, 8)?
        .expect("a proc reaches its own memory")
        .cast::<u64>();
    let start = Instant::now();
    // SAFETY: `p` is the first, page-aligned word of our own live segment; volatile
    // because proc 0 (or our service thread) writes it.
    while unsafe { p.read_volatile() } != step {
        if start.elapsed() > RELEASE_BOUND {
            return Err(RmaError::PeerLost {
                proc: 0,
                why: format!("it did not finish measurement {step} within {RELEASE_BOUND:?}"),
            });
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}
