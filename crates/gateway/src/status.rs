//! `/status` and `/status.json`: the cluster (or a view of it) at a glance.
//!
//! Figures come from each member's own status, read every couple of seconds by the
//! member's monitor (a node's `/status`, a gateway's `/status.json`), so a read here
//! never waits for a member. Text, one line per member after the totals:
//!
//! ```text
//! members 3 up 2 down 1
//! nodes 9 up 8
//! cores 18
//! load 3.10
//! mem_total_kib 73728000
//! mem_available_kib 60000000
//! sessions 4
//! node1 up node cores=2 load=0.52 mem_available_kib=20000000 sessions=1 arch=x86_64 labels=gpu
//! rack2 up cluster nodes=7/8 cores=14 load=2.58 mem_available_kib=40000000 sessions=3
//! node9 down since=12s reason="connection refused"
//! ```

use std::fmt::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::member::{Link, Member};

/// What a member reports about itself (a cluster: its totals).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Cores.
    pub cores: u32,
    /// One-minute load average (a cluster: the sum).
    pub load: f64,
    /// Memory, KiB.
    pub mem_total_kib: u64,
    /// Memory available, KiB.
    pub mem_available_kib: u64,
    /// `/xcpu` sessions present.
    pub sessions: u32,
    /// Architecture (a node's; empty for a cluster).
    pub arch: String,
    /// Labels the node reports.
    pub labels: Vec<String>,
    /// Nodes behind it (1 for a node).
    pub nodes: u32,
    /// Nodes behind it that are up (1 for a node).
    pub nodes_up: u32,
}

impl Figures {
    /// From a node's `/status` text (`key value` lines; unknown keys ignored).
    pub fn from_node_status(text: &str) -> Figures {
        let mut f = Figures {
            nodes: 1,
            nodes_up: 1,
            ..Figures::default()
        };
        for line in text.lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let value = value.trim();
            match key {
                "cores" => f.cores = value.parse().unwrap_or(0),
                "load" => {
                    f.load = value
                        .split_whitespace()
                        .next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0.0)
                }
                "mem_total_kib" => f.mem_total_kib = value.parse().unwrap_or(0),
                "mem_available_kib" => f.mem_available_kib = value.parse().unwrap_or(0),
                "sessions" => f.sessions = value.parse().unwrap_or(0),
                "arch" => f.arch = value.to_string(),
                "labels" => {
                    f.labels = value
                        .split(',')
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && *l != "-")
                        .map(str::to_string)
                        .collect()
                }
                _ => {}
            }
        }
        f
    }

    /// From another gateway's `/status.json`: its totals.
    pub fn from_gateway_json(text: &str) -> Result<Figures, String> {
        let s: Summary = serde_json::from_str(text).map_err(|e| format!("status.json: {e}"))?;
        Ok(s.totals)
    }

    /// Cores free for one more job: cores less the larger of the load and the
    /// sessions present, less the sessions placed since this reading (the load
    /// average takes a minute to show them).
    pub fn free_cores(&self, placed: u32) -> f64 {
        let busy = self.load.max(f64::from(self.sessions)) + f64::from(placed);
        f64::from(self.cores) - busy
    }
}

/// One member's entry in `/status.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemberStatus {
    /// Its name under `/n`.
    pub name: String,
    /// Its address.
    pub addr: String,
    /// `node` or `cluster` (unknown while it has never been up: `node`).
    pub kind: String,
    /// `up` or `down`.
    pub state: String,
    /// Why it is down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds it has been down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_s: Option<u64>,
    /// Its figures, when up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// Labels: the config's and the node's.
    pub labels: Vec<String>,
}

/// `/status.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Members (configured or joined).
    pub members: u32,
    /// Members up.
    pub up: u32,
    /// Totals over the members that are up.
    pub totals: Figures,
    /// Each member.
    pub list: Vec<MemberStatus>,
}

