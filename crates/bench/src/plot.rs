//! PNG plots of benchmark reports, drawn with `plotters` and a system TrueType font
//! (no fontconfig / freetype needed; see [`FONT_CANDIDATES`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nf_sys::setting::Setting;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::{register_font, FontResult};

use crate::report::{fmt_size, Report};

/// The settings this crate reads, as `nf config` lists them: the plots' font.
pub const SETTINGS: &[Setting] = &[Setting::new(
    "NF_PLOT_FONT",
    "bench",
    "TrueType font file for benchmark plots, tried before the system's",
    "DejaVu Sans or Liberation Sans",
)];

/// Fonts tried in order (after `$NF_PLOT_FONT`, if set): the first that exists is used.
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", // Debian, Ubuntu: fonts-dejavu-core
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf", // Fedora, RHEL
    "/usr/share/fonts/TTF/DejaVuSans.ttf",             // Arch
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",          // older Fedora, Alpine
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", // Debian: fonts-liberation
];

/// Family name the font is registered under and drawn with.
const FAMILY: &str = "sans-serif";

/// (size in bytes, median half round trip in µs, MB/s) of one message size.
type Point = (f64, f64, f64);

/// Plot size in pixels (two panels side by side).
const WIDTH: u32 = 1600;
const HEIGHT: u32 = 700;

