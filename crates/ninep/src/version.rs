//! Version negotiation: the server's answer to `Tversion`.
//!
//! Rules (after Plan 9 version(5), narrowed to 9P2000.L):
//!
//! 1. The negotiated msize is the smaller of the client's and the server's maximum.
//! 2. The client's version is accepted if it is `9P2000.L` or starts with `9P2000.L.`;
//!    the answer is then exactly `9P2000.L`. Anything else (`9P2000`, `9P2000.u`, …)
//!    gets `unknown`, and the client must not go on.
//! 3. An msize below [`MIN_MSIZE`] also gets `unknown`: with less, an `Rgetattr` plus
//!    useful reads cannot fit (Linux itself refuses msize below 4096).
//! 4. `Tversion` must carry tag `NOTAG`; it aborts every outstanding request and
//!    clunks every fid of the connection. Enforcing that is the server's job.

use crate::message::{Rversion, Tversion};

/// The only protocol version this crate speaks.
pub const VERSION: &str = "9P2000.L";
/// The version string that refuses a `Tversion`.
pub const VERSION_UNKNOWN: &str = "unknown";
/// A server's default largest msize: 1 MiB.
pub const DEFAULT_MAX_MSIZE: u32 = 1 << 20;
/// Smallest msize a negotiation accepts.
pub const MIN_MSIZE: u32 = 4096;

/// True if a client asking for `version` can be answered with [`VERSION`].
pub fn is_supported(version: &str) -> bool {
    version
        .strip_prefix(VERSION)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The server's `Rversion` for `req`, given the largest msize it will handle.
pub fn negotiate(req: &Tversion, server_max_msize: u32) -> Rversion {
    let msize = req.msize.min(server_max_msize);
    let version = if is_supported(&req.version) && msize >= MIN_MSIZE {
        VERSION
    } else {
        VERSION_UNKNOWN
    };
    Rversion {
        msize,
        version: version.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tversion(msize: u32, version: &str) -> Tversion {
        Tversion {
            msize,
            version: version.to_string(),
        }
    }

    #[test]
    fn takes_the_smaller_msize() {
        let r = negotiate(&tversion(65536, "9P2000.L"), DEFAULT_MAX_MSIZE);
        assert_eq!((r.msize, r.version.as_str()), (65536, VERSION));
        let r = negotiate(&tversion(u32::MAX, "9P2000.L"), DEFAULT_MAX_MSIZE);
        assert_eq!((r.msize, r.version.as_str()), (DEFAULT_MAX_MSIZE, VERSION));
    }

    #[test]
    fn accepts_dot_l_with_suffix_only() {
        for ok in ["9P2000.L", "9P2000.L.google", "9P2000.L."] {
            assert_eq!(
                negotiate(&tversion(8192, ok), 8192).version,
                VERSION,
                "{ok}"
            );
        }
        for bad in ["9P2000", "9P2000.u", "9P2000.Lx", "9p2000.L", "", "unknown"] {
            assert_eq!(
                negotiate(&tversion(8192, bad), 8192).version,
                VERSION_UNKNOWN,
                "{bad}"
            );
        }
    }

    #[test]
    fn refuses_tiny_msize() {
        let r = negotiate(&tversion(MIN_MSIZE - 1, VERSION), DEFAULT_MAX_MSIZE);
        assert_eq!(r.version, VERSION_UNKNOWN);
        assert_eq!(
            negotiate(&tversion(MIN_MSIZE, VERSION), MIN_MSIZE).version,
            VERSION
        );
    }
}
