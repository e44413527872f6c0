//! Whether a job left files behind in a folder it was given (segments, registries).

use std::path::Path;

/// Fails the test if `dir` is not empty: segment files are unlinked once mapped, so
/// nothing remains once a job is over.
pub fn leftovers_are_gone(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        dir.display()
    );
}
