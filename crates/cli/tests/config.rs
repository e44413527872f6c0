//! `nf config`: every setting with its value and source, and the README's settings
//! table generated from the same list.

use std::process::{Command, Output};

fn nf(envs: &[(&str, &str)], args: &[&str]) -> Output {
    succeeded(
        Command::new(env!("CARGO_BIN_EXE_nf"))
            .args(args)
            .envs(envs.iter().copied()),
    )
}

/// Runs `cmd`, which must succeed.
fn succeeded(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run nf");
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

/// `nf config` with `envs` in a clean environment (no tune cache, no XDG variables).
fn config_in(home: &std::path::Path, envs: &[(&str, &str)]) -> Output {
    succeeded(
        Command::new(env!("CARGO_BIN_EXE_nf"))
            .arg("config")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .envs(envs.iter().copied()),
    )
}

fn line_of(stdout: &str, name: &str) -> String {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("{name} missing:\n{stdout}"))
        .to_owned()
}

#[test]
fn config_shows_the_value_in_force_not_the_defaults_description() {
    let home = tempfile::tempdir().unwrap();
    let out = config_in(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    // XDG_RUNTIME_DIR unset: the registry is the fallback, not "$XDG_RUNTIME_DIR/…".
    let registry = line_of(&stdout, "NF_MEM_REGISTRY");
    assert!(
        registry.ends_with(&format!("default: /tmp/ninefold-{uid}/mem")),
        "{registry}"
    );
    let tune = line_of(&stdout, "NF_TUNE_FILE");
    let want = home.path().join(".cache/ninefold/tune.json");
    assert!(
        tune.ends_with(&format!("default: {}", want.display())),
        "{tune}"
    );
    // Nothing cached: the number, not "what `nf tune` cached, else …".
    let frame = line_of(&stdout, "NF_SHM_FRAME_SIZE");
    assert!(frame.ends_with("default: 16384"), "{frame}");
    assert!(!stdout.contains("$XDG"), "{stdout}");
}

#[test]
fn config_flags_each_invalid_value_with_its_parsers_message() {
    let home = tempfile::tempdir().unwrap();
    let out = config_in(
        home.path(),
        &[
            ("NF_WAIT", "bogus"),
            ("NF_PEER_CHECK_MS", "soon"),
            ("NF_SHM_FRAMES", "128"),
        ],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let wait = line_of(&stdout, "NF_WAIT");
    assert!(wait.contains("env: bogus"), "{wait}");
    assert!(
        wait.contains("INVALID") && wait.contains("spin, yield or auto"),
        "{wait}"
    );
    let check = line_of(&stdout, "NF_PEER_CHECK_MS");
    assert!(
        check.contains("INVALID") && check.contains("milliseconds"),
        "{check}"
    );
    // A valid value is not flagged.
    assert!(
        !line_of(&stdout, "NF_SHM_FRAMES").contains("INVALID"),
        "{stdout}"
    );
    for name in ["NF_WAIT", "NF_PEER_CHECK_MS"] {
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.contains("warning") && l.contains(name))
                .count(),
            1,
            "one warning for {name}:\n{stderr}"
        );
    }
}
