//! Moving whole files: a remote file to or from a local reader or writer, or to another
//! remote file, chunk by chunk as data comes; opening a file to write (made if
//! missing); and where a copy lands when its destination is a directory.
//!
//! A copy to a remote file takes its bytes from a [`Source`]: a local reader, or
//! another remote file read ahead (`ahead.rs`), so a remote → remote copy keeps reads
//! in flight on the source and writes in flight on the destination at once (read-ahead
//! feeding write-behind), each side under its own module's rules. Pieces move as
//! buffers handed round, not copied: a read's reply lands in a buffer that becomes the
//! write's message, and the buffer of an answered write is read into again.

use std::io::{self, Read, Write};

use crate::ahead::ReadAhead;
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
        self.copy_to_ahead(out, 1)
    }

    /// Copies everything `input` gives into the file at its position, writing each
    /// piece as it is read; returns the bytes copied.
    pub fn copy_from(&mut self, input: &mut dyn Read) -> Result<u64, CopyError> {
        self.write_in_order(&mut Input(input))
    }

    /// Writes every piece `input` gives at the position, one message at a time and in
    /// order; returns the bytes copied.
    pub(crate) fn write_in_order<S: Source>(&mut self, input: &mut S) -> Result<u64, S::Error> {
        let mut buf = Vec::new();
        let mut total = 0;
        loop {
            input.next_into(&mut buf, self.chunk() as usize)?;
            if buf.is_empty() {
                return Ok(total);
            }
            self.write_all(&buf)?;
            total += buf.len() as u64;
        }
    }

    /// Copies the file from its position to end of file into `to` (another remote
    /// file, on this server or another) at its position, with up to `depth` reads in
    /// flight on this file (read-ahead's rules) feeding up to `depth` writes in flight
    /// on `to` (write-behind's rules); `depth` 1: one message at a time. Returns the
    /// bytes copied.
    ///
    /// On an error no write starts after it, and both positions stay after the last
    /// byte known written to `to`, so the copy can be taken up again from there.
    pub fn copy_to_file(&mut self, to: &mut File, depth: usize) -> Result<u64, FileCopyError> {
        let (from_start, to_start) = (self.position(), to.position());
        let copied = ReadAhead::new(self, depth, to.chunk())
            .map_err(FileCopyError::Source)
            .and_then(|mut ahead| to.write_behind(&mut ahead, depth));
        self.seek_to(from_start + (to.position() - to_start));
        copied
    }
}

/// Where the bytes of a copy to a remote file come from, piece by piece.
pub(crate) trait Source {
    /// A failed read (a failed write of the copy becomes one too).
    type Error: From<ClientError>;

    /// Leaves `buf` holding the next piece, of at most `max` bytes: empty at the end.
    /// The source may hand back another allocation than `buf`'s (and keep `buf`'s).
    fn next_into(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<(), Self::Error>;
}

/// A local reader as a [`Source`].
pub(crate) struct Input<'a>(pub(crate) &'a mut dyn Read);

impl Source for Input<'_> {
    type Error = CopyError;

    fn next_into(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<(), CopyError> {
        read_some(self.0, buf, max)
    }
}

/// Why a copy from one remote file to another ([`File::copy_to_file`]) stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileCopyError {
    /// Reading the file copied from failed.
    #[error(transparent)]
    Source(ClientError),
    /// Writing the file copied to failed (a client error met while writing is this
    /// one, hence the `From`).
    #[error(transparent)]
    Destination(#[from] ClientError),
}

impl FileCopyError {
    /// The client error, whichever side it came from.
    pub fn client_error(&self) -> &ClientError {
        match self {
            FileCopyError::Source(e) | FileCopyError::Destination(e) => e,
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
fn read_some(input: &mut dyn Read, buf: &mut Vec<u8>, max: usize) -> Result<(), CopyError> {
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
