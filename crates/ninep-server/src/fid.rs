//! The fid table of one connection, and what the server itself knows about each fid.
//!
//! Rules:
//!
//! 1. A fid number is `Reserved` from the moment a request that creates it (attach, auth,
//!    walk to a new fid, xattrwalk) passes its checks until that request completes; only
//!    then is it `Ready` or gone. A reserved or ready number cannot be created again.
//! 2. Requests on a fid hold an `Arc` of its entry, so `Tclunk` can drop the number
//!    while other requests on it finish; the tree's state is released when the server
//!    forgets it, not when the last request ends.
//! 3. The table never holds more than `max_fids` numbers, reserved ones included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::cancel::lock;
use nf_ninep::errno::{EBADF, EEXIST, EMFILE};
use nf_ninep::types::{LOpenFlags, Qid, QidType};
use nf_ninep::Rlerror;

/// What a fid is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FidKind {
    /// A file or directory of the tree.
    File,
    /// An authentication fid (from `Tauth`): readable and writable without opening.
    Auth,
    /// An extended-attribute reader (from `Txattrwalk`): readable without opening.
    XattrRead,
    /// An extended-attribute writer (from `Txattrcreate`): writable without opening.
    XattrWrite,
}

/// The server's own bookkeeping for a fid (lib9p's `Fid.omode`, `Fid.qid`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FidMeta {
    /// Qid of the file, from attach, walk or create.
    pub qid: Qid,
    /// Flags of the lopen/lcreate that opened it, if open.
    pub open: Option<LOpenFlags>,
    /// What it is used for.
    pub kind: FidKind,
}

impl FidMeta {
    pub fn new(qid: Qid, kind: FidKind) -> Self {
        FidMeta {
            qid,
            open: None,
            kind,
        }
    }

    pub fn is_dir(&self) -> bool {
        self.qid.ty.contains(QidType::DIR)
    }

    /// May the fid be read? (`EBADF` if not.)
    pub fn readable(&self) -> bool {
        match self.kind {
            FidKind::Auth | FidKind::XattrRead => true,
            FidKind::XattrWrite => false,
            FidKind::File => self.open.is_some_and(|f| {
                matches!(f.access_mode(), m if m == LOpenFlags::RDONLY.0 || m == LOpenFlags::RDWR.0)
            }),
        }
    }

    /// May the fid be written? (`EBADF` if not.)
    pub fn writable(&self) -> bool {
        match self.kind {
            FidKind::Auth | FidKind::XattrWrite => true,
            FidKind::XattrRead => false,
            FidKind::File => self.open.is_some_and(|f| {
                matches!(f.access_mode(), m if m == LOpenFlags::WRONLY.0 || m == LOpenFlags::RDWR.0)
            }),
        }
    }
}

/// One fid: the tree's state and the server's bookkeeping.
pub(crate) struct FidEntry<S> {
    /// The tree's state.
    pub state: S,
    meta: Mutex<FidMeta>,
}

impl<S> FidEntry<S> {
    pub fn new(state: S, meta: FidMeta) -> Arc<Self> {
        Arc::new(FidEntry {
            state,
            meta: Mutex::new(meta),
        })
    }

    pub fn meta(&self) -> FidMeta {
        *lock(&self.meta)
    }

    pub fn set_meta(&self, change: impl FnOnce(&mut FidMeta)) {
        change(&mut lock(&self.meta));
    }
}

enum Slot<S> {
    Reserved,
    Ready(Arc<FidEntry<S>>),
}

/// Fid number → entry, for one connection.
pub(crate) struct FidTable<S> {
    slots: HashMap<u32, Slot<S>>,
    max: usize,
}

