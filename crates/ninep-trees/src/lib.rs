//! Ready-made 9P2000.L trees for `nf-ninep-server`: [`PassthroughFs`] (#U),
//! [`ReadOnlyView`] (#R), [`SyntheticTree`], and [`MountTable`], which composes trees
//! under one root. Each implements [`nf_ninep_server::Filesystem`]; none knows about
//! ninefold's node, so a gateway can build its namespace from the same parts.
//!
//! | tree | serves | writes |
//! |---|---|---|
//! | [`PassthroughFs`] | a host directory | go to the host |
//! | [`ReadOnlyView`] | a host directory | go to private in-memory copies, gone with the server |
//! | [`SyntheticTree`] | nodes built in code | as each file decides |
//! | [`MountTable`] | other trees, one per root name | as each child decides; none at the root |
//!
//! The two host trees share `host.rs`, whose rules keep every access inside the export
//! root (`..` stops at the root; symlinks are never followed).
//!
//! | module | job |
//! |---|---|
//! | `host` | walking beneath an export root without leaving it; acting as the user |
//! | `hostdir` | a host directory read page by page with the kernel's cookies (no snapshot) |
//! | `passthrough` | [`PassthroughFs`]: a host directory, read-write |
//! | [`readonly`] | [`ReadOnlyView`]: a host directory; writes go to an in-memory overlay |
//! | [`synthetic`] | [`SyntheticTree`]: static, dynamic and streaming files built in code |
//! | [`mount`] | [`MountTable`]: trees under one root, with an attach check |
//! | [`erased`] | [`Erased`], [`DynFs`]: any tree behind one type, for a mount table |
//! | `listing` | [`Listing`]: directory reads by offset over a snapshot charged to the connection, for small computed listings |

#![forbid(unsafe_code)]

pub mod erased;
mod host;
mod hostdir;
mod listing;
pub mod mount;
mod passthrough;
pub mod readonly;
pub mod synthetic;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use nf_ninep::types::Timespec;

pub use erased::{AnyFid, DynFs, Erased};
pub use listing::Listing;
pub use mount::{MountFid, MountTable};
pub use passthrough::{HostFid, PassthroughFs};
pub use readonly::ReadOnlyView;
pub use synthetic::SyntheticTree;

/// A host directory could not be opened for export.
#[derive(Debug, thiserror::Error)]
#[error("opening export directory {}: {source} (does it exist, is it a directory, may this user read it?)", path.display())]
pub struct ExportError {
    /// The directory asked for.
    pub path: PathBuf,
    /// The OS error.
    pub source: std::io::Error,
}

/// The current time as a 9P timespec.
pub(crate) fn now() -> Timespec {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timespec {
        sec: d.as_secs(),
        nsec: u64::from(d.subsec_nanos()),
    }
}
