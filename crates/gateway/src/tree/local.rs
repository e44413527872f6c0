//! The gateway's own places: which they are, their qids, attributes and parents.

use nf_ninep::types::{Attr, Qid, QidType, Timespec};

use crate::view::{self, Scope};

/// A place in the gateway's own tree.
#[derive(Clone, Debug)]
pub enum Local {
    /// The root of a scope (the gateway's root, or `/views/NAME`).
    Top(Scope),
    /// `/views`.
    Views,
    /// A scope's `n/`.
    N(Scope),
    /// A scope's `xcpu/`.
    Xcpu(Scope),
    /// A scope's `status`.
    Status(Scope),
    /// A scope's `status.json`.
    StatusJson(Scope),
    /// A scope's `xcpu/clone`.
    Clone(Scope),
    /// A scope's `xcpu/procs`.
    Procs(Scope),
    /// `/join`.
    Join,
}

impl Local {
    pub(super) fn is_dir(&self) -> bool {
        matches!(
            self,
            Local::Top(_) | Local::Views | Local::N(_) | Local::Xcpu(_)
        )
    }

    /// The qid: paths below 2^40, one block of 16 per scope.
    pub(super) fn qid(&self) -> Qid {
        let (scope, slot) = match self {
            Local::Top(s) => (s, 0),
            Local::Views => (&None, 1),
            Local::N(s) => (s, 2),
            Local::Xcpu(s) => (s, 3),
            Local::Status(s) => (s, 4),
            Local::StatusJson(s) => (s, 5),
            Local::Clone(s) => (s, 6),
            Local::Procs(s) => (s, 7),
            Local::Join => (&None, 8),
        };
        Qid {
            ty: if self.is_dir() {
                QidType::DIR
            } else {
                // Synthetic: writes are taken in order, their offset ignored.
                QidType::APPEND
            },
            version: 0,
            path: 1 + u64::from(view::number(scope)) * 16 + slot,
        }
    }

    pub(super) fn scope(&self) -> Scope {
        match self {
            Local::Top(s)
            | Local::N(s)
            | Local::Xcpu(s)
            | Local::Status(s)
            | Local::StatusJson(s)
            | Local::Clone(s)
            | Local::Procs(s) => s.clone(),
            Local::Views | Local::Join => None,
        }
    }

    /// The directory above.
    pub(super) fn parent(&self) -> Local {
        match self {
            Local::Top(None) | Local::Views | Local::Join => Local::Top(None),
            Local::Top(Some(_)) => Local::Views,
            Local::N(s) | Local::Xcpu(s) | Local::Status(s) | Local::StatusJson(s) => {
                Local::Top(s.clone())
            }
            Local::Clone(s) | Local::Procs(s) => Local::Xcpu(s.clone()),
        }
    }
}

/// Attributes of a local place (directories 0555, files 0444, `join` 0222).
pub(super) fn local_attr(place: &Local, t: Timespec) -> Attr {
    let mode = match place {
        l if l.is_dir() => 0o040_555,
        Local::Join => 0o100_222,
        _ => 0o100_444,
    };
    Attr {
        mode,
        nlink: if place.is_dir() { 2 } else { 1 },
        blksize: 4096,
        atime: t,
        mtime: t,
        ctime: t,
        ..Attr::default()
    }
}

/// True if walking `names` from `place` stays in the gateway's own tree (no member
/// call), judged without calling anyone.
pub(super) fn stays_local(place: &Local, names: &[String]) -> bool {
    let mut at = place.clone();
    for n in names {
        at = match (&at, n.as_str()) {
            (_, ".") => at.clone(),
            (_, "..") => at.parent(),
            (Local::Top(s), "n") => Local::N(s.clone()),
            (Local::Top(s), "xcpu") => Local::Xcpu(s.clone()),
            (Local::Top(s), "status" | "status.json") => Local::Status(s.clone()),
            (Local::Top(None), "views") => Local::Views,
            (Local::Xcpu(s), "clone" | "procs") => Local::Clone(s.clone()),
            // Into a member, a session or a view (an account lookup): not here.
            _ => return false,
        };
    }
    true
}
