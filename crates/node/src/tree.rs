//! The node's file tree: one [`MountTable`] over the synthetic files and the exports.
//!
//! | path | what | tree |
//! |---|---|---|
//! | `/status` | host, arch, cores, memory, load, uptime, ranks, labels, sessions (snapshot per open) | synthetic |
//! | `/log` | the server's lines and users' (tagged, rate-limited: [`crate::log`]); readers get the history, then follow (`tail -f`) | synthetic |
//! | `/pipe/NAME` | named pipes, made by creating a file in `/pipe` | synthetic |
//! | `/fs` | the export directory, read-write (#U) | [`PassthroughFs`] |
//! | `/ro` | the export directory, writes private to the server's memory (#R) | [`ReadOnlyView`] |
//! | `/mem/JOB/RANK/SEGMENT` | running procs' rma segments: read = get, write = put | [`MemTree`] |
//! | `/xcpu` | jobs as files: sessions, uploads, output, exit ([`crate::xcpu`]) | synthetic |
//!
//! `/fs` and `/ro` exist only when an export directory is configured. The four
//! synthetic entries are one [`SyntheticTree`] mounted four times, so a pipe made
//! through one connection is seen by every other.

use std::path::PathBuf;
use std::sync::Arc;

use nf_ninep_trees::mount::MountError;
use nf_ninep_trees::synthetic::{DynamicFile, Stream, TreeError};
use nf_ninep_trees::{DynFs, Erased, ExportError};
use nf_ninep_trees::{MountTable, PassthroughFs, ReadOnlyView, SyntheticTree};

use crate::access::AttachPolicy;
use crate::log::NodeLog;
use crate::mem::MemTree;
use crate::pipe::{PipeDir, PipeLimits, DEFAULT_PIPE_CAPACITY};
use crate::status::{self, LabelError, NodeFacts};
use crate::xcpu::{Xcpu, XcpuConfig, XcpuError};

/// Default history of `/log` kept for new readers: 256 KiB.
pub const DEFAULT_LOG_HISTORY: usize = 256 * 1024;

/// What the node's tree is made from.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The directory served as `/fs` and `/ro`; none: no `/fs` or `/ro`.
    pub export: Option<PathBuf>,
    /// Bytes of `/log` kept for readers that open later (older bytes are dropped).
    pub log_history: usize,
    /// Buffer of each pipe in `/pipe`, in bytes.
    pub pipe_capacity: usize,
    /// Budgets for `/pipe`: pipes and bytes buffered, per user and in all.
    pub pipe_limits: PipeLimits,
    /// Memory `/ro` may hold for what clients write, create and remove there (content
    /// and entries; beyond it: `ENOSPC`).
    pub ro_memory_limit: u64,
    /// The rma memory registry `/mem` reads; `None`: the default
    /// ([`nf_memreg::default_dir`]).
    pub mem_registry: Option<PathBuf>,
    /// `/xcpu`'s limits and places.
    pub xcpu: XcpuConfig,
    /// The server's state directory (`--state-dir`); `None`: the default for its user
    /// ([`crate::state`]). Used only when something is kept there (`/xcpu` without
    /// its own `dir`).
    pub state_dir: Option<PathBuf>,
    /// Gateways (their certificates' common names) that may attach for users
    /// ([`AttachPolicy::trusted_gateways`]).
    pub trusted_gateways: Vec<String>,
    /// The node's labels, shown in `/status` ([`status::check_labels`]).
    pub labels: Vec<String>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            export: None,
            log_history: DEFAULT_LOG_HISTORY,
            pipe_capacity: DEFAULT_PIPE_CAPACITY,
            pipe_limits: PipeLimits::default(),
            ro_memory_limit: nf_ninep_trees::readonly::DEFAULT_MEMORY_LIMIT,
            mem_registry: None,
            xcpu: XcpuConfig::default(),
            state_dir: None,
            trusted_gateways: Vec::new(),
            labels: Vec::new(),
        }
    }
}

/// Why the node's tree could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeBuildError {
    /// The export directory cannot be served.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A subtree could not be mounted.
    #[error(transparent)]
    Mount(#[from] MountError),
    /// The synthetic tree could not be built.
    #[error(transparent)]
    Synthetic(#[from] TreeError),
    /// `/xcpu` could not be set up.
    #[error(transparent)]
    Xcpu(#[from] XcpuError),
    /// The labels are not valid.
    #[error(transparent)]
    Labels(#[from] LabelError),
}

/// The node's tree, and the handles the daemon keeps.
pub struct NodeTree {
    /// The whole tree, ready to serve.
    pub table: MountTable,
    /// `/log`'s stream: the daemon appends its own lines to it as they are (users'
    /// writes go through [`NodeLog`]).
    pub log: Stream,
    /// `/xcpu`'s sessions: the daemon ends them at shutdown.
    pub xcpu: Xcpu,
}

/// Builds the node's tree from `config`, with an [`AttachPolicy`] trusting
/// `config.trusted_gateways` as its attach check.
pub fn build(config: &NodeConfig) -> Result<NodeTree, TreeBuildError> {
    status::check_labels(&config.labels)?;
    let synthetic = SyntheticTree::new();
    let log = Stream::with_history(config.log_history);
    synthetic.add_file("/log", NodeLog::new(log.clone()))?;
    synthetic.add_dir("/pipe")?;
    synthetic.set_dir_ops(
        "/pipe",
        PipeDir::new(config.pipe_capacity, config.pipe_limits),
    )?;
    let xcpu = Xcpu::install(
        &synthetic,
        config.xcpu.clone(),
        config.state_dir.as_deref(),
        log.clone(),
    )?;
    let sessions = xcpu.session_counter();
    let labels = config.labels.clone();
    synthetic.add_file(
        "/status",
        DynamicFile::new(move || {
            let facts = NodeFacts {
                labels: &labels,
                sessions: sessions(),
            };
            status::snapshot(&facts).into_bytes()
        }),
    )?;
    let synthetic: Arc<DynFs> = Arc::new(Erased(synthetic));

    let policy = AttachPolicy {
        trusted_gateways: config.trusted_gateways.clone(),
    };
    let mut table = MountTable::new().with_attach_check(move |ctx, req| policy.check(ctx, req));
    for name in ["status", "log", "pipe", "xcpu"] {
        table.mount_dyn(name, Arc::clone(&synthetic), name)?;
    }
    if let Some(dir) = &config.export {
        table.mount("fs", PassthroughFs::new(dir)?)?;
        table.mount(
            "ro",
            ReadOnlyView::new(dir)?.with_memory_limit(config.ro_memory_limit),
        )?;
    }
    let registry = config
        .mem_registry
        .clone()
        .unwrap_or_else(nf_memreg::default_dir);
    table.mount(
        "mem",
        MemTree::new(registry, rustix::process::geteuid().as_raw()),
    )?;
    Ok(NodeTree { table, log, xcpu })
}
