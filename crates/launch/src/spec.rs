//! What to launch, and checking it before anything starts.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::LaunchError;

/// Where ranks may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Binding {
    /// Let the kernel place ranks.
    #[default]
    None,
    /// Pin rank r to the (r mod n)-th of the n CPUs the launcher may use.
    Core,
}

/// A job to launch: `nprocs` copies of `program args…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Number of ranks, at least 1.
    pub nprocs: usize,
    /// The program; without a slash it is looked up in `PATH` like a shell does.
    pub program: PathBuf,
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// Kill the job when it runs longer than this.
    pub timeout: Option<Duration>,
    /// Prefix every output line with `[rank] `.
    pub tag_output: bool,
    /// CPU placement of ranks.
    pub bind: Binding,
    /// Extra environment for every rank (the launcher's own variables `NF_RANK`… win).
    pub env: Vec<(OsString, OsString)>,
    /// Start more than [`crate::capacity::MAX_RANKS_PER_CPU`] ranks per CPU here.
    pub oversubscribe: bool,
}

impl LaunchSpec {
    /// A spec for `nprocs` ranks of `program` with no arguments and default settings.
    pub fn new(nprocs: usize, program: impl Into<PathBuf>) -> LaunchSpec {
        LaunchSpec {
            nprocs,
            program: program.into(),
            args: Vec::new(),
            timeout: None,
            tag_output: false,
            bind: Binding::None,
            env: Vec::new(),
            oversubscribe: false,
        }
    }

    /// Checks the spec and finds the program; nothing is started.
    pub(crate) fn validate(&self) -> Result<PathBuf, LaunchError> {
        if self.nprocs == 0 {
            return Err(LaunchError::NoRanks);
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(LaunchError::ZeroTimeout);
        }
        let path_var = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone());
        resolve_program(
            &self.program,
            path_var.or_else(|| std::env::var_os("PATH")).as_deref(),
        )
    }
}

/// Finds `program` as a shell would: as given when it contains a slash, else in `path`.
pub fn resolve_program(program: &Path, path: Option<&OsStr>) -> Result<PathBuf, LaunchError> {
    if program.as_os_str().is_empty() {
        return Err(LaunchError::EmptyProgram);
    }
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        return match check_executable(program) {
            Ok(()) => Ok(program.to_owned()),
            Err(reason) => Err(LaunchError::NotExecutable {
                path: program.to_owned(),
                reason,
            }),
        };
    }
    let path = path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut first_unusable = None;
    for dir in std::env::split_paths(path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(reason) if candidate.exists() && first_unusable.is_none() => {
                first_unusable = Some((candidate, reason));
            }
            Err(_) => {}
        }
    }
    match first_unusable {
        Some((path, reason)) => Err(LaunchError::NotExecutable { path, reason }),
        None => Err(LaunchError::ProgramNotFound {
            program: program.to_owned(),
            path: path.to_string_lossy().into_owned(),
        }),
    }
}

/// Why `path` cannot be executed, if it cannot.
fn check_executable(path: &Path) -> Result<(), &'static str> {
    let meta = std::fs::metadata(path).map_err(|_| "it does not exist")?;
    if !meta.is_file() {
        return Err("it is not a regular file");
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("it has no execute permission (chmod +x)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_in_path_like_a_shell() {
        let found = resolve_program(
            Path::new("sh"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(found.ends_with("sh"), "{}", found.display());
    }

    #[test]
    fn missing_program_is_named() {
        let err =
            resolve_program(Path::new("no-such-prog-xyz"), Some(OsStr::new("/bin"))).unwrap_err();
        assert!(err.to_string().contains("no-such-prog-xyz"), "{err}");
    }

    #[test]
    fn directories_and_plain_files_are_not_executable() {
        let err = resolve_program(Path::new("/tmp"), None).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let err = resolve_program(&manifest, None).unwrap_err();
        assert!(err.to_string().contains("execute permission"), "{err}");
    }
}
