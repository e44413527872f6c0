//! `nf-core-check` as a user meets it: `--help` prints usage, not a complaint.

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
