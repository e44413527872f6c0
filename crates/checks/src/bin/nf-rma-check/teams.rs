//! Teams (allocation, transfers and free over a subset of the world) and the typed
//! `GlobalArray` API.

use nf_rma::{GlobalArray, Rma, RmaError, Team};

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