/// The summary of `members`.
pub fn summary(members: &[Arc<Member>]) -> Summary {
    let mut totals = Figures::default();
    let mut list = Vec::with_capacity(members.len());
    let mut up = 0;
    for m in members {
        let entry = match m.link() {
            Link::Up(lanes) => {
                let conn = lanes.first();
                up += 1;
                let figures = m.figures();
                if let Some(f) = &figures {
                    totals.cores += f.cores;
                    totals.load += f.load;
                    totals.mem_total_kib += f.mem_total_kib;
                    totals.mem_available_kib += f.mem_available_kib;
                    totals.sessions += f.sessions;
                    totals.nodes += f.nodes;
                    totals.nodes_up += f.nodes_up;
                }
                MemberStatus {
                    name: m.name.clone(),
                    addr: m.addr().to_string(),
                    kind: kind(conn.cluster).into(),
                    state: "up".into(),
                    reason: None,
                    down_s: None,
                    figures,
                    labels: m.all_labels(),
                }
            }
            Link::Down { reason, since } => {
                totals.nodes += 1;
                MemberStatus {
                    name: m.name.clone(),
                    addr: m.addr().to_string(),
                    kind: "node".into(),
                    state: "down".into(),
                    reason: Some(reason),
                    down_s: Some(since.elapsed().as_secs()),
                    figures: None,
                    labels: m.labels.clone(),
                }
            }
        };
        list.push(entry);
    }
    Summary {
        members: u32::try_from(members.len()).unwrap_or(u32::MAX),
        up,
        totals,
        list,
    }
}

fn kind(cluster: bool) -> &'static str {
    if cluster {
        "cluster"
    } else {
        "node"
    }
}

/// `/status.json` of `members`.
pub fn json(members: &[Arc<Member>]) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(&summary(members)).unwrap_or_default();
    out.push(b'\n');
    out
}

/// `/status` of `members` (the format in the module docs).
pub fn text(members: &[Arc<Member>]) -> Vec<u8> {
    let s = summary(members);
    let t = &s.totals;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "members {} up {} down {}",
        s.members,
        s.up,
        s.members - s.up
    );
    let _ = writeln!(out, "nodes {} up {}", t.nodes, t.nodes_up);
    let _ = writeln!(out, "cores {}", t.cores);
    let _ = writeln!(out, "load {:.2}", t.load);
    let _ = writeln!(out, "mem_total_kib {}", t.mem_total_kib);
    let _ = writeln!(out, "mem_available_kib {}", t.mem_available_kib);
    let _ = writeln!(out, "sessions {}", t.sessions);
    for m in &s.list {
        let _ = write!(out, "{} {} {}", m.name, m.state, m.kind);
        match (&m.figures, &m.reason) {
            (Some(f), _) => {
                if m.kind == "cluster" {
                    let _ = write!(out, " nodes={}/{}", f.nodes_up, f.nodes);
                }
                let _ = write!(
                    out,
                    " cores={} load={:.2} mem_available_kib={} sessions={}",
                    f.cores, f.load, f.mem_available_kib, f.sessions
                );
                if !f.arch.is_empty() {
                    let _ = write!(out, " arch={}", f.arch);
                }
            }
            (None, Some(reason)) => {
                let _ = write!(out, " since={}s reason={reason:?}", m.down_s.unwrap_or(0));
            }
            (None, None) => {}
        }
        if !m.labels.is_empty() {
            let _ = write!(out, " labels={}", m.labels.join(","));
        }
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_status_parses() {
        let f = Figures::from_node_status(
            "host n1\narch x86_64\ncores 4\nload 1.50 0.3 0.2\nmem_total_kib 100\nmem_available_kib 60\nsessions 2\nlabels gpu,ib\n",
        );
        assert_eq!((f.cores, f.load, f.sessions), (4, 1.5, 2));
        assert_eq!(f.labels, ["gpu", "ib"]);
        assert_eq!((f.nodes, f.nodes_up), (1, 1));
        assert_eq!(f.free_cores(1), 1.0);
        assert_eq!(
            Figures {
                load: 3.0,
                ..f.clone()
            }
            .free_cores(1),
            0.0
        );
        assert!(Figures::from_node_status("labels -\n").labels.is_empty());
    }

    #[test]
    fn a_gateways_summary_round_trips() {
        let s = summary(&[]);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(Figures::from_gateway_json(&text).unwrap(), s.totals);
        assert!(Figures::from_gateway_json("{").is_err());
    }
}
