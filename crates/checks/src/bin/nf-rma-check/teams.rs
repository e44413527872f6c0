//! Teams (allocation, transfers and free over a subset of the world; a team's
//! collectives, `NodeTeam`) and the typed `GlobalArray` API.

use nf_rma::{GlobalArray, NodeTeam, Rma, RmaError, Team, WorldWireup};

use crate::shapes::{own_bytes, same};
use crate::{ctx, pattern, Check};

pub fn teams(rma: &Rma<'_>, wire: &nf_rma::WorldWireup<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let even: Vec<usize> = (0..n).step_by(2).collect();
    if me % 2 == 0 {
        let team = ctx(wire.team(even.clone()), "team")?;
        let i = even.iter().position(|&p| p == me).expect("member");
        let bases = ctx(rma.malloc_team(&team, 4096 * (i + 1)), "malloc_team")?;
        if bases.len() != even.len() || bases.contains(&0) {
            return Err(format!("malloc_team returned {bases:?}"));
        }
        let next = even[(i + 1) % even.len()];
        let prev = even[(i + even.len() - 1) % even.len()];
        let data: Vec<u8> = (0..4096).map(|k| pattern(me, 9, k)).collect();
        let j = (i + 1) % even.len();
        ctx(
            // SAFETY: `data` holds 4096 readable bytes.
            unsafe { rma.put(data.as_ptr(), bases[j], 4096, next) },
            "put in team",
        )?;
        ctx(rma.all_fence(), "all_fence")?;
        ctx(team.barrier(), "team barrier")?;
        let want: Vec<u8> = (0..4096).map(|k| pattern(prev, 9, k)).collect();
        same("team put", &own_bytes(rma, bases[i], 4096)?, &want)?;
        ctx(team.barrier(), "team barrier")?;
        ctx(rma.free_team(&team, bases[i]), "free_team")?;
    }
    ctx(rma.barrier(), "barrier")
}

