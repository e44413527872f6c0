//! Builds the C side of libarmci (`csrc/`, everything that touches MPI types) with
//! `mpicc` and links it whole into the library.
//!
//! 1. Find the MPI C compiler: `$MPICC`, else `mpicc` (Debian: `libopenmpi-dev`). It
//!    decides what `MPI_Comm` is (a pointer in Open MPI, an int in MPICH), which is why
//!    no Rust code touches MPI types.
//! 2. Compile `csrc/*.c` with the public headers of `include/` into a static archive,
//!    linked with `+whole-archive` so every `ARMCI_*` / `armci_*` function lands in
//!    the library even though no Rust code calls it.
//! 3. Link the MPI library the compiler wrapper names (`mpicc --showme:link`, Open
//!    MPI; `mpicc -link_info`, MPICH).
//! 4. Export the C names through `exports.map`, next to the version script rustc
//!    writes for the Rust names.
//! 5. Give the library the soname `libarmci.so.0` (install.sh installs it under that
//!    name) and link `libarmci.so.0` to `libarmci.so` in the build tree, so programs
//!    linked there (tests, `-Wl,-rpath,$PWD/target/release`) find it by that name.
//! 6. Make `ARMCI_Name` an alias of `PARMCI_Name` (the implementation, in C or Rust)
//!    for every `ARMCI_PROFILED(ret, Name, ...)` line of the headers, and
//!    `armci_msg_name` one of `parmci_msg_name` for `ARMCI_MSG_PROFILED` lines: the
//!    profiling interface. The linker defines the alias (`--defsym`): a C alias attribute
//!    cannot name a function defined in Rust.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-env-changed=MPICC");

    let mpicc = env::var("MPICC").unwrap_or_else(|_| "mpicc".into()); // 1
    let probe = Command::new(&mpicc).arg("--version").output();
    if !matches!(probe, Ok(ref o) if o.status.success()) {
        panic!(
            "libarmci needs an MPI C compiler: `{mpicc}` does not run. Install Open MPI \
             (scripts/setup.sh, or apt-get install libopenmpi-dev) or set MPICC"
        );
    }

    // 2, 4, 5 (the soname; its link below)
    let out = nf_buildkit::link_c_side(Some(&mpicc), "nfarmci_c", SONAME);
    for word in mpi_link_words(&mpicc) {
        // 3
        if let Some(path) = word.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={path}");
        } else if let Some(lib) = word.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        } else if word.starts_with("-Wl,") || word == "-pthread" {
            println!("cargo:rustc-link-arg={word}");
        }
    }

    soname_links(&out);
    for (alias, imp) in profiled_names(&dir.join("include")) {
        // 6
        println!("cargo:rustc-cdylib-link-arg=-Wl,--defsym={alias}={imp}");
    }
}

/// The name programs linked against libarmci look it up by.
const SONAME: &str = "libarmci.so.0";

/// `libarmci.so.0 -> libarmci.so` in the profile folder (`target/<profile>`, three
/// levels above OUT_DIR) and its `deps/`, where cargo puts the library; the link
/// dangles until the library is linked.
fn soname_links(out_dir: &str) {
    let profile = std::path::Path::new(out_dir)
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is target/<profile>/build/<pkg>/out");
    for dir in [profile.to_path_buf(), profile.join("deps")] {
        let link = dir.join(SONAME);
        if std::fs::symlink_metadata(&link).is_err() {
            std::fs::create_dir_all(&dir).expect("create the profile folder");
            std::os::unix::fs::symlink("libarmci.so", &link)
                .unwrap_or_else(|e| panic!("link {}: {e}", link.display()));
        }
    }
}

/// The profiling pairs the headers declare, as (alias, implementation): for
/// `ARMCI_PROFILED(ret, Name, (params))` lines `ARMCI_Name` and `PARMCI_Name`, for
/// `ARMCI_MSG_PROFILED(ret, name, ...)` lines `armci_msg_name` and `parmci_msg_name`.
fn profiled_names(include: &std::path::Path) -> Vec<(String, String)> {
    let kinds = [
        ("ARMCI_PROFILED(", "ARMCI_", "PARMCI_"),
        ("ARMCI_MSG_PROFILED(", "armci_msg_", "parmci_msg_"),
    ];
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(include).expect("read include/") {
        let path = entry.expect("include entry").path();
        if path.extension().is_none_or(|x| x != "h") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a header");
        for line in text.lines() {
            for (open, alias, imp) in kinds {
                if let Some(rest) = line.strip_prefix(open) {
                    let name = rest.split(',').nth(1).expect("PROFILED(ret, Name, ...)");
                    let name = name.trim();
                    pairs.push((format!("{alias}{name}"), format!("{imp}{name}")));
                }
            }
        }
    }
    assert!(
        pairs.len() > 50,
        "only {} profiling lines in include/",
        pairs.len()
    );
    pairs.sort();
    pairs
}

/// The linker words of the MPI wrapper (Open MPI's `--showme:link`, else MPICH's
/// `-link_info`, whose first word is the compiler itself).
fn mpi_link_words(mpicc: &str) -> Vec<String> {
    let run = |arg: &str| {
        Command::new(mpicc)
            .arg(arg)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    if let Some(text) = run("--showme:link") {
        return text.split_whitespace().map(str::to_owned).collect();
    }
    if let Some(text) = run("-link_info") {
        return text.split_whitespace().skip(1).map(str::to_owned).collect();
    }
    panic!("`{mpicc}` names no link flags (tried --showme:link and -link_info)");
}