/// Drawing a plot failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlotError {
    /// No usable font file was found.
    #[error(
        "no TrueType font for plots (tried {tried}); install one with \
         `apt-get install fonts-dejavu-core` or point NF_PLOT_FONT at a .ttf file"
    )]
    NoFont {
        /// The paths tried, comma-separated.
        tried: String,
    },
    /// The font file exists but could not be read or parsed.
    #[error("font {}: {reason}", path.display())]
    BadFont {
        /// The font file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// There is nothing to plot (no reports, or no positive values).
    #[error("nothing to plot into {}: no results with positive size and latency", path.display())]
    NoData {
        /// The PNG that was to be written.
        path: PathBuf,
    },
    /// Drawing or writing the PNG failed.
    #[error("{}: {reason}", path.display())]
    Draw {
        /// The PNG being written.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Registers the first font found (once per process) under the `sans-serif` family.
pub fn ensure_font() -> Result<(), PlotError> {
    static FONT: OnceLock<Result<(), PlotError>> = OnceLock::new();
    FONT.get_or_init(load_font).clone()
}

fn load_font() -> Result<(), PlotError> {
    let mut tried: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("NF_PLOT_FONT").filter(|p| !p.is_empty()) {
        tried.push(p.into());
    }
    tried.extend(FONT_CANDIDATES.iter().map(PathBuf::from));
    let Some(path) = tried.iter().find(|p| p.is_file()) else {
        let tried = tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(PlotError::NoFont { tried });
    };
    let bad = |reason: String| PlotError::BadFont {
        path: path.clone(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    // plotters keeps `&'static` font data; this happens once per process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    for style in [FontStyle::Normal, FontStyle::Bold] {
        register_font(FAMILY, style, bytes)
            .map_err(|_| bad("not a valid TrueType/OpenType font".into()))?;
    }
    Ok(())
}

/// The words on a two-panel plot (time per message on the left, data rate on the right).
#[derive(Debug, Clone)]
pub struct PlotText {
    /// Title; the series' labels are appended (`TITLE: a vs b`).
    pub title: &'static str,
    /// Caption of the left panel.
    pub time_caption: &'static str,
    /// Y axis of the left panel.
    pub time_axis: &'static str,
    /// Caption of the right panel.
    pub rate_caption: &'static str,
    /// X axis of both panels.
    pub x_axis: &'static str,
}

/// The ping-pong's words.
pub const PINGPONG_TEXT: PlotText = PlotText {
    title: "ping-pong",
    time_caption: "half round trip (median)",
    time_axis: "half round trip (µs)",
    rate_caption: "bandwidth (size / median half round trip)",
    x_axis: "message size",
};

/// Plots ping-pong reports into one PNG at `path`: median half round trip (µs,
/// log-log) against message size on the left, bandwidth (`mb_per_s`, MB/s = 10^6 B/s,
/// log size axis) on the right; one line with markers per `(label, report)`.
pub fn plot_pingpong(reports: &[(&str, &Report)], path: impl AsRef<Path>) -> Result<(), PlotError> {
    plot_reports(reports, path, &PINGPONG_TEXT)
}

/// Plots reports as [`plot_pingpong`] does, with the words of `text`: the median
/// sample against `size` on the left, `mb_per_s` on the right.
pub fn plot_reports(
    reports: &[(&str, &Report)],
    path: impl AsRef<Path>,
    text: &PlotText,
) -> Result<(), PlotError> {
    let path = path.as_ref();
    let series: Vec<(&str, Vec<Point>)> = reports
        .iter()
        .map(|(label, r)| {
            let pts = r
                .results
                .iter()
                .filter(|s| {
                    s.size > 0
                        && s.median_us > 0.0
                        && s.median_us.is_finite()
                        && s.mb_per_s.is_finite()
                })
                .map(|s| (s.size as f64, s.median_us, s.mb_per_s))
                .collect();
            (*label, pts)
        })
        .collect();
    let all = || series.iter().flat_map(|(_, p)| p.iter());
    if all().next().is_none() {
        return Err(PlotError::NoData { path: path.into() });
    }
    ensure_font()?;

    let fold = |f: fn(&Point) -> f64| {
        all()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (x_lo, x_hi) = fold(|p| p.0);
    let (l_lo, l_hi) = fold(|p| p.1);
    let (_, b_hi) = fold(|p| p.2);
    // Whole powers of the axis base around the data, so the log axes get labelled ticks;
    // nudged outwards so rounding in plotters' tick search keeps the end ticks.
    let x_range = log_bounds(x_lo, x_hi, 2.0);
    let l_range = log_bounds(l_lo, l_hi, 10.0);
    let b_range = 0.0..(b_hi * 1.08).max(1.0);

    let draw_err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: path.into(),
        reason: e.to_string(),
    };
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(&e))?;
    let labels = series
        .iter()
        .map(|(l, _)| *l)
        .collect::<Vec<_>>()
        .join(" vs ");
    let (title, size) =
        fitted_title(&format!("{}: {labels}", text.title), WIDTH).map_err(|e| draw_err(&e))?;
    let root = root
        .titled(&title, title_font(size))
        .map_err(|e| draw_err(&e))?;
    let panels = root.split_evenly((1, 2));

    let left = Panel {
        caption: text.time_caption,
        y_desc: text.time_axis,
        x_desc: text.x_axis,
        y_labels: 12,
        y_area: 80,
    };
    let right = Panel {
        caption: text.rate_caption,
        y_desc: "bandwidth (MB/s, MB = 10^6 B)",
        x_desc: text.x_axis,
        y_labels: 10,
        y_area: 90,
    };
    let x = || x_range.clone().log_scale().base(2.0);
    draw_panel(&panels[0], &left, x(), l_range.log_scale(), &series, |p| {
        p.1
    })
    .map_err(|e| draw_err(&e))?;
    draw_panel(&panels[1], &right, x(), b_range, &series, |p| p.2).map_err(|e| draw_err(&e))?;
    root.present().map_err(|e| draw_err(&e))?;
    Ok(())
}

/// Titles and sizes of one panel.
struct Panel {
    caption: &'static str,
    y_desc: &'static str,
    x_desc: &'static str,
    y_labels: usize,
    y_area: u32,
}

/// Draws one panel: axes over message size (log 2), one line per series with `y` of
/// each point, and a legend.
fn draw_panel<'a, DB, Y>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    x: impl AsRangedCoord<CoordDescType = LogCoord<f64>, Value = f64>,
    y: Y,
    series: &[(&'a str, Vec<Point>)],
    pick: fn(&Point) -> f64,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(panel.caption, (FAMILY, 22))
        .margin(15)
        .x_label_area_size(55)
        .y_label_area_size(panel.y_area)
        .build_cartesian_2d(x, y)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(panel.x_desc)
        .y_desc(panel.y_desc)
        .x_labels(12)
        .y_labels(panel.y_labels)
        .x_label_formatter(&|v: &f64| fmt_size(v.round() as usize))
        .y_label_formatter(&|v: &f64| fmt_number(*v))
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 18))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let c = Palette99::pick(i).to_rgba();
        chart
            .draw_series(
                LineSeries::new(pts.iter().map(|p| (p.0, pick(p))), c.stroke_width(2))
                    .point_size(4),
            )
            .map_err(|e| err(&e))?
            .label(*label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FAMILY, 17))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    Ok(())
}

/// The whole powers of `base` just around `lo..hi` (at least one decade / octave).
/// Title font sizes tried, largest first; below the last the title is shortened.
const TITLE_SIZES: [u32; 4] = [30, 26, 22, 18];
/// Room left beside a title, in pixels.
const TITLE_MARGIN: u32 = 40;

pub(crate) fn title_font(size: u32) -> FontDesc<'static> {
    (FAMILY, size).into_font().style(FontStyle::Bold)
}

