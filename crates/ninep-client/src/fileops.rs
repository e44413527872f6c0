//! Operations on names: mkdir, remove, unlink, rename, symlink, readlink, fsync, and
//! whole-file helpers.

use crate::error::ClientError;
use crate::fid::Fid;
use crate::open::File;
use crate::session::Root;
use crate::walk::{join, parent_and_name};
use nf_ninep::errno::{EEXIST, EOPNOTSUPP};
use nf_ninep::message::*;
use nf_ninep::types::{LOpenFlags, Qid, UnlinkatFlags};

fn gid() -> u32 {
    rustix::process::getgid().as_raw()
}

impl Fid {
    /// `Tremove`: removes the file and releases the fid (even if removal fails).
    pub fn remove(self) -> Result<(), ClientError> {
        let result = self
            .client()
            .request("remove", Tremove { fid: self.number() }, |r| match r {
                Rmessage::Rremove(_) => Some(()),
                _ => None,
            })
            .map_err(|e| e.at(self.path()));
        self.forget();
        result
    }

    /// `Tmkdir`: creates directory `name` in this directory.
    pub fn mkdir(&self, name: &str, mode: u32) -> Result<Qid, ClientError> {
        let msg = Tmkdir {
            dfid: self.number(),
            name: name.to_string(),
            mode,
            gid: gid(),
        };
        self.client()
            .request("mkdir", msg, |r| match r {
                Rmessage::Rmkdir(r) => Some(r.qid),
                _ => None,
            })
            .map_err(|e| e.at(&join(self.path(), &[name.to_string()])))
    }

    /// `Tunlinkat`: removes `name` from this directory (`dir`: it is a directory).
    pub fn unlinkat(&self, name: &str, dir: bool) -> Result<(), ClientError> {
        let msg = Tunlinkat {
            dirfid: self.number(),
            name: name.to_string(),
            flags: if dir {
                UnlinkatFlags::REMOVEDIR
            } else {
                UnlinkatFlags::default()
            },
        };
        self.client()
            .request("unlink", msg, |r| match r {
                Rmessage::Runlinkat(_) => Some(()),
                _ => None,
            })
            .map_err(|e| e.at(&join(self.path(), &[name.to_string()])))
    }

    /// `Treadlink`: the target of this symlink.
    pub fn readlink(&self) -> Result<String, ClientError> {
        self.client()
            .request("readlink", Treadlink { fid: self.number() }, |r| match r {
                Rmessage::Rreadlink(r) => Some(r.target),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }
}

impl File {
    /// `Tfsync`: flushes the file's data (and metadata unless `data_only`).
    pub fn fsync(&self, data_only: bool) -> Result<(), ClientError> {
        let msg = Tfsync {
            fid: self.number(),
            datasync: u32::from(data_only),
        };
        self.client()
            .request("fsync", msg, |r| match r {
                Rmessage::Rfsync(_) => Some(()),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }
}

impl Root {
    /// Creates directory `path` with permission bits `mode`.
    pub fn mkdir(&self, path: &str, mode: u32) -> Result<Qid, ClientError> {
        let (parent, name) = parent_and_name("mkdir", path)?;
        self.walk_names(&parent)?.mkdir(&name, mode)
    }

    /// Removes the file or empty directory at `path`.
    pub fn remove(&self, path: &str) -> Result<(), ClientError> {
        self.walk(path)?.remove()
    }

    /// Moves `from` to `to` (`Trenameat`, or `Trename` if the server lacks it).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), ClientError> {
        let (from_parent, from_name) = parent_and_name("rename", from)?;
        let (to_parent, to_name) = parent_and_name("rename", to)?;
        let olddir = self.walk_names(&from_parent)?;
        let newdir = self.walk_names(&to_parent)?;
        let msg = Trenameat {
            olddirfid: olddir.number(),
            oldname: from_name,
            newdirfid: newdir.number(),
            newname: to_name.clone(),
        };
        let result = self.client().request("rename", msg, |r| match r {
            Rmessage::Rrenameat(_) => Some(()),
            _ => None,
        });
        match result {
            Err(e) if e.errno() == Some(EOPNOTSUPP) => {
                let fid = self.walk(from)?;
                let msg = Trename {
                    fid: fid.number(),
                    dfid: newdir.number(),
                    name: to_name,
                };
                self.client()
                    .request("rename", msg, |r| match r {
                        Rmessage::Rrename(_) => Some(()),
                        _ => None,
                    })
                    .map_err(|e| e.at(from))
            }
            other => other.map_err(|e| e.at(from)),
        }
    }

    /// Creates symlink `path` pointing at `target`.
    pub fn symlink(&self, path: &str, target: &str) -> Result<Qid, ClientError> {
        let (parent, name) = parent_and_name("symlink", path)?;
        let dir = self.walk_names(&parent)?;
        let msg = Tsymlink {
            fid: dir.number(),
            name,
            symtgt: target.to_string(),
            gid: gid(),
        };
        self.client()
            .request("symlink", msg, |r| match r {
                Rmessage::Rsymlink(r) => Some(r.qid),
                _ => None,
            })
            .map_err(|e| e.at(path))
    }

    /// The target of symlink `path`.
    pub fn readlink(&self, path: &str) -> Result<String, ClientError> {
        self.walk(path)?.readlink()
    }

    /// The whole content of the file at `path`.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        self.open(path, LOpenFlags::RDONLY)?.read_to_end()
    }

    /// Makes the file at `path` hold exactly `data` (created with mode 0644 if missing).
    pub fn write_file(&self, path: &str, data: &[u8]) -> Result<(), ClientError> {
        let flags = LOpenFlags::WRONLY | LOpenFlags::TRUNC;
        let mut file = match self.create(path, flags, 0o644) {
            Err(e) if e.errno() == Some(EEXIST) => self.open(path, flags)?,
            other => other?,
        };
        file.write_all(data)?;
        file.close()
    }
}
