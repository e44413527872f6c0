//! `nf bench report DIR`: one self-contained HTML page from every JSON report and PNG
//! a bench or compare script left in a directory — tables of each report's figures,
//! the figures themselves (embedded, no network fetches), the machine's facts, and the
//! command line that made each report where it recorded one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

/// Why the page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// The directory could not be read.
    #[error("reading {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Nothing to report.
    #[error("{} holds no .json reports and no .png figures: run a bench with --json / --plot into it first", dir.display())]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
}

/// `s` safe inside HTML text and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Most rows of one report's table (the rest is summarised).
const MAX_ROWS: usize = 300;
/// Most numbers of an array shown inline.
const MAX_INLINE: usize = 12;

/// The scalar leaves of `v` as (path, value) rows; arrays of scalars stay one row.
fn flatten(prefix: &str, v: &serde_json::Value, rows: &mut Vec<(String, String)>) {
    use serde_json::Value as V;
    match v {
        V::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, x, rows);
            }
        }
        V::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let shown: Vec<String> = a.iter().take(MAX_INLINE).map(scalar).collect();
            let more = if a.len() > MAX_INLINE {
                format!(" … ({} values)", a.len())
            } else {
                String::new()
            };
            rows.push((prefix.to_owned(), format!("[{}]{more}", shown.join(", "))));
        }
        V::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, rows);
            }
        }
        x => rows.push((prefix.to_owned(), scalar(x))),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() != 0.0 => format!("{f:.4}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The command line a report recorded (`command`, `params.command` or `argv`).
fn command_of(v: &serde_json::Value) -> Option<String> {
    for p in ["/command", "/params/command", "/argv"] {
        match v.pointer(p) {
            Some(serde_json::Value::String(s)) => return Some(s.clone()),
            Some(serde_json::Value::Array(a)) => {
                return Some(a.iter().map(scalar).collect::<Vec<_>>().join(" "));
            }
            _ => {}
        }
    }
    None
}

/// Facts about this machine, read from the kernel.
pub fn machine_facts() -> Vec<(String, String)> {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned()).ok();
    let cpu = read("/proc/cpuinfo").and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|m| m.trim().to_owned())
    });
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = read("/proc/meminfo").and_then(|s| {
        s.lines()
            .next()
            .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
    });
    [
        ("host", Some(crate::report::hostname())),
        ("cpu", cpu),
        ("cores", Some(cores.to_string())),
        ("memory", mem),
        ("kernel", read("/proc/sys/kernel/osrelease")),
        ("load average", read("/proc/loadavg")),
        ("ninefold", Some(env!("CARGO_PKG_VERSION").to_owned())),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_owned(), v?)))
    .collect()
}

fn image(out: &mut String, path: &Path) {
    match std::fs::read(path) {
        Ok(bytes) => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            let name = escape(&path.file_name().unwrap_or_default().to_string_lossy());
            let _ = writeln!(
                out,
                "<figure><img alt=\"{name}\" src=\"data:image/png;base64,{b64}\"><figcaption>{name}</figcaption></figure>"
            );
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "<p class=\"bad\">{}: {}</p>",
                escape(&path.display().to_string()),
                escape(&e.to_string())
            );
        }
    }
}

/// The page for `dir`'s reports and figures, with `facts` about the machine.
pub fn page(dir: &Path, facts: &[(String, String)]) -> Result<String, HtmlError> {
    let err = |source| HtmlError::Dir {
        dir: dir.into(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let ext = |p: &Path, e: &str| p.extension().is_some_and(|x| x == e);
    let jsons: Vec<&PathBuf> = files.iter().filter(|p| ext(p, "json")).collect();
    let pngs: Vec<&PathBuf> = files.iter().filter(|p| ext(p, "png")).collect();
    if jsons.is_empty() && pngs.is_empty() {
        return Err(HtmlError::Empty { dir: dir.into() });
    }
    let title = format!("ninefold benchmarks: {}", dir.display());
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse;margin:.5em 0}} \
         td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:90%}} \
         img{{max-width:100%}} code{{background:#f3f3f3;padding:2px 4px}} .bad{{color:#a00}}</style></head><body>\n\
         <h1>{t}</h1>\n<h2>Machine</h2>\n<table>\n",
        t = escape(&title)
    );
    for (k, v) in facts {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</table>\n");
    let mut shown = Vec::new();
    for j in &jsons {
        let name = j
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let _ = writeln!(out, "<h2>{}</h2>", escape(&name));
        let v: serde_json::Value = match std::fs::read_to_string(j)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "<p class=\"bad\">not readable as JSON: {}</p>",
                    escape(&e)
                );
                continue;
            }
        };
        match command_of(&v) {
            Some(c) => {
                let _ = writeln!(out, "<p>Reproduce: <code>{}</code></p>", escape(&c));
            }
            None => out.push_str("<p>The report records no command line; see <code>bench/README.md</code> for the script that writes it.</p>\n"),
        }
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        out.push_str("<table>\n");
        for (k, x) in rows.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(x));
        }
        if rows.len() > MAX_ROWS {
            let _ = writeln!(
                out,
                "<tr><td colspan=\"2\">… {} more rows in {}</td></tr>",
                rows.len() - MAX_ROWS,
                escape(&name)
            );
        }
        out.push_str("</table>\n");
        // Its figure, when one has the same stem.
        if let Some(png) = pngs.iter().find(|p| p.file_stem() == j.file_stem()) {
            image(&mut out, png);
            shown.push(*png);
        }
    }
    let rest: Vec<&&PathBuf> = pngs.iter().filter(|p| !shown.contains(p)).collect();
    if !rest.is_empty() {
        out.push_str("<h2>Figures</h2>\n");
        for p in rest {
            image(&mut out, p);
        }
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_holds_every_report_its_command_and_its_figure_inline() {
        let dir = tempfile_dir();
        std::fs::write(
            dir.join("pp.json"),
            r#"{"bench":"pingpong","params":{"command":"nf bench pingpong --json pp.json"},"results":[{"size":8,"median_us":0.12}],"note":"<b>"}"#,
        )
        .unwrap();
        std::fs::write(dir.join("pp.png"), b"\x89PNG fake").unwrap();
        std::fs::write(dir.join("other.png"), b"\x89PNG other").unwrap();
        std::fs::write(dir.join("broken.json"), "{").unwrap();
        let html = page(&dir, &[("cores".into(), "2".into())]).unwrap();
        assert!(html.contains("<h2>pp.json</h2>") && html.contains("<h2>broken.json</h2>"));
        assert!(html.contains("not readable as JSON"));
        assert!(html.contains("<code>nf bench pingpong --json pp.json</code>"));
        assert!(html.contains("results[0].median_us</td><td>0.1200"));
        assert!(html.contains("&lt;b&gt;") && !html.contains("<b>"));
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        assert!(html.contains(&format!("data:image/png;base64,{b64}")));
        assert!(html.contains("<h2>Figures</h2>") && html.contains("other.png"));
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "no fetches"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let empty = tempfile_dir();
        assert!(matches!(page(&empty, &[]), Err(HtmlError::Empty { .. })));
        std::fs::remove_dir_all(&empty).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "nf-html-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn machine_facts_name_the_cores() {
        let f = machine_facts();
        assert!(f
            .iter()
            .any(|(k, v)| k == "cores" && v.parse::<usize>().unwrap() >= 1));
    }
}
