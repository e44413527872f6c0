//! Per-pair heat maps: one square per (from, to) pair, coloured by value.

use std::path::Path;

use plotters::prelude::*;

use crate::plot::{ensure_font, title_font, PlotError};

/// One matrix to draw, with its caption (values on the diagonal are not drawn).
pub struct Panel<'a> {
    /// Above the panel.
    pub caption: &'a str,
    /// `values[i][j]`.
    pub values: &'a [Vec<f64>],
    /// Whether larger is better (green) or worse (red).
    pub higher_is_better: bool,
}

/// Red → yellow → green for `t` in 0..=1 (1 = best).
fn colour(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let (r, g) = if t < 0.5 {
        (220.0, 60.0 + 320.0 * t)
    } else {
        (220.0 - 340.0 * (t - 0.5), 220.0)
    };
    RGBColor(r as u8, g as u8, 70)
}

/// Draws the panels side by side into `path` (PNG).
pub fn plot_heatmaps(
    title: &str,
    panels: &[Panel<'_>],
    path: impl AsRef<Path>,
) -> Result<(), PlotError> {
    let path = path.as_ref();
    let n = panels.first().map_or(0, |p| p.values.len());
    if n < 2 || panels.iter().any(|p| p.values.len() != n) {
        return Err(PlotError::NoData { path: path.into() });
    }
    ensure_font()?;
    let draw_err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: path.into(),
        reason: e.to_string(),
    };
    let side = 640u32;
    let root =
        BitMapBackend::new(path, (side * panels.len() as u32, side + 60)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(&e))?;
    let root = root
        .titled(title, title_font(24))
        .map_err(|e| draw_err(&e))?;
    for (area, panel) in root.split_evenly((1, panels.len())).iter().zip(panels) {
        let off: Vec<f64> = (0..n * n)
            .filter(|k| k / n != k % n)
            .map(|k| panel.values[k / n][k % n])
            .filter(|v| v.is_finite())
            .collect();
        let lo = off.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = off.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let caption = format!("{} ({lo:.3} … {hi:.3})", panel.caption);
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0..n, 0..n)
            .map_err(|e| draw_err(&e))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("to rank")
            .y_desc("from rank")
            .x_labels(n.min(16))
            .y_labels(n.min(16))
            .draw()
            .map_err(|e| draw_err(&e))?;
        let span = if hi > lo { hi - lo } else { 1.0 };
        chart
            .draw_series(
                (0..n)
                    .flat_map(|i| (0..n).map(move |j| (i, j)))
                    .map(|(i, j)| {
                        let v = panel.values[i][j];
                        let fill = if i == j || !v.is_finite() {
                            RGBColor(235, 235, 235)
                        } else {
                            let t = (v - lo) / span;
                            colour(if panel.higher_is_better { t } else { 1.0 - t })
                        };
                        Rectangle::new([(j, i), (j + 1, i + 1)], fill.filled())
                    }),
            )
            .map_err(|e| draw_err(&e))?;
    }
    root.present().map_err(|e| draw_err(&e))?;
    Ok(())
}
