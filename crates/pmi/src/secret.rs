//! The per-job secret that a rank shows in its hello to a TCP PMI server.
//!
//! A TCP port can be reached by anyone on the network, so the server only serves
//! connections whose first line is a hello with the job's id and secret. The secret is
//! 128 random bits from the kernel, written as 32 hex digits; it reaches the ranks as
//! `NF_PMI_SECRET`. It guards against strays and other jobs; it is not hidden from users
//! who can read the ranks' environment or command line (`ps`) on the same hosts.

use std::io::{self, Read};

use crate::error::PmiError;

/// Longest secret accepted, in bytes.
pub const MAX_SECRET_LEN: usize = 128;

/// A fresh secret: 32 hex digits from the kernel's random source.
pub fn new_secret() -> Result<String, PmiError> {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes).map_err(|source| PmiError::Secret { source })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `s` is usable as a secret: 1 to [`MAX_SECRET_LEN`] printable ASCII characters
/// without spaces (so it survives a command line and a shell).
pub fn is_valid_secret(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_SECRET_LEN && s.bytes().all(|b| b.is_ascii_graphic())
}

/// Compares two secrets in time that depends only on their lengths.
pub(crate) fn secrets_match(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is a valid writable region of `rest.len()` bytes.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Kernels older than 3.17: read the device instead.
                Some(libc::ENOSYS) => return std::fs::File::open("/dev/urandom")?.read_exact(rest),
                _ => return Err(err),
            }
        }
        // `n` is non-negative here and at most `rest.len()`.
        filled += n.unsigned_abs();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_hex_and_valid() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert!(is_valid_secret(&a));
    }

    #[test]
    fn matching_needs_equal_strings() {
        assert!(secrets_match("abc", "abc"));
        assert!(!secrets_match("abd", "abc"));
        assert!(!secrets_match("ab", "abc"));
        assert!(!secrets_match("", "abc"));
    }

    #[test]
    fn validity_rules() {
        assert!(!is_valid_secret(""));
        assert!(!is_valid_secret("a b"));
        assert!(!is_valid_secret(&"x".repeat(MAX_SECRET_LEN + 1)));
        assert!(is_valid_secret("x"));
    }
}
