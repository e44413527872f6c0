//! Variability over time (the same benchmark hours or days apart): a benchmark
//! repeated every interval for a duration, every sample kept with the time of its
//! repetition, tails per repetition and overall, and whether a run differs from an
//! earlier one.
//!
//! The comparison takes each repetition's median as one observation
//! ([`crate::equivalence`]): samples taken in a row are not independent, and a test
//! over all of them calls two identical runs different. It reports the ratio of the
//! runs' medians with a confidence interval and a verdict against a margin: "no
//! difference", "differs" or "inconclusive" (with the repetitions a verdict needs).

use std::path::Path;
use std::time::{Duration, Instant};

use nf_core::{CoreError, World};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::equivalence::{self, Shift, Verdict};
use crate::plot::{ensure_font, title_font, PlotError};
use crate::variability::Tail;

/// What to repeat, and how often.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    /// The benchmark repeated ("pingpong", "rma-get", …).
    pub bench: String,
    /// Message sizes in bytes.
    pub sizes: Vec<usize>,
    /// Timed operations per size and repetition (fewer above 64 KiB).
    pub iters: usize,
    /// Untimed operations before each size.
    pub warmup: usize,
    /// Seconds between the starts of repetitions.
    pub interval_s: f64,
    /// Seconds the watch lasts (a repetition starts while it has not passed).
    pub duration_s: f64,
}

/// One size in one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Repetition {
    /// 0, 1, …
    pub index: usize,
    /// Seconds from the start of the watch to the start of the repetition.
    pub t_s: f64,
    /// Message size.
    pub size: usize,
    /// The tail of its samples.
    pub tail: Tail,
    /// Every sample (half round trips, µs), in the order taken.
    pub samples_us: Vec<f64>,
}

/// A size's tail over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Overall {
    /// Message size.
    pub size: usize,
    /// The tail of all its samples.
    pub tail: Tail,
    /// Coefficient of variation of the repetitions' medians (drift between them).
    pub cv_of_medians: f64,
}

/// Whether a size differs from an earlier run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Versus {
    /// Message size.
    pub size: usize,
    /// This run's repetition medians against the earlier run's.
    #[serde(flatten)]
    pub shift: Shift,
}

/// A whole watch (rank 0's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Watch {
    /// The parameters.
    pub params: Params,
    /// How rank 0 reached rank 1.
    pub transport: String,
    /// Every repetition, per size.
    pub repetitions: Vec<Repetition>,
    /// Per size, over the whole watch.
    pub overall: Vec<Overall>,
    /// Against `--compare-with`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<String>,
    /// Per size, the comparison with it (named apart from the `versus` of older
    /// reports, a per-sample test, so those still load as earlier runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparison: Vec<Versus>,
}

