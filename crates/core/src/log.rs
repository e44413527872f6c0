//! Which log lines ninefold's programs print: one rule for `nf`, its ranks and the
//! check programs.
//!
//! The filter is `NF_LOG`, else `RUST_LOG` (the Rust ecosystem's usual variable),
//! else the program's default; both take `tracing`'s directives (`warn`,
//! `nf_core=debug,info`). A value that does not parse gives a warning naming it and
//! the default is used, rather than silence. Colour is used only when stderr is a
//! terminal.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The variables read, first found wins.
pub const VARS: [&str; 2] = ["NF_LOG", "RUST_LOG"];

/// The filter the environment asks for, else `default`; a warning line (to print)
/// when a variable is set to something that is not a filter.
pub fn filter_from(
    lookup: impl Fn(&str) -> Option<String>,
    default: &str,
) -> (EnvFilter, Option<String>) {
    for var in VARS {
        if let Some(value) = lookup(var) {
            return match EnvFilter::try_new(&value) {
                Ok(f) => (f, None),
                Err(e) => (
                    EnvFilter::new(default),
                    Some(format!(
                        "warning: {var}={value:?} is not a log filter ({e}); using {default:?} \
                         (give a level such as warn, info, debug, or target=level pairs)"
                    )),
                ),
            };
        }
    }
    (EnvFilter::new(default), None)
}

/// Logs to stderr at the level the environment asks for (default `default`), in
/// colour only on a terminal; prints a warning first when the setting is bad.
pub fn init(program: &str, default: &str) {
    let (filter, warning) = filter_from(|v| std::env::var(v).ok(), default);
    if let Some(w) = warning {
        eprintln!("{program}: {w}");
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn nf_log_then_rust_log_then_the_default() {
        let (f, w) = filter_from(env(&[("RUST_LOG", "debug")]), "warn");
        assert_eq!((f.to_string(), w), ("debug".into(), None));
        let (f, _) = filter_from(env(&[("RUST_LOG", "debug"), ("NF_LOG", "info")]), "warn");
        assert_eq!(f.to_string(), "info");
        let (f, w) = filter_from(env(&[]), "warn");
        assert_eq!((f.to_string(), w), ("warn".into(), None));
    }

    #[test]
    fn a_bad_filter_warns_and_uses_the_default() {
        let (f, w) = filter_from(env(&[("NF_LOG", "nf=loud")]), "warn");
        assert_eq!(f.to_string(), "warn");
        let w = w.expect("a warning");
        assert!(
            w.contains("NF_LOG=\"nf=loud\"") && w.contains("not a log filter"),
            "{w}"
        );
    }
}
