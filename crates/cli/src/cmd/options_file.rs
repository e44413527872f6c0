//! Command-line options kept in a TOML file (`nf serve --config /etc/ninefold/serve.toml`),
//! as a system service keeps its settings under `/etc`.
//!
//! Each key is a long option without its dashes, with the value the option takes:
//!
//! ```toml
//! export = "/srv/data"
//! tcp = ["0.0.0.0:5640"]        # a list: the option once per element
//! tls-cert = "/etc/ninefold/node.pem"
//! max-clients = 512
//! foreground = true             # a flag: true gives it, false leaves it out
//! ```
//!
//! The file becomes options placed *before* the command line's, and the command
//! declares that a later option overrides an earlier one, so the command line wins
//! (lists add up). The file is parsed by the same clap definition as the command line:
//! an unknown key or a bad value is the same error, naming the file.

use std::path::Path;

use anyhow::{bail, Context};

/// Most bytes of an options file (a settings file, not data).
const MAX_BYTES: u64 = 1 << 20;

/// The options `path` holds, as command-line words (`--key=value`).
pub fn words(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = nf_sys::file::read_regular_text(path, MAX_BYTES)
        .with_context(|| format!("reading the options file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{}: not a TOML file", path.display()))?;
    let mut out = Vec::new();
    for (key, value) in &table {
        if key == "config" {
            bail!("{}: `config` cannot name another file", path.display());
        }
        push(&mut out, key, value).with_context(|| format!("{}: key `{key}`", path.display()))?;
    }
    Ok(out)
}

/// The words for one key.
fn push(out: &mut Vec<String>, key: &str, value: &toml::Value) -> anyhow::Result<()> {
    use toml::Value;
    match value {
        Value::Boolean(true) => out.push(format!("--{key}")),
        Value::Boolean(false) => {}
        Value::String(s) => out.push(format!("--{key}={s}")),
        Value::Integer(n) => out.push(format!("--{key}={n}")),
        Value::Float(x) => out.push(format!("--{key}={x}")),
        Value::Array(items) => {
            for item in items {
                if matches!(item, Value::Array(_) | Value::Table(_)) {
                    bail!("a list may hold plain values only");
                }
                push(out, key, item)?;
            }
        }
        Value::Table(_) | Value::Datetime(_) => {
            bail!("give a string, a number, true/false or a list of those")
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_options() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("serve.toml");
        std::fs::write(
            &f,
            "export = \"/srv\"\ntcp = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nforeground = true\nno-unix = false\nmax-clients = 9\n",
        )
        .unwrap();
        let mut got = words(&f).unwrap();
        // A TOML table has no order; a list keeps its own.
        got.sort();
        assert_eq!(
            got,
            [
                "--export=/srv",
                "--foreground",
                "--max-clients=9",
                "--tcp=127.0.0.1:1",
                "--tcp=127.0.0.1:2",
            ]
        );
    }

    #[test]
    fn tables_nesting_and_bad_files_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("serve.toml");
        for bad in [
            "[section]\nx = 1\n",
            "config = \"/etc/other\"\n",
            "tcp = [[1]]\n",
            "= nonsense",
        ] {
            std::fs::write(&f, bad).unwrap();
            let err = format!("{:#}", words(&f).unwrap_err());
            assert!(err.contains("serve.toml"), "{bad:?}: {err}");
        }
        let missing = dir.path().join("missing.toml");
        assert!(format!("{:#}", words(&missing).unwrap_err()).contains("missing.toml"));
    }
}
