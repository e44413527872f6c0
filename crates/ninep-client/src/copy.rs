//! Moving whole files: a remote file to or from a local reader or writer, or to another
//! remote file, chunk by chunk as data comes; opening a file to write (made if
//! missing); and where a copy lands when its destination is a directory.

use std::io::{self, Read, Write};

use crate::error::ClientError;
use crate::open::File;
use crate::session::Root;
use nf_ninep::errno::{EEXIST, ENOENT};
use nf_ninep::types::LOpenFlags;

/// Why a copy between a remote file and a local reader or writer stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The server (or the connection to it) failed.
    #[error(transparent)]
    Remote(#[from] ClientError),
    /// The local side failed.
    #[error("{what}")]
    Local {
        /// What was being done (`"reading the input"`, `"writing the output"`).
        what: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl File {
    /// Copies the file from its position to end of file into `out`, one message's
    /// worth at a time, flushing `out` after each (a stream is passed on as it comes);
    /// returns the bytes copied.
    pub fn copy_to(&mut self, out: &mut dyn Write) -> Result<u64, CopyError> {
        let local = |source| CopyError::Local {
            what: "writing the output",
            source,
        };
        let mut total = 0;
        loop {
            let data = self.read_chunk(self.position(), self.chunk())?;
            if data.is_empty() {
                out.flush().map_err(local)?;
                return Ok(total);
            }
            self.advance(data.len() as u64);
            total += data.len() as u64;
            out.write_all(&data).map_err(local)?;
            out.flush().map_err(local)?;
        }
    }

    /// Copies everything `input` gives into the file at its position, writing each
    /// piece as it is read; returns the bytes copied.
    pub fn copy_from(&mut self, input: &mut dyn Read) -> Result<u64, CopyError> {
        let mut buf = Vec::new();
        let mut total = 0;
        loop {
            read_some(input, &mut buf, self.chunk() as usize)?;
            if buf.is_empty() {
                return Ok(total);
            }
            self.write_all(&buf)?;
            total += buf.len() as u64;
        }
    }

    /// Copies the file from its position to end of file into `to` (another remote
    /// file, on this server or another) at its position; returns the bytes copied.
    pub fn copy_to_file(&mut self, to: &mut File) -> Result<u64, ClientError> {
        let mut total = 0;
        loop {
            let data = self.read_chunk(self.position(), self.chunk())?;
            if data.is_empty() {
                return Ok(total);
            }
            self.advance(data.len() as u64);
            total += data.len() as u64;
            to.write_all(&data)?;
        }
    }
}

impl Root {
    /// Opens `path` for writing, creating it (mode 0644) if it does not exist: its
    /// content replaced, or (`append`) kept and written after.
    pub fn open_for_write(&self, path: &str, append: bool) -> Result<File, ClientError> {
        let flags = if append {
            LOpenFlags::WRONLY | LOpenFlags::APPEND
        } else {
            LOpenFlags::WRONLY | LOpenFlags::TRUNC
        };
        match self.open(path, flags) {
            Err(e) if e.errno() == Some(ENOENT) => match self.create(path, flags, 0o644) {
                // Made by someone else meanwhile.
                Err(e) if e.errno() == Some(EEXIST) => self.open(path, flags),
                other => other,
            },
            other => other,
        }
    }

    /// Where a copy of `from` lands on this server given `to`: inside `to` when it is
    /// a directory (or ends with `/`), as cp(1) does; else `to` itself.
    pub fn copy_destination(&self, to: &str, from: &str) -> Result<String, ClientError> {
        let is_dir = to.ends_with('/') || self.stat(to).is_ok_and(|s| s.is_dir());
        if !is_dir {
            return Ok(to.to_owned());
        }
        Ok(format!("{}/{}", to.trim_end_matches('/'), base_name(from)?))
    }
}

/// The last component of `path` (a file's name to copy under), as cp(1) takes it.
pub fn base_name(path: &str) -> Result<&str, ClientError> {
    match path.trim_end_matches('/').rsplit('/').next() {
        Some(name) if !name.is_empty() && name != "." && name != ".." => Ok(name),
        _ => Err(ClientError::BadPath {
            op: "copy",
            path: path.to_owned(),
            reason: "names no file to copy",
        }),
    }
}

/// Reads at most `max` bytes from `input` into `buf` (retried when interrupted),
/// which is left holding what was read: empty at the input's end.
pub(crate) fn read_some(
    input: &mut dyn Read,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<(), CopyError> {
    buf.resize(max, 0);
    loop {
        match input.read(buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(CopyError::Local {
                    what: "reading the input",
                    source,
                })
            }
        }
    }
}
