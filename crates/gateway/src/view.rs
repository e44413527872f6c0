//! Scopes: the whole gateway, or a named view of some of its members.
//!
//! Every scope has the same shape (`n/`, `status`, `status.json`, `xcpu/`), so a tool
//! that works on the gateway's root works on `/views/NAME` unchanged (`nf exec
//! gw:/views/gpu -- prog`). Which members a view holds is decided at each use, from
//! what they report (architecture, labels), so a node that comes up with the label
//! `gpu` appears in the `gpu` view without a restart.

use std::sync::Arc;

use crate::access::Who;
use crate::config::{Allow, ViewConfig};
use crate::member::Member;

/// A named subset of the members.
#[derive(Debug)]
pub struct View {
    /// Its name under `/views`.
    pub name: String,
    /// Its number (1-based; the gateway's own qids tell scopes apart by it).
    pub number: u16,
    hosts: glob::Pattern,
    arch: Option<String>,
    labels: Vec<String>,
    allow: Allow,
}

impl View {
    /// The view `config` defines, numbered `number`.
    pub fn new(number: u16, config: &ViewConfig) -> Result<View, glob::PatternError> {
        Ok(View {
            name: config.name.clone(),
            number,
            hosts: glob::Pattern::new(&config.hosts)?,
            arch: config.arch.clone(),
            labels: config.labels.clone(),
            allow: config.allow.clone(),
        })
    }

    /// True if `member` is in the view now.
    pub fn holds(&self, member: &Member) -> bool {
        if !self.hosts.matches(&member.name) {
            return false;
        }
        if let Some(want) = &self.arch {
            let Some(f) = member.figures() else {
                return false;
            };
            let want = want.strip_prefix("linux/").unwrap_or(want);
            if f.arch != want {
                return false;
            }
        }
        if self.labels.is_empty() {
            return true;
        }
        let have = member.all_labels();
        self.labels.iter().all(|l| have.contains(l))
    }
}

/// The part of the gateway a path is in: `None` the whole, else a view.
pub type Scope = Option<Arc<View>>;

/// The scope's number (0: the whole gateway).
pub fn number(scope: &Scope) -> u16 {
    scope.as_ref().map_or(0, |v| v.number)
}

/// True if `who` may use the scope.
pub fn admits(scope: &Scope, who: &Who) -> bool {
    match (scope, who) {
        (None, Who::User { .. }) => true,
        (Some(v), Who::User { name, groups }) => v.allow.admits(name, groups),
        (_, Who::Node(_)) => false,
    }
}

/// True if `who` may reach `member`.
pub fn reaches(member: &Member, who: &Who) -> bool {
    match who {
        Who::User { name, groups } => member.allow.admits(name, groups),
        Who::Node(_) => false,
    }
}

/// The members of `all` in `scope`.
pub fn members_in(scope: &Scope, all: Vec<Arc<Member>>) -> Vec<Arc<Member>> {
    match scope {
        None => all,
        Some(v) => all.into_iter().filter(|m| v.holds(m)).collect(),
    }
}
