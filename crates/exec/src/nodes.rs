//! Node lists and addresses: `ADDR[,ADDR…]` or a file of one address per line; an
//! address may name a part of a gateway (`gw:/views/gpu`).

use std::path::Path;

use nf_link::addr::{parse_addr, Addr, AddrError};

use crate::ExecError;

/// The nodes of `spec`: `ADDR[,ADDR…]`, or `@FILE` with one address per line (`#`
/// comments and blank lines skipped); every address is checked.
pub fn parse_list(spec: &str) -> Result<Vec<String>, ExecError> {
    let text = match spec.strip_prefix('@') {
        Some(file) => std::fs::read_to_string(file).map_err(|source| ExecError::NodeList {
            file: Path::new(file).to_path_buf(),
            source,
        })?,
        None => spec.replace(',', "\n"),
    };
    let nodes: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if nodes.is_empty() {
        return Err(ExecError::Usage(format!("no nodes in {spec:?}")));
    }
    for n in &nodes {
        target(n).map_err(|e| ExecError::Usage(format!("node {n:?}: {e}")))?;
    }
    Ok(nodes)
}

/// A node's address and the tree to attach to there: `ADDR` (the root) or
/// `ADDR:/path` — a gateway's scope, such as `gw:/views/gpu` or `gw:/n/node3`, whose
/// `xcpu/clone` places the job.
pub fn target(spec: &str) -> Result<(Addr, String), AddrError> {
    match nf_link::addr::parse_target(spec) {
        Ok(t) if !spec.starts_with([':', '/']) => Ok((t.addr, t.path)),
        _ => parse_addr(spec).map(|addr| (addr, String::new())),
    }
}

/// A node's short name for tags: the host of `tls:HOST:PORT`, or the path's file name.
pub fn short_name(node: &str) -> String {
    match parse_addr(node) {
        Ok(Addr::Tls(h) | Addr::Tcp(h)) => h.rsplit_once(':').map_or(h.clone(), |(host, _)| {
            host.trim_matches(['[', ']']).to_string()
        }),
        _ => node.to_string(),
    }
}

/// A connection's failure as a node's line: the error alone where it names the address
/// and cause already, else prefixed with what failed.
pub(crate) fn connecting(e: nf_ninep_client::connect::ConnectError) -> String {
    if e.names_address() {
        e.to_string()
    } else {
        format!("connecting: {e}")
    }
}
