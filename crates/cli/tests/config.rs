//! `nf config`: every setting with its value and source, and the README's settings
//! table generated from the same list.

use std::process::{Command, Output};

fn nf(envs: &[(&str, &str)], args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nf"))
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("run nf");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn config_shows_values_and_where_they_came_from() {
    let out = nf(&[("NF_WAIT", "spin")], &["config"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{stdout}"))
            .to_owned()
    };
    assert!(line("NF_WAIT").ends_with("env: spin"), "{stdout}");
    assert!(line("NF_SHM_FRAMES").ends_with("default: 128"), "{stdout}");
    // Every layer's settings are there.
    for name in [
        "NF_RMA_OFI",
        "NF_MEM_REGISTRY",
        "NF_ADDR",
        "NF_LOG",
        "NF_PLOT_FONT",
    ] {
        line(name);
    }
}

#[test]
fn the_readme_settings_table_is_nf_config_markdown() {
    let out = nf(&[], &["config", "--markdown"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme
        .find("<!-- settings: generated")
        .expect("README marker");
    let body_start = start + readme[start..].find('\n').unwrap() + 1;
    let end = readme
        .find("<!-- settings: end -->")
        .expect("README end marker");
    assert_eq!(
        &readme[body_start..end],
        table,
        "README's settings table is stale: paste `nf config --markdown` between the markers"
    );
}