impl<S> FidTable<S> {
    pub fn new(max: usize) -> Self {
        FidTable {
            slots: HashMap::new(),
            max,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The entry of a ready fid; `EBADF` for unknown or still-reserved numbers.
    pub fn get(&self, fid: u32) -> Result<Arc<FidEntry<S>>, Rlerror> {
        match self.slots.get(&fid) {
            Some(Slot::Ready(e)) => Ok(Arc::clone(e)),
            _ => Err(Rlerror::new(EBADF)),
        }
    }

    /// Reserves a new number: `EEXIST` if in use, `EMFILE` if the table is full.
    pub fn reserve(&mut self, fid: u32) -> Result<(), Rlerror> {
        if self.slots.contains_key(&fid) {
            return Err(Rlerror::new(EEXIST));
        }
        if self.slots.len() >= self.max {
            return Err(Rlerror::new(EMFILE));
        }
        self.slots.insert(fid, Slot::Reserved);
        Ok(())
    }

    /// Fills the reservation of `fid` with `entry`; gives the entry back if `fid` is not
    /// reserved (the session was reset meanwhile).
    pub fn fill(&mut self, fid: u32, entry: Arc<FidEntry<S>>) -> Result<(), Arc<FidEntry<S>>> {
        match self.slots.get_mut(&fid) {
            Some(slot @ Slot::Reserved) => {
                *slot = Slot::Ready(entry);
                Ok(())
            }
            _ => Err(entry),
        }
    }

    /// Drops the reservation of `fid` (a ready fid is left alone).
    pub fn unreserve(&mut self, fid: u32) {
        if matches!(self.slots.get(&fid), Some(Slot::Reserved)) {
            self.slots.remove(&fid);
        }
    }

    /// Puts `new` in place of `old` if `fid` still names `old`; else gives `new` back.
    pub fn replace(
        &mut self,
        fid: u32,
        old: &Arc<FidEntry<S>>,
        new: Arc<FidEntry<S>>,
    ) -> Result<(), Arc<FidEntry<S>>> {
        match self.slots.get_mut(&fid) {
            Some(Slot::Ready(current)) if Arc::ptr_eq(current, old) => {
                *current = new;
                Ok(())
            }
            _ => Err(new),
        }
    }

    /// Forgets `fid`, returning its entry if it was ready.
    pub fn remove(&mut self, fid: u32) -> Option<Arc<FidEntry<S>>> {
        match self.slots.remove(&fid) {
            Some(Slot::Ready(e)) => Some(e),
            _ => None,
        }
    }

    /// Forgets every fid, returning the ready entries.
    pub fn drain(&mut self) -> Vec<Arc<FidEntry<S>>> {
        self.slots
            .drain()
            .filter_map(|(_, slot)| match slot {
                Slot::Ready(e) => Some(e),
                Slot::Reserved => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_install_remove() {
        let mut t: FidTable<u8> = FidTable::new(2);
        t.reserve(1).unwrap();
        assert_eq!(t.reserve(1).unwrap_err().ecode, EEXIST);
        assert_eq!(t.get(1).err().map(|e| e.ecode), Some(EBADF));
        let meta = FidMeta::new(Qid::default(), FidKind::File);
        assert!(t.fill(1, FidEntry::new(7, meta)).is_ok());
        assert!(t.fill(1, FidEntry::new(8, meta)).is_err());
        assert_eq!(t.get(1).unwrap().state, 7);
        t.reserve(2).unwrap();
        assert_eq!(t.reserve(3).unwrap_err().ecode, EMFILE);
        assert_eq!(t.drain().len(), 1);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn open_modes() {
        let mut m = FidMeta::new(Qid::default(), FidKind::File);
        assert!(!m.readable() && !m.writable());
        m.open = Some(LOpenFlags::RDONLY);
        assert!(m.readable() && !m.writable());
        m.open = Some(LOpenFlags::WRONLY | LOpenFlags::APPEND);
        assert!(!m.readable() && m.writable());
        m.open = Some(LOpenFlags::NOACCESS);
        assert!(!m.readable() && !m.writable());
    }
}