/// A `NodeTeam` of every proc but the first: part of the node on one host, a node
/// team on each of two hosts, one member per node with every proc its own domain.
/// Barrier, all-reduce (u64 sums of one piece and of several), broadcast from every
/// member (short, and of several pieces); the leaders' step an allgather among the
/// nodes' leaders over the wire-up, folded in node order.
pub fn node_team(rma: &Rma<'_>, wire: &WorldWireup<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let members: Vec<usize> = (1..n).collect();
    if me != 0 {
        let team = ctx(wire.team(members.clone()), "team")?;
        let nt = ctx(NodeTeam::new(rma, &team), "NodeTeam::new")?;
        let node = |p: usize| rma.domains().id_of(p);
        // Each node's leader is its lowest member; node order is domain order.
        let mut leaders: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&p| members.iter().all(|&q| node(q) != node(p) || q >= p))
            .collect();
        leaders.sort_by_key(|&p| node(p));
        let mine = nt.node_members();
        if mine.first() != leaders.iter().find(|&&l| node(l) == node(me)) {
            return Err(format!("node members {mine:?}, leaders {leaders:?}"));
        }
        let across = (mine[0] == me && leaders.len() > 1)
            .then(|| ctx(wire.team(leaders.clone()), "leaders' team"))
            .transpose()?;
        let failed = |e: nf_rma::WireupError| RmaError::Collective {
            op: "leaders' step",
            why: e.to_string(),
        };
        let sum = |acc: &mut [u8], x: &[u8]| {
            for (a, b) in acc.chunks_exact_mut(8).zip(x.chunks_exact(8)) {
                let v = u64::from_ne_bytes((&*a).try_into().expect("8 bytes"))
                    .wrapping_add(u64::from_ne_bytes(b.try_into().expect("8 bytes")));
                a.copy_from_slice(&v.to_ne_bytes());
            }
        };
        for round in 0..3u64 {
            let mut barrier = |_: &mut [u8]| match &across {
                Some(t) => t.barrier().map_err(failed),
                None => Ok(()),
            };
            ctx(
                nt.barrier(rma, across.as_ref().map(|_| &mut barrier as _)),
                "barrier",
            )?;
            for len in [1usize, 3000] {
                let mut x: Vec<u8> = (0..len)
                    .flat_map(|i| (me as u64 * (i as u64 + 1) + round).to_ne_bytes())
                    .collect();
                let mut fold = |acc: &mut [u8], o: &[u8]| sum(acc, o);
                let mut reduce = |buf: &mut [u8]| {
                    let t = across.as_ref().expect("leaders only");
                    let all = t.allgather_fixed(buf).map_err(failed)?;
                    buf.copy_from_slice(&all[0]);
                    all[1..].iter().for_each(|o| sum(buf, o));
                    Ok(())
                };
                let a = across.as_ref().map(|_| &mut reduce as _);
                ctx(nt.allreduce(rma, &mut x, 8, &mut fold, a), "allreduce")?;
                let total: u64 = members.iter().map(|&p| p as u64).sum();
                for (i, v) in x.chunks_exact(8).enumerate() {
                    let want = total * (i as u64 + 1) + round * members.len() as u64;
                    if u64::from_ne_bytes(v.try_into().expect("8 bytes")) != want {
                        return Err(format!("round {round}: allreduce of {len}: [{i}] {v:?}"));
                    }
                }
            }
            for &root in &members {
                for len in [5usize, 20000] {
                    let want: Vec<u8> = (0..len).map(|k| pattern(root, round, k)).collect();
                    let mut buf = if me == root {
                        want.clone()
                    } else {
                        vec![0; len]
                    };
                    let from = leaders.iter().position(|&l| node(l) == node(root));
                    let mut bcast = |buf: &mut [u8]| {
                        let t = across.as_ref().expect("leaders only");
                        let all = t.allgather_fixed(buf).map_err(failed)?;
                        buf.copy_from_slice(&all[from.expect("the root's node")]);
                        Ok(())
                    };
                    let a = across.as_ref().map(|_| &mut bcast as _);
                    ctx(nt.broadcast(rma, &mut buf, root, a), "broadcast")?;
                    same(
                        &format!("round {round}: broadcast from {root}"),
                        &buf,
                        &want,
                    )?;
                }
            }
        }
        ctx(nt.free(rma, &team), "NodeTeam::free")?;
    }
    ctx(rma.barrier(), "barrier")
}

pub fn typed(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let next = (me + 1) % n;
    let a = ctx(GlobalArray::<f64>::new(rma, 100 + me), "GlobalArray::new")?;
    if (0..n).any(|p| a.len_of(p) != 100 + p) {
        return Err("lengths differ from what each proc asked".into());
    }
    ctx(a.put(next, 10, &[1.0, 2.0, me as f64]), "put")?;
    ctx(a.acc(0, 0, &[1.0; 5], 2.0), "acc")?;
    ctx(rma.barrier(), "barrier")?;
    let mine = ctx(a.read_local(), "read_local")?;
    let prev = (me + n - 1) % n;
    if mine[10..13] != [1.0, 2.0, prev as f64] {
        return Err(format!("typed put: {:?}", &mine[10..13]));
    }
    if me == 0 && mine[..5] != [2.0 * n as f64; 5] {
        return Err(format!("typed acc: {:?}", &mine[..5]));
    }
    let mut one = [0.0];
    match a.get(next, 100 + next, &mut one) {
        Err(RmaError::BadShape {
            op: "GlobalArray::get",
            ..
        }) => {}
        other => return Err(format!("reading past the end gave {other:?}")),
    }
    let c = ctx(GlobalArray::<i64>::new(rma, 1), "GlobalArray::<i64>::new")?;
    let t = ctx(c.fetch_add(0, 0, 1), "fetch_add")?;
    if !(0..n as i64).contains(&t) {
        return Err(format!("ticket {t} outside 0..{n}"));
    }
    ctx(rma.barrier(), "barrier")?;
    if me == 0 && ctx(c.read_local(), "read_local")?[0] != n as i64 {
        return Err("fetch_add total is wrong".into());
    }
    ctx(rma.barrier(), "barrier")?;
    ctx(c.free(), "free")?;
    ctx(a.free(), "free")
}

