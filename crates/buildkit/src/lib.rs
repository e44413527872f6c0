//! Helpers for ninefold's build scripts (`build.rs`), which compile small C shims
//! (libfabric's for the ofi transport, PMIx's for the PMIx bootstrap) into shared
//! objects that the crates `dlopen` at run time, so the crates build and run without
//! the libraries behind the shims.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Compiles `source` into the shared object `so` with the target's C compiler (as the
/// `cc` crate picks it): position-independent, `-O2 -Wall -Wextra`, hidden visibility
/// (the shim exports what it marks), then `extra` arguments (include paths, libraries).
/// Compiler warnings become cargo warnings prefixed with `label`. On failure, says why
/// in one line (the compiler's first lines of output).
pub fn compile_shim(
    source: &str,
    so: &Path,
    extra: &[OsString],
    label: &str,
) -> Result<PathBuf, String> {
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let run = compiler
        .to_command()
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-Wall",
            "-Wextra",
            "-fvisibility=hidden",
        ])
        .arg("-o")
        .arg(so)
        .arg(source)
        .args(extra)
        .output()
        .map_err(|e| format!("running the C compiler {:?}: {e}", compiler.path()))?;
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() {
        let first: Vec<&str> = stderr.lines().take(6).collect();
        return Err(format!(
            "the shim {source} failed to compile: {}",
            first.join(" | ")
        ));
    }
    for line in stderr.lines() {
        println!("cargo:warning={label}: {line}");
    }
    Ok(so.to_owned())
}

/// Whether the C compiler accepts `#include <header>` (the library's development
/// files are installed).
pub fn has_header(header: &str, scratch: &Path) -> Result<bool, String> {
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let probe = scratch.join("nf_header_probe.c");
    std::fs::write(
        &probe,
        format!("#include <{header}>\nint main(void) {{ return 0; }}\n"),
    )
    .map_err(|e| format!("writing {}: {e}", probe.display()))?;
    let out = compiler
        .to_command()
        .arg("-fsyntax-only")
        .arg(&probe)
        .output()
        .map_err(|e| format!("running the C compiler {:?}: {e}", compiler.path()))?;
    Ok(out.status.success())
}