/// Repeats `sample` for every size (collective); rank 0 gets the watch. `sample(size)`
/// runs one measurement on every rank and returns rank 0's samples (µs);
/// `transport` names what it measured.
pub fn run<E: From<CoreError>>(
    world: &World,
    p: &Params,
    transport: &str,
    mut sample: impl FnMut(usize) -> Result<Option<Vec<f64>>, E>,
    mut on_rep: impl FnMut(usize),
) -> Result<Option<Watch>, E> {
    let start = Instant::now();
    let interval = Duration::from_secs_f64(p.interval_s);
    let duration = Duration::from_secs_f64(p.duration_s);
    let mut reps = Vec::new();
    for index in 0.. {
        // Rank 0 keeps the clock: another repetition while the duration lasts.
        let due = interval * index as u32;
        let mut go = vec![u8::from(index == 0 || due < duration)];
        world.broadcast(0, &mut go)?;
        if go[0] == 0 {
            break;
        }
        if world.rank() == 0 {
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        world.barrier()?;
        let t_s = start.elapsed().as_secs_f64();
        for &size in &p.sizes {
            if let Some(samples_us) = sample(size)? {
                if let Some(tail) = Tail::of(&samples_us) {
                    reps.push(Repetition {
                        index,
                        t_s,
                        size,
                        tail,
                        samples_us,
                    });
                }
            }
        }
        if world.rank() == 0 {
            on_rep(index);
        }
    }
    if world.rank() != 0 {
        return Ok(None);
    }
    let overall = overall(&p.sizes, &reps);
    Ok(Some(Watch {
        params: p.clone(),
        transport: transport.to_owned(),
        repetitions: reps,
        overall,
        compared_with: None,
        comparison: Vec::new(),
    }))
}

fn samples_of(reps: &[Repetition], size: usize) -> Vec<f64> {
    reps.iter()
        .filter(|r| r.size == size)
        .flat_map(|r| r.samples_us.iter().copied())
        .collect()
}

/// The medians of a size's repetitions, in order.
fn medians_of(reps: &[Repetition], size: usize) -> Vec<f64> {
    reps.iter()
        .filter(|r| r.size == size)
        .map(|r| r.tail.median)
        .collect()
}

/// Per size: the tail of every sample, and how much the repetitions' medians drift.
pub fn overall(sizes: &[usize], reps: &[Repetition]) -> Vec<Overall> {
    sizes
        .iter()
        .filter_map(|&size| {
            let tail = Tail::of(&samples_of(reps, size))?;
            Some(Overall {
                size,
                tail,
                cv_of_medians: Tail::of(&medians_of(reps, size)).map_or(0.0, |t| t.cv),
            })
        })
        .collect()
}

impl Watch {
    /// Compares every size this watch shares with `earlier` by their repetition
    /// medians ([`equivalence::compare`]: each one-sided test at `alpha`, ratios
    /// within `margin` the same).
    pub fn compare(&mut self, earlier: &Watch, name: &str, alpha: f64, margin: f64) {
        self.compared_with = Some(name.to_owned());
        self.comparison = self
            .params
            .sizes
            .iter()
            .filter_map(|&size| {
                let shift = equivalence::compare(
                    &medians_of(&self.repetitions, size),
                    &medians_of(&earlier.repetitions, size),
                    alpha,
                    margin,
                )?;
                Some(Versus { size, shift })
            })
            .collect();
    }

    /// The comparison of `size`, if made.
    fn versus(&self, size: usize) -> Option<&Shift> {
        self.comparison
            .iter()
            .find(|v| v.size == size)
            .map(|v| &v.shift)
    }

    /// The table: each repetition, then the whole watch, then any comparison.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "# watch: {} over {}, every {} s for {} s\n#  rep      t_s     size_B    median_us       p99_us     p999_us       max_us       cv\n",
            self.params.bench, self.transport, self.params.interval_s, self.params.duration_s
        );
        let row = |label: String, size: usize, t: &Tail| {
            format!(
                "{label} {size:>10} {:>12.3} {:>12.3} {:>11.3} {:>12.3} {:>8.4}\n",
                t.median, t.p99, t.p999, t.max, t.cv
            )
        };
        for r in &self.repetitions {
            s += &row(format!("{:>6} {:>8.2}", r.index, r.t_s), r.size, &r.tail);
        }
        for o in &self.overall {
            s += &row(format!("{:>6} {:>8}", "all", "-"), o.size, &o.tail);
            s += &format!(
                "# size {} B: cv of the repetitions' medians {:.4}\n",
                o.size, o.cv_of_medians
            );
        }
        if let Some(name) = &self.compared_with {
            for v in &self.comparison {
                s += &format!(
                    "# against {name}: size {} B {}\n",
                    v.size,
                    verdict_line(&v.shift)
                );
            }
        }
        s
    }

    /// One CSV row per repetition and size; the size's comparison with an earlier run
    /// on each of its rows (empty without one).
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "rep,t_s,size_B,n,median_us,p99_us,p999_us,max_us,cv,ratio,ratio_lo,ratio_hi,verdict\n",
        );
        for r in &self.repetitions {
            let t = &r.tail;
            let end = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.4}"));
            let vs = self.versus(r.size).map_or(",,,".to_owned(), |v| {
                format!(
                    "{:.4},{},{},{}",
                    v.ratio,
                    end(v.ratio_lo),
                    end(v.ratio_hi),
                    v.verdict.words()
                )
            });
            s += &format!(
                "{},{:.3},{},{},{:.4},{:.4},{:.4},{:.4},{:.5},{vs}\n",
                r.index, r.t_s, r.size, t.n, t.median, t.p99, t.p999, t.max, t.cv
            );
        }
        s
    }

    /// Median and p99 of every repetition against time, one colour per size.
    pub fn plot(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        let path = path.as_ref();
        if self.repetitions.is_empty() {
            return Err(PlotError::NoData { path: path.into() });
        }
        ensure_font()?;
        let draw_err = |e: &dyn std::fmt::Display| PlotError::Draw {
            path: path.into(),
            reason: e.to_string(),
        };
        let t_hi = self
            .repetitions
            .iter()
            .map(|r| r.t_s)
            .fold(0.0, f64::max)
            .max(1.0);
        let y_hi = self
            .repetitions
            .iter()
            .map(|r| r.tail.p99)
            .fold(0.0, f64::max)
            * 1.1;
        let root = BitMapBackend::new(path, (1200, 700)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let title = format!(
            "nf bench watch: {} over {}",
            self.params.bench, self.transport
        );
        let root = root
            .titled(&title, title_font(24))
            .map_err(|e| draw_err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_hi * 1.02, 0.0..y_hi.max(1e-3))
            .map_err(|e| draw_err(&e))?;
        chart
            .configure_mesh()
            .x_desc("time since start, s")
            .y_desc("half round trip, µs")
            .draw()
            .map_err(|e| draw_err(&e))?;
        for (k, &size) in self.params.sizes.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            let pts = |f: fn(&Tail) -> f64| {
                self.repetitions
                    .iter()
                    .filter(|r| r.size == size)
                    .map(|r| (r.t_s, f(&r.tail)))
                    .collect::<Vec<_>>()
            };
            chart
                .draw_series(LineSeries::new(pts(|t| t.median), colour.stroke_width(2)))
                .map_err(|e| draw_err(&e))?
                .label(format!("{size} B median"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(LineSeries::new(pts(|t| t.p99), colour.stroke_width(1)))
                .map_err(|e| draw_err(&e))?
                .label(format!("{size} B p99"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(1))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
        Ok(())
    }
}

/// The verdict first, then the effect and what it rests on, e.g. `no difference:
/// median ratio 0.986, 90 % interval 0.962–1.011 within ±5 % (12 and 12 repetitions)`.
fn verdict_line(v: &Shift) -> String {
    let pct = |x: f64| format!("{}", (x * 1000.0).round() / 10.0);
    let relation = match v.verdict {
        Verdict::NoDifference => "within",
        Verdict::Differs => "outside",
        Verdict::Inconclusive => "across",
    };
    let interval = match (v.ratio_lo, v.ratio_hi) {
        (Some(lo), Some(hi)) => format!(
            "{} % interval {lo:.3}–{hi:.3} {relation}",
            pct(v.confidence)
        ),
        _ => "no interval, margin".to_owned(),
    };
    let mut line = format!(
        "{}: median ratio {:.3}, {interval} ±{} % ({} and {} repetitions)",
        v.verdict.words(),
        v.ratio,
        pct(v.margin),
        v.reps,
        v.earlier_reps
    );
    if let Some(n) = v.reps_needed {
        line += &format!("; a verdict needs about {n} repetitions per run");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(index: usize, size: usize, samples: &[f64]) -> Repetition {
        Repetition {
            index,
            t_s: index as f64,
            size,
            tail: Tail::of(samples).unwrap(),
            samples_us: samples.to_vec(),
        }
    }

    #[test]
    fn overall_pools_samples_and_measures_drift() {
        let reps = [
            rep(0, 8, &[1.0, 1.0, 1.0]),
            rep(1, 8, &[3.0, 3.0, 3.0]),
            rep(0, 64, &[2.0, 2.0]),
        ];
        let o = overall(&[8, 64], &reps);
        assert_eq!(o[0].tail.n, 6);
        assert_eq!(o[0].tail.median, 2.0);
        // medians 1 and 3: mean 2, sd √2.
        assert!((o[0].cv_of_medians - 2f64.sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(o[1].cv_of_medians, 0.0);
    }

    /// A watch of `reps` repetitions of size 8: repetition k at `level` times a
    /// per-repetition factor (repetitions of one run sit at different levels, as a
    /// busy core leaves them), its 100 samples a slow ramp (dependent, not shuffled).
    fn watch_at(level: f64, reps: usize, phase: usize) -> Watch {
        let factors = [1.00, 1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.04, 0.96, 1.00];
        Watch {
            params: Params {
                bench: "pingpong".into(),
                sizes: vec![8],
                iters: 100,
                warmup: 0,
                interval_s: 1.0,
                duration_s: reps as f64,
            },
            transport: "shm".into(),
            repetitions: (0..reps)
                .map(|k| {
                    let f = level * factors[(k + phase) % factors.len()];
                    let samples: Vec<f64> = (0..100).map(|i| f * (1.0 + i as f64 * 1e-3)).collect();
                    rep(k, 8, &samples)
                })
                .collect(),
            overall: Vec::new(),
            compared_with: None,
            comparison: Vec::new(),
        }
    }

    #[test]
    fn runs_at_the_same_levels_do_not_differ_and_a_slower_one_does() {
        // The same levels in another order: the samples of the two runs are far from
        // exchangeable one by one, but their repetitions come from one distribution.
        let mut today = watch_at(1.0, 10, 3);
        today.compare(&watch_at(1.0, 10, 0), "same.json", 0.05, 0.05);
        let v = &today.comparison[0].shift;
        assert_eq!(v.verdict, Verdict::NoDifference, "{v:?}");
        assert!(today
            .to_table()
            .contains("size 8 B no difference: median ratio 1.000"));

        let mut slower = watch_at(1.2, 10, 3);
        slower.compare(&watch_at(1.0, 10, 0), "base.json", 0.05, 0.05);
        let v = &slower.comparison[0].shift;
        assert_eq!(v.verdict, Verdict::Differs, "{v:?}");
        assert!(
            v.ratio_lo > Some(1.05) && (v.ratio - 1.2).abs() < 1e-9,
            "{v:?}"
        );
        let table = slower.to_table();
        assert!(
            table.contains(
                "# against base.json: size 8 B differs: median ratio 1.200, 90 % interval"
            ),
            "{table}"
        );
        let csv = slower.to_csv();
        assert!(csv.lines().nth(1).unwrap().ends_with(",differs"), "{csv}");
        assert_eq!(csv.lines().count(), 11);

        // Two repetitions each: no verdict, and the report says how many it needs.
        let mut short = watch_at(1.0, 2, 0);
        short.compare(&watch_at(1.0, 2, 0), "short.json", 0.05, 0.05);
        let table = short.to_table();
        assert!(
            table.contains("inconclusive: median ratio 1.000, no interval, margin ±5 % (2 and 2 repetitions); a verdict needs about 3 repetitions per run"),
            "{table}"
        );
        // A compared report loads again as an earlier run, interval or none.
        for w in [&slower, &short] {
            let back: Watch = serde_json::from_str(&serde_json::to_string(w).unwrap()).unwrap();
            let (a, b) = (&back.comparison[0].shift, &w.comparison[0].shift);
            assert_eq!((a.verdict, a.reps_needed), (b.verdict, b.reps_needed));
            assert_eq!(a.ratio_hi.is_some(), b.ratio_hi.is_some());
        }
        // An earlier report from before the change (its per-sample `versus`) still loads.
        let mut old = serde_json::to_value(watch_at(1.0, 2, 0)).unwrap();
        old["versus"] = serde_json::json!([{"size": 8, "test": {"p": 0.5}, "differs": false}]);
        assert!(serde_json::from_value::<Watch>(old).is_ok());
    }
}
