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

/// `NF_` variables in the sources that are not user settings, each with why, so
/// `nf config` and the README leave them out.
const NOT_SETTINGS: &[(&str, &str)] = &[
    // The launcher-to-rank contract (nf_pmi::env): nf run sets these for each rank.
    ("NF_RANK", "set by nf run for each rank: its rank"),
    ("NF_SIZE", "set by nf run for each rank: the job's size"),
    (
        "NF_LOCAL_RANK",
        "set by nf run for each rank: its index on its host",
    ),
    (
        "NF_LOCAL_SIZE",
        "set by nf run for each rank: ranks on its host",
    ),
    ("NF_JOB_ID", "set by nf run for each rank: the job's id"),
    ("NF_PMI_ADDR", "set by nf run for each rank: its PMI server"),
    (
        "NF_PMI_SECRET",
        "set by nf run for each rank: the job's secret",
    ),
    // Set by ninefold for a program it starts, never by a user.
    (
        "NF_XCPU_SESSION",
        "set by nf serve's /xcpu for the program a session starts (its number); never read",
    ),
    (
        "NF_EXEC_RANK",
        "set by nf exec for the program it starts (by a tree's nodes for those below them): its rank",
    ),
    (
        "NF_EXEC_NODE",
        "set by nf exec for the program it starts (by a tree's nodes for those below them): its node",
    ),
    (
        "NF_EXEC_SIZE",
        "set by nf exec (and nf run through the tree) for the program it starts: how many nodes",
    ),
    (
        "NF_RUN_HOSTS",
        "set by nf run through the /xcpu tree for its per-host starter: each host's first rank and count",
    ),
    (
        "NF_SERVE_DETACHED",
        "set by nf serve for the copy of itself it detaches (quiet once ready)",
    ),
    // Build time: build.rs passes them to the compiler (option_env!), not to programs.
    (
        "NF_OFI_SHIM_BUILT",
        "build time: where build.rs built the ofi shim",
    ),
    (
        "NF_OFI_UNAVAILABLE",
        "build time: why build.rs built no ofi shim",
    ),
    (
        "NF_PMIX_SHIM_BUILT",
        "build time: where build.rs built the PMIx shim",
    ),
    (
        "NF_PMIX_UNAVAILABLE",
        "build time: why build.rs built no PMIx shim",
    ),
    // Knobs of the check programs (crates/checks/src/bin) that tests run.
    (
        "NF_CHECK_EXPECT_STRIPED",
        "check program: a test's expectation",
    ),
    (
        "NF_CHECK_RANK1_MAX_PAYLOAD",
        "check program: a test's peer with a lower payload limit",
    ),
    (
        "NF_CHECK_SAY_SOURCE",
        "check program: a test asks where a setting came from",
    ),
    (
        "NF_CHECK_VANISH_AFTER",
        "check program: a test's simulated host loss",
    ),
    (
        "NF_CHECK_VANISH_HOST",
        "check program: a test's simulated host loss",
    ),
    (
        "NF_RMA_CHECK_ROUTE",
        "check program: the rma route a test expects",
    ),
    // libshmem's own (a C library nf does not link; SHMEM_SYMMETRIC_SIZE is its setting).
    (
        "NF_SHMEM_STATS",
        "libshmem diagnostic: at shmem_finalize, count the calls that left the same-host fast path (its tests read them)",
    ),
    // Unit tests inside src/.
    (
        "NF_BENCH_KEEP_PLOT",
        "unit test of plot.rs: where to keep its PNG",
    ),
    (
        "NF_SYS_TEST_SHIM_UNSET",
        "unit test of shim.rs: a variable nobody sets",
    ),
];

/// Every `"NF_…"` string literal in the workspace's sources (`crates/*/src`,
/// `python/src`), with the first file naming it.
fn nf_names_in_sources() -> std::collections::BTreeMap<String, std::path::PathBuf> {
    fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            walk(&src, &mut files);
        }
    }
    walk(&root.join("python/src"), &mut files);
    let mut names = std::collections::BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("\"NF_") {
            let rest = &text[at + 1..];
            let len = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            if len > 3 && rest[len..].starts_with('"') {
                let name = rest[..len].to_owned();
                let shown = file.strip_prefix(root).unwrap_or(&file).to_owned();
                names.entry(name).or_insert(shown);
            }
        }
    }
    names
}

#[test]
fn every_nf_variable_the_sources_read_is_listed_or_exempt_with_a_reason() {
    let out = nf(&[], &["config", "--markdown"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    assert!(listed.len() > 30, "{table}");
    let found = nf_names_in_sources();
    let exempt = |n: &str| NOT_SETTINGS.iter().any(|(e, _)| *e == n);
    let missing: Vec<String> = found
        .iter()
        .filter(|(n, _)| !listed.contains(&n.as_str()) && !exempt(n))
        .map(|(n, file)| format!("{n} (in {})", file.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "read but not listed by its layer's SETTINGS (nor in NOT_SETTINGS with a reason): {}",
        missing.join(", ")
    );
    for (name, why) in NOT_SETTINGS {
        assert!(!why.is_empty(), "{name}: say why it is not a setting");
        assert!(!listed.contains(name), "{name} is both listed and exempt");
        assert!(
            found.contains_key(*name),
            "{name} is exempt but no source names it any more: drop it from NOT_SETTINGS"
        );
    }
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
        registry.ends_with(&format!("default: /dev/shm/ninefold-{uid}/mem")),
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
    assert!(frame.ends_with("default: 16448"), "{frame}");
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

#[test]
fn config_shows_a_threshold_measured_on_this_host_and_where_it_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join("tune.json");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let host = nf_sys::host::host_identity();
    std::fs::write(
        &cache,
        format!(
            r#"{{"rndv_measured": {{"{host}": {{"threshold": 262144, "at": {now}}},
               "another host": {{"threshold": 65536, "at": {now}}}}}}}"#
        ),
    )
    .unwrap();
    let out = config_in(home.path(), &[("NF_TUNE_FILE", cache.to_str().unwrap())]);
    let rndv = line_of(&String::from_utf8_lossy(&out.stdout), "NF_RNDV_THRESHOLD");
    assert!(
        rndv.contains("measured on this host") && rndv.ends_with(": 262144"),
        "{rndv}"
    );
    // A value given in the environment wins over the measurement.
    let out = config_in(
        home.path(),
        &[
            ("NF_TUNE_FILE", cache.to_str().unwrap()),
            ("NF_RNDV_THRESHOLD", "4096"),
        ],
    );
    let rndv = line_of(&String::from_utf8_lossy(&out.stdout), "NF_RNDV_THRESHOLD");
    assert!(rndv.contains("env") && rndv.ends_with(": 4096"), "{rndv}");
}
