//! The records of a session's `tree` stream, as its readers (a client, or a node
//! relaying a child's stream) see them: `NODE KIND TEXT`, one per line, where `KIND`
//! is `out`, `err`, `exit`, `signal` or `failed`. The node's side of the stream (who
//! writes what, and when it ends) is `nf_node::xcpu::treeout`.

use std::io::{BufRead, Read};

/// Longest text of one record; a longer line is cut (`nf_node::xcpu::treeout`, rule 3).
pub const MAX_TEXT: usize = 16 * 1024;

/// Longest record read from a child: its text and a node's name and kind.
const MAX_RECORD: usize = MAX_TEXT + 4096;

/// One record of a `tree` stream, as a client reads it.
#[derive(Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// `.` (the node read from) or a node's address.
    pub node: &'a str,
    /// `out`, `err`, `exit`, `signal`, `failed`.
    pub kind: &'a str,
    /// The rest of the line.
    pub text: &'a [u8],
}

impl Record<'_> {
    /// Whether the record ends its node (every node of a stream ends exactly once).
    pub fn is_end(&self) -> bool {
        is_end(self.kind.as_bytes())
    }
}

/// Reads the next line of a `tree` stream into `line` (without its newline), at most
/// a record's length: a longer one comes back in pieces, which are not records, so a
/// stream that never ends a line costs its reader no more than that. False at the
/// end of the stream.
pub fn read_record(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    if reader.take(MAX_RECORD as u64).read_until(b'\n', line)? == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(true)
}

/// Parses one line of a `tree` stream (without its newline); `None` if it is not a
/// record.
pub fn parse_record(line: &[u8]) -> Option<Record<'_>> {
    let mut words = line.splitn(3, |&b| b == b' ');
    let node = std::str::from_utf8(words.next()?).ok()?;
    let kind = std::str::from_utf8(words.next()?).ok()?;
    if node.is_empty() || kind.is_empty() {
        return None;
    }
    Some(Record {
        node,
        kind,
        text: words.next().unwrap_or_default(),
    })
}

/// Whether a record's kind ends its node.
fn is_end(kind: &[u8]) -> bool {
    matches!(kind, b"exit" | b"signal" | b"failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_never_ends_is_read_a_record_length_at_a_time() {
        let mut input = vec![b'x'; 3 * MAX_RECORD];
        input.extend_from_slice(b"\n. exit 0\n");
        let mut reader = std::io::BufReader::new(&input[..]);
        let mut line = Vec::new();
        let mut lens = Vec::new();
        while read_record(&mut reader, &mut line).unwrap() {
            lens.push(line.len());
        }
        assert_eq!(lens, [MAX_RECORD, MAX_RECORD, MAX_RECORD, 0, 8]);
        assert!(parse_record(b". exit 0").is_some());
    }

    #[test]
    fn records_parse_back() {
        let r = parse_record(b"tcp:a:1 out two  words").unwrap();
        assert_eq!(
            (r.node, r.kind, r.text),
            ("tcp:a:1", "out", &b"two  words"[..])
        );
        assert!(parse_record(b". exit 0").unwrap().is_end());
        assert_eq!(parse_record(b". out").unwrap().text, b"");
        assert_eq!(parse_record(b"lonely"), None);
        assert_eq!(parse_record(b" out x"), None);
    }
}
