//! `nf-core-check` as a user meets it: `--help` prints usage, not a complaint.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test core_check_cli`), which builds the programs it starts.

use std::process::Command;

#[test]
fn help_prints_usage() {
    for flag in ["--help", "-h"] {
        let out = Command::new(env!("CARGO_BIN_EXE_nf-core-check"))
            .arg(flag)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.starts_with("usage: nf-core-check MODE"), "{stdout}");
        assert!(stdout.contains("collectives"), "{stdout}");
    }
}
