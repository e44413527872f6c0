//! Packing [`Dirent`] records into `Rreaddir` data and unpacking them.
//!
//! `Rreaddir` data is a run of whole records `qid[13] offset[8] type[1] name[s]`, never
//! more than the `count` the client asked for. A record that does not fit is left for
//! the next `Treaddir`, which passes the `offset` of the last record received.

use crate::error::{DecodeError, EncodeError};
use crate::types::Dirent;
use crate::wire::{Data, Reader, Wire};

/// Builds `Rreaddir` data of at most `count` bytes, one whole entry at a time.
#[derive(Clone, Debug)]
pub struct DirentWriter {
    buf: Vec<u8>,
    limit: usize,
}

impl DirentWriter {
    /// A writer that will hold at most `count` bytes (cap it with [`crate::io_count_limit`]).
    pub fn new(count: u32) -> Self {
        DirentWriter {
            buf: Vec::new(),
            limit: count as usize,
        }
    }

    /// Appends `entry` if it fits and returns true; returns false (writing nothing) if not.
    pub fn push(&mut self, entry: &Dirent) -> Result<bool, EncodeError> {
        if self.buf.len() + entry.byte_size() > self.limit {
            return Ok(false);
        }
        let start = self.buf.len();
        entry
            .encode(&mut self.buf)
            .inspect_err(|_| self.buf.truncate(start))?;
        Ok(true)
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when no entry has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The packed entries, ready for [`crate::Rreaddir`].
    pub fn into_data(self) -> Data {
        Data(self.buf)
    }
}

/// Packs the longest prefix of `entries` that fits in `count` bytes; returns the data
/// and how many entries it holds.
pub fn encode_dirents(entries: &[Dirent], count: u32) -> Result<(Data, usize), EncodeError> {
    let mut writer = DirentWriter::new(count);
    let mut packed = 0;
    for entry in entries {
        if !writer.push(entry)? {
            break;
        }
        packed += 1;
    }
    Ok((writer.into_data(), packed))
}

/// Unpacks every record in `data`; a partial record at the end is an error.
pub fn decode_dirents(data: &[u8]) -> Result<Vec<Dirent>, DecodeError> {
    let mut r = Reader::new(data);
    let mut entries = Vec::new();
    while r.remaining() > 0 {
        entries.push(Dirent::decode(&mut r).map_err(|e| e.in_field("Dirent"))?);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Qid, QidType};

    fn entry(name: &str, offset: u64) -> Dirent {
        Dirent {
            qid: Qid {
                ty: QidType::FILE,
                version: 0,
                path: offset,
            },
            offset,
            dtype: Dirent::DT_REG,
            name: name.to_string(),
        }
    }

    #[test]
    fn packs_only_whole_entries() {
        let entries = [entry("a", 1), entry("bb", 2), entry("ccc", 3)];
        // Records are 24 + name bytes: 25, 26, 27.
        let (data, n) = encode_dirents(&entries, 25 + 26 + 26).unwrap();
        assert_eq!(n, 2);
        assert_eq!(data.len(), 51);
        assert_eq!(decode_dirents(data.as_slice()).unwrap(), entries[..2]);
    }

    #[test]
    fn partial_record_is_an_error() {
        let (data, _) = encode_dirents(&[entry("abc", 1)], 1000).unwrap();
        let err = decode_dirents(&data.as_slice()[..data.len() - 1]).unwrap_err();
        assert!(
            matches!(err, DecodeError::LengthBeyondFrame { .. }),
            "{err}"
        );
    }
}
