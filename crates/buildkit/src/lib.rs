//! Helpers for ninefold's build scripts (`build.rs`): they compile small C shims
//! (libfabric's for the ofi transport, PMIx's for the PMIx bootstrap) into shared
//! objects that the crates `dlopen` at run time, so the crates build and run without
//! the libraries behind the shims ([`compile_shim`]); and the C side of the C
//! libraries (`libarmci`, `libshmem`) into the crate's cdylib ([`link_c_side`]), with
//! the functions a header declares ([`function_declarations`]).

mod decls;

pub use decls::{expand_header, function_declarations};

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

/// Compiles the crate's `csrc/*.c` (with `include/` and `csrc/` on the include path,
/// gnu11, warnings as errors) with `compiler` (else the target's C compiler) into the
/// static archive `archive`, linked whole (`+whole-archive`) into the crate's cdylib,
/// since no Rust code calls the C functions it exports; exports the C names the
/// crate's `exports.map` lists, next to the version script rustc writes for the Rust
/// names; and gives the library `soname`. Returns `OUT_DIR`.
pub fn link_c_side(compiler: Option<&str>, archive: &str, soname: &str) -> String {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    for watched in ["csrc", "include", "exports.map"] {
        println!("cargo:rerun-if-changed={watched}");
    }
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir.join("csrc"))
        .expect("read csrc/")
        .map(|e| e.expect("csrc entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let mut build = cc::Build::new();
    if let Some(cc) = compiler {
        build.compiler(cc);
    }
    build
        .files(&sources)
        .include(dir.join("include"))
        .include(dir.join("csrc"))
        .flag("-std=gnu11")
        .flag("-fvisibility=default")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .cargo_metadata(false)
        .compile(archive);
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-link-search=native={out}");
    println!("cargo:rustc-link-lib=static:+whole-archive={archive}");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        dir.join("exports.map").display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    out
}
