//! Pieces the scenario tests share.

use std::path::Path;

/// Segment files are unlinked once mapped, so nothing remains once a job is over.
pub fn leftovers_are_gone(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "segments left behind: {left:?}");
}
