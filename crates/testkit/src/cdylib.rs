//! Finding a crate's freshly built C library from its integration tests.

use std::path::PathBuf;

/// The folder holding the freshly built `lib` (such as `libshmem.so`): the test
/// binary's own (`target/<profile>/deps`), where cargo puts the crate's cdylib for
/// tests; panics naming `package` (to build with `cargo test -p PACKAGE`) when the
/// library is not there.
pub fn cdylib_dir(lib: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().expect("test binary folder").to_path_buf();
    assert!(
        dir.join(lib).exists(),
        "no {lib} next to the test binary in {}; build with `cargo test -p {package}`",
        dir.display()
    );
    dir
}