/// Freed allocations come back for the next allocation of the same sizes (the cache
/// of `nf_rma`'s `api/cache.rs`): zeroed, at the same addresses, and reachable by
/// transfers as before; allocations of other sizes, a team's, and more than the cache
/// keeps all work alongside.
pub fn reuse(rma: &Rma<'_>, wire: &nf_rma::WorldWireup<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    // Every proc asks for a different size, a little less each round within its size
    // class (a power of two), so a freed segment serves the next allocation of the
    // same classes. The first 12 rounds cycle through 4 sets of classes, which the
    // cache keeps (8 entries): from round 4 on, each must come back where it was, and
    // only as long as asked. The next 24 cycle through 12 other sets, more than it
    // keeps, so entries are dropped and new ones made.
    let len_of = |proc: usize, round: usize, set: usize| {
        let class = if round < 12 {
            (8192 * (proc + 1)) << set
        } else {
            8192 << ((proc * 5 + set) % 11)
        };
        class - 512 * (round % 3)
    };
    let mut last: Vec<Option<Vec<u64>>> = vec![None; 16];
    for round in 0..36 {
        let set = if round < 12 {
            round % 4
        } else {
            4 + round % 12
        };
        let len = len_of(me, round, set);
        let bases = ctx(rma.malloc(len), "malloc")?;
        if let (true, Some(before)) = (round < 12, &last[set]) {
            if &bases != before {
                return Err(format!(
                    "round {round}: sizes of the classes freed 4 rounds ago came back at \
                     {bases:?}, not at {before:?}"
                ));
            }
        }
        last[set] = Some(bases.clone());
        // A reused segment is as long as asked now, not as its class.
        let past = bases[next] + len_of(next, round, set) as u64;
        let byte = [0u8];
        // SAFETY: `byte` holds the 1 byte read; the library must refuse the put anyway.
        match unsafe { rma.put(byte.as_ptr(), past, 1, next) } {
            Err(RmaError::OutOfSegment { .. }) => {}
            other => {
                return Err(format!(
                    "round {round}: a put just past proc {next}'s {} bytes gave {other:?}, \
                     not OutOfSegment",
                    len_of(next, round, set)
                ))
            }
        }
        let zero = own_bytes(rma, bases[me], len)?;
        if let Some(i) = zero.iter().position(|&b| b != 0) {
            return Err(format!(
                "round {round}: byte {i} of a new allocation is {}",
                zero[i]
            ));
        }
        // Nobody writes into anyone's part before its owner has looked.
        ctx(rma.barrier(), "barrier")?;
        let data: Vec<u8> = (0..len.min(4096))
            .map(|k| pattern(me, round as u64, k))
            .collect();
        ctx(
            // SAFETY: `data` holds `data.len()` readable bytes.
            unsafe { rma.put(data.as_ptr(), bases[next], data.len(), next) },
            "put",
        )?;
        ctx(rma.all_fence(), "all_fence")?;
        ctx(rma.barrier(), "barrier")?;
        let want: Vec<u8> = (0..4096).map(|k| pattern(prev, round as u64, k)).collect();
        same(
            "put into a reused allocation",
            &own_bytes(rma, bases[me], 4096)?,
            &want,
        )?;
        let mut back = vec![0u8; 4096];
        ctx(
            // SAFETY: `back` has room for 4096 bytes.
            unsafe { rma.get(bases[next], back.as_mut_ptr(), 4096, next) },
            "get",
        )?;
        let mine: Vec<u8> = (0..4096).map(|k| pattern(me, round as u64, k)).collect();
        same("get from a reused allocation", &back, &mine)?;
        ctx(rma.barrier(), "barrier")?;
        ctx(rma.free(bases[me]), "free")?;
        if round % 5 == 0 {
            // A team of the even procs allocates the same sizes: it has its own cache.
            teams(rma, wire)?;
        }
    }
    Ok(())
}
