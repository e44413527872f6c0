//! Writing: one message at an offset, or all of a buffer in msize-sized chunks.

use std::io;

use crate::error::ClientError;
use crate::open::File;
use nf_ninep::message::*;

impl File {
    /// One `Twrite` of at most [`File::chunk`] bytes of `data` at `offset`; returns the
    /// bytes the server took.
    pub fn write_at(&self, data: &[u8], offset: u64) -> Result<usize, ClientError> {
        let n = data.len().min(self.chunk() as usize);
        let msg = Twrite {
            fid: self.number(),
            offset,
            data: data[..n].into(),
        };
        let count = self
            .client()
            .request("write", msg, |r| match r {
                Rmessage::Rwrite(r) => Some(r.count),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))?;
        Ok((count as usize).min(n))
    }

    /// Writes all of `data` at `offset`, in as many messages as needed.
    pub fn write_all_at(&self, data: &[u8], offset: u64) -> Result<(), ClientError> {
        let mut done = 0;
        while done < data.len() {
            let n = self.write_at(&data[done..], offset + done as u64)?;
            if n == 0 {
                return Err(ClientError::ShortWrite {
                    path: self.path().to_string(),
                    written: done as u64,
                    len: data.len() as u64,
                });
            }
            done += n;
        }
        Ok(())
    }

    /// Writes all of `data` at the current position and moves past it.
    pub fn write_all(&mut self, data: &[u8]) -> Result<(), ClientError> {
        self.write_all_at(data, self.position())?;
        self.advance(data.len() as u64);
        Ok(())
    }
}

impl io::Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.write_at(buf, self.position())?;
        self.advance(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
