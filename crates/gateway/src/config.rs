//! The gateway's config file (TOML): members, views, who may use them, whom to trust.
//!
//! ```toml
//! # Gateways that may attach here for their users (a head node in front of this one).
//! trust_gateways = ["head"]
//! # The user the gateway reads members' /status as (any account with no rights).
//! probe_user = "nobody"
//!
//! [[member]]                      # a node, or another gateway (a cluster)
//! name = "node1"                  # /n/node1
//! addr = "tls:10.0.0.1:564"
//! labels = ["gpu"]                # added to what the node says of itself
//! users = []                      # who may reach it; both lists empty: everyone
//! groups = ["hpc"]
//!
//! [[view]]
//! name = "gpu"                    # /views/gpu
//! hosts = "node*"                 # a glob on member names (default "*")
//! arch = "x86_64"                 # optional: the member's arch must be this
//! labels = ["gpu"]                # optional: the member must carry all of these
//! users = ["ann"]
//! groups = []
//! ```
//!
//! Members may also register themselves (`nf serve --join`); they are named by their
//! node certificate and reachable by everyone, like a member without lists.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use nf_link::addr::{parse_addr, Addr};
use serde::Deserialize;

/// Names the gateway uses itself in a scope's directory.
pub const RESERVED: &[&str] = &["n", "views", "status", "status.json", "xcpu", "join"];

/// The most members a gateway holds (configured and joined): member numbers fit the
/// 16 bits of a qid that tell members apart ([`crate::qid`]).
pub const MAX_MEMBERS: usize = 4096;

/// Who may use a member or a view: both lists empty lets everyone in.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Allow {
    /// User names let in.
    #[serde(default)]
    pub users: Vec<String>,
    /// Group names whose members are let in.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Allow {
    /// True if `user`, in `groups`, is let in.
    pub fn admits(&self, user: &str, groups: &[String]) -> bool {
        (self.users.is_empty() && self.groups.is_empty())
            || self.users.iter().any(|u| u == user)
            || self.groups.iter().any(|g| groups.contains(g))
    }
}

/// A node or a gateway in front of a cluster, reached at `addr`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MemberConfig {
    /// Its name under `/n`.
    pub name: String,
    /// Where it listens (`tls:HOST:PORT`; `unix:` and `tcp:` for local tests).
    pub addr: String,
    /// Labels views select on, besides those the node reports.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Who may reach it.
    #[serde(flatten)]
    pub allow: Allow,
}

/// A named subset of the members.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ViewConfig {
    /// Its name under `/views`.
    pub name: String,
    /// A glob the member's name must match.
    #[serde(default = "any_host")]
    pub hosts: String,
    /// The architecture the member must report (`/status` `arch`).
    #[serde(default)]
    pub arch: Option<String>,
    /// Labels the member must all carry.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Who may use the view.
    #[serde(flatten)]
    pub allow: Allow,
}

fn any_host() -> String {
    String::from("*")
}

fn nobody() -> String {
    String::from("nobody")
}

/// The whole config file.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Gateways (their certificates' names) that may attach here for users.
    #[serde(default)]
    pub trust_gateways: Vec<String>,
    /// The account whose rights the gateway's own reads of members' status use.
    #[serde(default = "nobody")]
    pub probe_user: String,
    /// Members.
    #[serde(default, rename = "member")]
    pub members: Vec<MemberConfig>,
    /// Views.
    #[serde(default, rename = "view")]
    pub views: Vec<ViewConfig>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            trust_gateways: Vec::new(),
            probe_user: nobody(),
            members: Vec::new(),
            views: Vec::new(),
        }
    }
}

/// Why a config cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading the gateway config {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("the gateway config {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said (line and column included).
        message: String,
    },
    /// A setting is wrong.
    #[error("the gateway config: {0}")]
    Invalid(String),
}

