//! Checking a transfer's shape and walking its chunks (the pairs of local and remote
//! contiguous pieces, in the order of `xfer.rs`'s module docs).
//!
//! Checking happens in full before any byte moves, so a refused transfer changes
//! nothing anywhere.

use crate::error::RmaError;
use crate::xfer::{Kind, Shape, MAX_STRIDE_LEVELS};

/// One contiguous piece of a transfer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunk {
    /// Local address.
    pub local: *mut u8,
    /// Remote address (target's space).
    pub remote: u64,
    /// Bytes.
    pub len: usize,
}

/// The public name of a call, for errors: `put`, `get_strided`, `acc_vector`…
pub(crate) fn op_name(kind: &Kind, shape: &Shape<'_>) -> &'static str {
    match (kind, shape) {
        (Kind::Put, Shape::Contig { .. }) => "put",
        (Kind::Get, Shape::Contig { .. }) => "get",
        (Kind::Acc(_), Shape::Contig { .. }) => "acc",
        (Kind::Put, Shape::Strided { .. }) => "put_strided",
        (Kind::Get, Shape::Strided { .. }) => "get_strided",
        (Kind::Acc(_), Shape::Strided { .. }) => "acc_strided",
        (Kind::Put, Shape::Vector(_)) => "put_vector",
        (Kind::Get, Shape::Vector(_)) => "get_vector",
        (Kind::Acc(_), Shape::Vector(_)) => "acc_vector",
    }
}

/// Where the remote side of a checked shape lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extent {
    /// Every remote byte lies in `start .. start + len` (contiguous and strided).
    One { start: u64, len: u64 },
    /// A list of chunks: each is checked on its own (vector).
    Each,
}

fn zero(op: &'static str, arg: String) -> RmaError {
    RmaError::Zero { op, arg, value: 0 }
}

fn null(op: &'static str, arg: impl Into<String>) -> RmaError {
    RmaError::Null {
        op,
        arg: arg.into(),
    }
}

fn bad(op: &'static str, arg: impl Into<String>, why: String) -> RmaError {
    RmaError::BadShape {
        op,
        arg: arg.into(),
        why,
    }
}

/// Checks everything about a shape that does not need the segment table, and says
/// where its remote side lies.
pub(crate) fn check(kind: &Kind, shape: &Shape<'_>) -> Result<Extent, RmaError> {
    let op = op_name(kind, shape);
    let elem = match kind {
        Kind::Acc(s) => s.elem_size(),
        _ => 1,
    };
    let multiple = |arg: &str, n: usize| {
        if n.is_multiple_of(elem) {
            Ok(())
        } else {
            Err(bad(
                op,
                arg,
                format!("{n} B is not a multiple of the {elem} B accumulate element"),
            ))
        }
    };
    match *shape {
        Shape::Contig {
            local,
            remote,
            bytes,
        } => {
            if local.is_null() {
                return Err(null(op, "local"));
            }
            if remote == 0 {
                return Err(null(op, "remote"));
            }
            if bytes == 0 {
                return Err(zero(op, "bytes".into()));
            }
            multiple("bytes", bytes)?;
            Ok(Extent::One {
                start: remote,
                len: bytes as u64,
            })
        }
        Shape::Strided {
            local,
            local_strides,
            remote,
            remote_strides,
            count,
        } => {
            let levels = local_strides.len();
            if levels > MAX_STRIDE_LEVELS {
                return Err(RmaError::StrideLevels {
                    op,
                    levels,
                    max: MAX_STRIDE_LEVELS,
                });
            }
            if remote_strides.len() != levels {
                return Err(bad(
                    op,
                    "remote_strides",
                    format!(
                        "has {} entries but local_strides has {levels} (one per stride level)",
                        remote_strides.len()
                    ),
                ));
            }
            if count.len() != levels + 1 {
                return Err(bad(
                    op,
                    "count",
                    format!(
                        "has {} entries; {levels} stride levels need {}",
                        count.len(),
                        levels + 1
                    ),
                ));
            }
            if let Some(i) = count.iter().position(|&c| c == 0) {
                return Err(zero(op, format!("count[{i}]")));
            }
            if local.is_null() {
                return Err(null(op, "local"));
            }
            if remote == 0 {
                return Err(null(op, "remote"));
            }
            multiple("count[0]", count[0])?;
            let overflow = |arg: &str| bad(op, arg, "the described range overflows".into());
            let span = |strides: &[usize], arg: &str| -> Result<u64, RmaError> {
                (0..levels)
                    .try_fold(count[0] as u64, |acc, k| {
                        (count[k + 1] as u64 - 1)
                            .checked_mul(strides[k] as u64)
                            .and_then(|x| acc.checked_add(x))
                    })
                    .ok_or_else(|| overflow(arg))
            };
            let local_span = span(local_strides, "local_strides")?;
            if (local as u64).checked_add(local_span).is_none() {
                return Err(overflow("local_strides"));
            }
            let remote_span = span(remote_strides, "remote_strides")?;
            if remote.checked_add(remote_span).is_none() {
                return Err(overflow("remote_strides"));
            }
            Ok(Extent::One {
                start: remote,
                len: remote_span,
            })
        }
        Shape::Vector(iovs) => {
            if iovs.is_empty() {
                return Err(zero(op, "iov (number of entries)".into()));
            }
            for (i, v) in iovs.iter().enumerate() {
                if v.local.len() != v.remote.len() {
                    return Err(bad(
                        op,
                        format!("iov[{i}]"),
                        format!(
                            "{} local addresses but {} remote ones",
                            v.local.len(),
                            v.remote.len()
                        ),
                    ));
                }
                if v.local.is_empty() {
                    return Err(zero(op, format!("iov[{i}] (number of addresses)")));
                }
                if v.bytes == 0 {
                    return Err(zero(op, format!("iov[{i}].bytes")));
                }
                multiple(&format!("iov[{i}].bytes"), v.bytes)?;
                if let Some(j) = v.local.iter().position(|p| p.is_null()) {
                    return Err(null(op, format!("iov[{i}].local[{j}]")));
                }
                if let Some(j) = v.remote.iter().position(|&a| a == 0) {
                    return Err(null(op, format!("iov[{i}].remote[{j}]")));
                }
            }
            Ok(Extent::Each)
        }
    }
}

