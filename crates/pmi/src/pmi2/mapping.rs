//! `PMI_process_mapping`: which node each rank runs on, as PMI-2 launchers publish it.
//!
//! The value is `(vector,(N,C,P),(N,C,P),…)`: each block says "nodes N, N+1, …,
//! N+C-1 get P consecutive ranks each". Ranks are dealt out block by block, starting
//! over at the first block until every rank has a node (MPICH's reading). Example:
//! `(vector,(0,2,2))` for 4 ranks puts ranks 0,1 on node 0 and 2,3 on node 1.

/// Longest mapping accepted, in blocks (a launcher writes one per distinct layout).
const MAX_BLOCKS: usize = 4096;

/// The node of every rank of a job of `size` ranks.
pub fn nodes(mapping: &str, size: usize) -> Result<Vec<usize>, String> {
    let bad = |why: &str| format!("PMI_process_mapping {mapping:?}: {why}");
    let inner = mapping
        .trim()
        .strip_prefix("(vector,")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad("not of the form (vector,(N,C,P),…)"))?;
    let mut blocks = Vec::new();
    for part in inner.split("),") {
        let nums = part.trim_start_matches('(').trim_end_matches(')');
        let v: Vec<usize> = nums
            .split(',')
            .map(|n| n.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad("a block is not three numbers"))?;
        let [node, count, per] = v[..] else {
            return Err(bad("a block is not three numbers"));
        };
        if count == 0 || per == 0 {
            return Err(bad("a block with no nodes or no ranks"));
        }
        blocks.push((node, count, per));
        if blocks.len() > MAX_BLOCKS {
            return Err(bad("too many blocks"));
        }
    }
    let mut out = Vec::with_capacity(size);
    'deal: loop {
        for &(node, count, per) in &blocks {
            for n in node..node.saturating_add(count) {
                for _ in 0..per {
                    if out.len() == size {
                        break 'deal;
                    }
                    out.push(n);
                }
            }
        }
        if size == 0 {
            break;
        }
    }
    Ok(out)
}

/// Rank `rank`'s index among the ranks of its node, and how many ranks that node has.
pub fn local(nodes: &[usize], rank: usize) -> (usize, usize) {
    let mine = nodes[rank];
    let before = nodes[..rank].iter().filter(|&&n| n == mine).count();
    (before, nodes.iter().filter(|&&n| n == mine).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_dealt_in_order_and_wrap() {
        assert_eq!(nodes("(vector,(0,2,2))", 4).unwrap(), [0, 0, 1, 1]);
        assert_eq!(
            nodes("(vector,(0,1,3),(1,1,1))", 6).unwrap(),
            [0, 0, 0, 1, 0, 0]
        );
        assert_eq!(nodes("(vector,(0,4,1))", 5).unwrap(), [0, 1, 2, 3, 0]);
        let n = nodes("(vector,(0,2,2))", 4).unwrap();
        assert_eq!(local(&n, 3), (1, 2));
        assert_eq!(local(&n, 0), (0, 2));
    }

    #[test]
    fn garbage_is_refused() {
        for bad in [
            "",
            "(vector)",
            "(vector,(0,2))",
            "(vector,(0,0,2))",
            "(list,(0,1,1))",
            "(vector,(a,1,1))",
        ] {
            assert!(nodes(bad, 4).is_err(), "{bad:?}");
        }
    }
}
