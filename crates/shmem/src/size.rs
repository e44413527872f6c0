//! `SHMEM_SYMMETRIC_SIZE`: how many bytes of symmetric heap each PE gets.
//!
//! The value is a number with an optional fraction and an optional binary suffix
//! `K`, `M`, `G` or `T` (either case): `64M`, `1G`, `1.5g`, `1048576`. Unset means
//! [`DEFAULT`].

/// The heap size when `SHMEM_SYMMETRIC_SIZE` is unset: 256 MiB.
pub const DEFAULT: usize = 256 << 20;

/// Why a size text is not a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "SHMEM_SYMMETRIC_SIZE is {0:?}; give a number of bytes with an optional suffix K, M, \
     G or T (for example 512M or 2G)"
)]
pub struct BadSize(pub String);

/// Parses a size text (see the module docs).
pub fn parse(text: &str) -> Result<usize, BadSize> {
    let bad = || BadSize(text.to_owned());
    let t = text.trim();
    let (num, shift) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        Some('T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let bytes = value * (1u64 << shift) as f64;
    if !(1.0..=(usize::MAX / 2) as f64).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as usize)
}

/// The heap size from the environment.
pub fn from_env() -> Result<usize, BadSize> {
    match std::env::var("SHMEM_SYMMETRIC_SIZE") {
        Ok(v) => parse(&v),
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT),
        Err(std::env::VarError::NotUnicode(v)) => Err(BadSize(v.to_string_lossy().into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_fractions_and_plain_numbers() {
        assert_eq!(parse("64M"), Ok(64 << 20));
        assert_eq!(parse("1g"), Ok(1 << 30));
        assert_eq!(parse("1.5K"), Ok(1536));
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse(" 2T "), Ok(2 << 40));
    }

    #[test]
    fn nonsense_is_refused_with_the_text() {
        for t in ["", "M", "-1M", "12Q", "0", "1e9", "0.1"] {
            let e = parse(t).unwrap_err();
            assert_eq!(e.0, t, "{t:?}");
            assert!(e.to_string().contains("SHMEM_SYMMETRIC_SIZE"));
        }
    }
}