/// True for a name usable as a member or view: a single path element of letters,
/// digits, `-`, `_` and `.`, not `.` or `..` and not a name the gateway uses itself.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && !RESERVED.contains(&name)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl GatewayConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config: GatewayConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        config.check()?;
        Ok(config)
    }

    /// Checks names, addresses and patterns.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.members.len() > MAX_MEMBERS {
            return bad(format!(
                "{} members; at most {MAX_MEMBERS}",
                self.members.len()
            ));
        }
        let mut seen = HashSet::new();
        for m in &self.members {
            if !valid_name(&m.name) {
                return bad(format!("member name {:?}: use letters, digits, '-', '_' or '.', and none of {RESERVED:?}", m.name));
            }
            if !seen.insert(m.name.as_str()) {
                return bad(format!("member {:?} is listed twice", m.name));
            }
            member_addr(&m.addr)
                .map_err(|e| ConfigError::Invalid(format!("member {:?}: {e}", m.name)))?;
        }
        let mut seen = HashSet::new();
        for v in &self.views {
            if !valid_name(&v.name) {
                return bad(format!(
                    "view name {:?}: use letters, digits, '-', '_' or '.'",
                    v.name
                ));
            }
            if !seen.insert(v.name.as_str()) {
                return bad(format!("view {:?} is listed twice", v.name));
            }
            glob::Pattern::new(&v.hosts).map_err(|e| {
                ConfigError::Invalid(format!("view {:?}: hosts {:?}: {e}", v.name, v.hosts))
            })?;
        }
        if self.probe_user.is_empty() || self.probe_user == "root" {
            return bad(String::from(
                "probe_user must name an unprivileged account (default nobody)",
            ));
        }
        Ok(())
    }
}

/// A member's address: any address `nf` takes except shared memory (the gateway holds
/// one long connection per member and multiplexes users over it).
pub fn member_addr(text: &str) -> Result<Addr, String> {
    match parse_addr(text).map_err(|e| e.to_string())? {
        Addr::Shm(_) => Err(format!(
            "{text}: a member is reached over tls:, tcp: or unix:, not shm:"
        )),
        a => Ok(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GatewayConfig, String> {
        let c: GatewayConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check().map_err(|e| e.to_string())?;
        Ok(c)
    }

    #[test]
    fn a_full_config_reads() {
        let c = parse(
            r#"
            trust_gateways = ["head"]
            [[member]]
            name = "node1"
            addr = "tls:10.0.0.1:564"
            labels = ["gpu"]
            groups = ["hpc"]
            [[view]]
            name = "gpu"
            hosts = "node*"
            labels = ["gpu"]
            users = ["ann"]
            "#,
        )
        .unwrap();
        assert_eq!(c.members[0].allow.groups, ["hpc"]);
        assert_eq!(c.views[0].allow.users, ["ann"]);
        assert_eq!(c.probe_user, "nobody");
        assert!(c.views[0].allow.admits("ann", &[]));
        assert!(!c.views[0].allow.admits("bob", &["hpc".into()]));
        assert!(c.members[0].allow.admits("bob", &["hpc".into()]));
    }

    #[test]
    fn mistakes_are_named() {
        let dup = "[[member]]\nname='a'\naddr='tcp:127.0.0.1:1'\n[[member]]\nname='a'\naddr='tcp:127.0.0.1:2'\n";
        assert!(parse(dup).unwrap_err().contains("twice"));
        let reserved = "[[member]]\nname='status'\naddr='tcp:127.0.0.1:1'\n";
        assert!(parse(reserved).unwrap_err().contains("member name"));
        let shm = "[[member]]\nname='a'\naddr='shm:/x'\n";
        assert!(parse(shm).unwrap_err().contains("shm"));
        let typo = "[[member]]\nname='a'\nadr='tcp:127.0.0.1:1'\n";
        assert!(parse(typo).is_err());
        let glob = "[[view]]\nname='v'\nhosts='[a'\n";
        assert!(parse(glob).unwrap_err().contains("hosts"));
        assert!(parse("probe_user = 'root'").is_err());
        assert!(!valid_name("a/b") && !valid_name("..") && valid_name("node-1.x"));
    }
}