/// Calls `f` on every chunk of a checked shape, in order; stops at the first error.
pub(crate) fn for_each_chunk<E>(
    shape: &Shape<'_>,
    mut f: impl FnMut(Chunk) -> Result<(), E>,
) -> Result<(), E> {
    match *shape {
        Shape::Contig {
            local,
            remote,
            bytes,
        } => f(Chunk {
            local,
            remote,
            len: bytes,
        }),
        Shape::Strided {
            local,
            local_strides,
            remote,
            remote_strides,
            count,
        } => {
            let levels = local_strides.len();
            let mut idx = [0usize; MAX_STRIDE_LEVELS];
            loop {
                let (mut lo, mut ro) = (0usize, 0u64);
                for k in 0..levels {
                    lo += idx[k] * local_strides[k];
                    ro += (idx[k] * remote_strides[k]) as u64;
                }
                f(Chunk {
                    local: local.wrapping_add(lo),
                    remote: remote + ro,
                    len: count[0],
                })?;
                // The odometer: level 1 turns fastest.
                let mut k = 0;
                loop {
                    if k == levels {
                        return Ok(());
                    }
                    idx[k] += 1;
                    if idx[k] < count[k + 1] {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
            }
        }
        Shape::Vector(iovs) => {
            for v in iovs {
                for (&local, &remote) in v.local.iter().zip(v.remote) {
                    f(Chunk {
                        local,
                        remote,
                        len: v.bytes,
                    })?;
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xfer::{IoVec, Scale};

    fn chunks(shape: &Shape<'_>) -> Vec<(usize, u64, usize)> {
        let mut v = Vec::new();
        for_each_chunk::<()>(shape, |c| {
            v.push((c.local as usize, c.remote, c.len));
            Ok(())
        })
        .unwrap();
        v
    }

    #[test]
    fn strided_chunks_pair_up_level_one_fastest() {
        let shape = Shape::Strided {
            local: 1000 as *mut u8,
            local_strides: &[10, 100],
            remote: 5000,
            remote_strides: &[20, 300],
            count: &[4, 2, 3],
        };
        assert_eq!(
            check(&Kind::Put, &shape).unwrap(),
            Extent::One {
                start: 5000,
                len: 4 + 20 + 2 * 300
            }
        );
        let got = chunks(&shape);
        assert_eq!(got.len(), 6);
        assert_eq!(got[0], (1000, 5000, 4));
        assert_eq!(got[1], (1010, 5020, 4));
        assert_eq!(got[2], (1100, 5300, 4));
        assert_eq!(got[5], (1210, 5620, 4));
    }

    #[test]
    fn zero_levels_is_one_chunk() {
        let shape = Shape::Strided {
            local: 8 as *mut u8,
            local_strides: &[],
            remote: 16,
            remote_strides: &[],
            count: &[24],
        };
        assert_eq!(chunks(&shape), [(8, 16, 24)]);
    }

    #[test]
    fn bad_shapes_name_call_and_argument() {
        let p = 8 as *mut u8;
        let too_deep = [1usize; MAX_STRIDE_LEVELS + 1];
        let counts = [1usize; MAX_STRIDE_LEVELS + 2];
        let e = check(
            &Kind::Get,
            &Shape::Strided {
                local: p,
                local_strides: &too_deep,
                remote: 8,
                remote_strides: &too_deep,
                count: &counts,
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                RmaError::StrideLevels {
                    op: "get_strided",
                    levels: 9,
                    ..
                }
            ),
            "{e}"
        );
        let e = check(
            &Kind::Put,
            &Shape::Strided {
                local: p,
                local_strides: &[8],
                remote: 8,
                remote_strides: &[8],
                count: &[8, 0],
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "put_strided: count[1] must be at least 1 (got 0)"
        );
        let e = check(
            &Kind::Acc(Scale::Double(1.0)),
            &Shape::Contig {
                local: p,
                remote: 8,
                bytes: 12,
            },
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("acc: bytes: 12 B is not a multiple"),
            "{e}"
        );
        let e = check(
            &Kind::Put,
            &Shape::Contig {
                local: std::ptr::null_mut(),
                remote: 8,
                bytes: 8,
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "put: local is a null pointer");
        let locals = [p, std::ptr::null_mut()];
        let iov = [IoVec {
            local: &locals,
            remote: &[8, 16],
            bytes: 8,
        }];
        let e = check(&Kind::Get, &Shape::Vector(&iov)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "get_vector: iov[0].local[1] is a null pointer"
        );
        let e = check(
            &Kind::Put,
            &Shape::Strided {
                local: p,
                local_strides: &[usize::MAX / 2],
                remote: 8,
                remote_strides: &[8],
                count: &[8, 4],
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
