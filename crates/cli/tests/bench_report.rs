//! `nf bench report DIR`: the page made from what real benches left in a directory.

mod bench_support;

use bench_support::{finish, text};

fn nf(args: &[&str]) -> std::process::Output {
    finish(&mut bench_support::nf(args))
}

#[test]
fn a_directory_of_reports_becomes_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let at = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    let out = nf(&[
        "bench",
        "rings",
        "-n",
        "2",
        "--iters",
        "20",
        "--bw-iters",
        "2",
        "--warmup",
        "2",
        "--bw-size",
        "65536",
        "--orderings",
        "1",
        "--quiet",
        "--json",
        &at("rings.json"),
        "--plot",
        &at("rings.png"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = nf(&[
        "bench",
        "pingpong",
        "--sizes",
        "8",
        "--iters",
        "50",
        "--warmup",
        "5",
        "--quiet",
        "--json",
        &at("pp.json"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = nf(&["bench", "report", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for want in [
        "<h2>rings.json</h2>",
        "<h2>pp.json</h2>",
        "Reproduce: <code>nf bench rings -n 2",
        "Reproduce: <code>nf bench pingpong --sizes 8",
        "natural_bandwidth_mb_s",
        "data:image/png;base64,iVBORw0KGgo",
        "<th>cores</th>",
    ] {
        assert!(html.contains(want), "{want:?} not in the page");
    }
    assert!(!html.contains("src=\"http"), "the page fetches nothing");
    let empty = tempfile::tempdir().unwrap();
    let out = nf(&["bench", "report", empty.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no .json reports"),
        "{}",
        text(&out.stderr)
    );
}
