//! Reading: one message at an offset, or a whole file in msize-sized chunks.

use std::io;

use crate::error::ClientError;
use crate::open::File;
use nf_ninep::message::*;

impl File {
    /// One `Tread` of at most `count` bytes (capped at [`File::chunk`]) at `offset`;
    /// empty at end of file.
    pub fn read_chunk(&self, offset: u64, count: u32) -> Result<Vec<u8>, ClientError> {
        let msg = Tread {
            fid: self.number(),
            offset,
            count: count.min(self.chunk()),
        };
        self.client()
            .request("read", msg, |r| match r {
                Rmessage::Rread(r) => Some(r.data.0),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }

    /// Reads into `buf` at `offset` with one message; returns the bytes read.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, ClientError> {
        let count = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let data = self.read_chunk(offset, count)?;
        buf[..data.len()].copy_from_slice(&data);
        Ok(data.len())
    }

    /// Reads from the current position to end of file.
    pub fn read_to_end(&mut self) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        loop {
            let data = self.read_chunk(self.position(), self.chunk())?;
            if data.is_empty() {
                return Ok(out);
            }
            self.advance(data.len() as u64);
            out.extend_from_slice(&data);
        }
    }
}

impl io::Read for File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(buf, self.position())?;
        self.advance(n as u64);
        Ok(n)
    }
}