/// `title` and a font size at which it fits in `width` pixels (measured with the font
/// it is drawn in): the largest of [`TITLE_SIZES`] that fits, else the smallest with
/// the title cut short and ending in `…`.
fn fitted_title(title: &str, width: u32) -> FontResult<(String, u32)> {
    let room = width.saturating_sub(TITLE_MARGIN);
    for size in TITLE_SIZES {
        if title_font(size).box_size(title)?.0 <= room {
            return Ok((title.to_string(), size));
        }
    }
    let size = TITLE_SIZES[TITLE_SIZES.len() - 1];
    let mut chars: Vec<char> = title.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let cut = format!("{}…", chars.iter().collect::<String>().trim_end());
        if title_font(size).box_size(&cut)?.0 <= room {
            return Ok((cut, size));
        }
    }
    Ok((String::new(), size))
}

fn log_bounds(lo: f64, hi: f64, base: f64) -> std::ops::Range<f64> {
    let a = lo.log(base).floor();
    let b = hi.log(base).ceil().max(a + 1.0);
    base.powf(a) * 0.999..base.powf(b) * 1.001
}

/// A tick value without needless digits: `0.1`, `2.5`, `40`, `12000`.
fn fmt_number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SizeResult;

    /// Width and height from a PNG's IHDR, checking the signature on the way.
    fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
        const SIG: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
        if bytes.len() < 24 || bytes[..8] != SIG || &bytes[12..16] != b"IHDR" {
            return None;
        }
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some((be(&bytes[16..20]), be(&bytes[20..24])))
    }

    fn synthetic(transport: &str, base_us: f64, gb_per_s: f64) -> Report {
        let mut sizes: Vec<usize> = (3..=23).map(|p| 1usize << p).collect();
        sizes.push(2_000_000);
        sizes.sort_unstable();
        let results = sizes
            .iter()
            .map(|&s| {
                let t = base_us + s as f64 / (gb_per_s * 1e3);
                SizeResult::from_samples(s, &[t * 0.98, t, t * 1.05]).unwrap()
            })
            .collect();
        Report::new("pingpong", transport, 2, results)
    }

    #[test]
    fn plots_a_png() {
        // scripts/setup.sh installs fonts-dejavu-core: a missing font fails, not skips.
        ensure_font().expect("a font for plots");
        let a = synthetic("shm", 0.3, 8.0);
        let b = synthetic("openmpi-ob1-vader", 0.25, 10.0);
        let dir = std::env::temp_dir().join(format!("nf-bench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("pingpong.png");
        plot_pingpong(&[("ninefold shm", &a), ("Open MPI ob1/vader", &b)], &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(png_size(&bytes), Some((WIDTH, HEIGHT)));
        if let Some(keep) = std::env::var_os("NF_BENCH_KEEP_PLOT") {
            std::fs::copy(&png, keep).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn titles_fit_the_image() {
        // scripts/setup.sh installs fonts-dejavu-core: a missing font fails, not skips.
        ensure_font().expect("a font for plots");
        let width = |t: &str, size| title_font(size).box_size(t).unwrap().0;
        // `nf bench rma`'s default run: eight cases in the title.
        let cases = ["put", "put-fence", "get", "acc"]
            .iter()
            .flat_map(|op| ["contig", "strided"].map(|l| format!("rma-{op}-{l}")))
            .collect::<Vec<_>>()
            .join(" vs ");
        let long = format!("rma: {cases}");
        assert!(width(&long, 30) > WIDTH, "the case this guards against");
        let (fitted, size) = fitted_title(&long, WIDTH).unwrap();
        assert!(
            width(fitted.as_str(), size) <= WIDTH - TITLE_MARGIN,
            "{fitted}"
        );
        // A short title keeps its words and the largest size.
        assert_eq!(
            fitted_title("ping-pong: shm", WIDTH).unwrap(),
            ("ping-pong: shm".to_string(), 30)
        );
        // Far too long: cut short, marked.
        let (cut, _) = fitted_title(&long.repeat(3), WIDTH).unwrap();
        assert!(cut.ends_with('…') && cut.len() < long.len() * 3);
    }

    #[test]
    fn empty_is_an_error() {
        let r = Report::new("pingpong", "shm", 2, vec![]);
        let e = plot_pingpong(&[("x", &r)], "/tmp/never-written.png").unwrap_err();
        assert!(matches!(e, PlotError::NoData { .. }), "{e}");
        assert!(e.to_string().contains("/tmp/never-written.png"));
    }

    #[test]
    fn numbers() {
        assert_eq!(fmt_number(0.1), "0.1");
        assert_eq!(fmt_number(2.5), "2.5");
        assert_eq!(fmt_number(40.0), "40");
        assert_eq!(fmt_number(12000.0), "12000");
        assert_eq!(fmt_number(0.0), "0");
    }
}
