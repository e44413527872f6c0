//! Checking a benchmark's parameters before any rank starts, so a bad argument is one
//! error from the command the user typed, not one per rank after a job has run.

use std::path::Path;

/// A benchmark parameter that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--{arg} {value}: {why}")]
pub struct ParamError {
    /// The option at fault, without dashes (`sizes`, `iters`, `json`).
    pub arg: &'static str,
    /// The value given.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

impl ParamError {
    /// `--arg value: why`.
    pub fn new(arg: &'static str, value: impl ToString, why: impl Into<String>) -> ParamError {
        ParamError {
            arg,
            value: value.to_string(),
            why: why.into(),
        }
    }
}

/// At least one timed iteration.
pub fn check_iters(iters: usize) -> Result<(), ParamError> {
    if iters == 0 {
        return Err(ParamError::new("iters", 0, "at least 1 timed iteration"));
    }
    Ok(())
}

/// A non-empty size list whose sizes all satisfy `ok` (described by `rule`).
pub fn check_sizes(
    sizes: &[usize],
    ok: impl Fn(usize) -> bool,
    rule: &str,
) -> Result<(), ParamError> {
    if sizes.is_empty() {
        return Err(ParamError::new("sizes", "", "give at least one size"));
    }
    match sizes.iter().find(|&&s| !ok(s)) {
        Some(bad) => Err(ParamError::new("sizes", bad, format!("not {rule}"))),
        None => Ok(()),
    }
}

/// That a report can be written to `path` (option `--arg`): its directory exists and
/// a file can be created there. A file created by the check is removed again.
pub fn check_writable(arg: &'static str, path: &Path) -> Result<(), ParamError> {
    use std::os::unix::fs::FileTypeExt;
    let bad = |why: String| ParamError::new(arg, path.display(), why);
    let existing = std::fs::metadata(path).ok();
    match &existing {
        Some(m) if m.is_dir() => return Err(bad("is a directory; give a file name".into())),
        // Opening a FIFO would block the check until a reader comes (forever).
        Some(m) if m.file_type().is_fifo() || m.file_type().is_socket() => {
            return Err(bad("is a FIFO or socket; give a file name".into()))
        }
        _ => {}
    }
    let existed = existing.is_some();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| bad(format!("cannot be written ({e})")))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        assert!(check_writable("json", Path::new("/dev/null")).is_ok());
        let dir = std::env::temp_dir().join(format!("nf-params-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("f");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = check_writable("json", &fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes_and_iters() {
        let mult8 = |s: usize| s > 0 && s.is_multiple_of(8);
        assert_eq!(check_sizes(&[8, 16], mult8, "a multiple of 8"), Ok(()));
        let e = check_sizes(&[8, 12], mult8, "a positive multiple of 8").unwrap_err();
        assert_eq!(e.to_string(), "--sizes 12: not a positive multiple of 8");
        assert!(check_sizes(&[], mult8, "x").is_err());
        assert!(check_iters(0).is_err() && check_iters(1).is_ok());
    }

    #[test]
    fn writable_paths() {
        let dir = std::env::temp_dir().join(format!("nf-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.json");
        check_writable("json", &p).unwrap();
        assert!(!p.exists(), "the check leaves nothing behind");
        let e = check_writable("json", Path::new("/nonexistent/dir/x.json")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--json /nonexistent/dir/x.json: cannot be written"),
            "{e}"
        );
        assert!(check_writable("csv", &dir)
            .unwrap_err()
            .why
            .contains("directory"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
