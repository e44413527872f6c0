//! An allocation the host cannot hold (Global Arrays' `enormous`): every proc must
//! get `NoRoom` at once — never a segment the OOM killer ends later — and the job
//! must go on as if nothing had been asked.

use nf_rma::{Limit, Rma, RmaError};

use crate::{ctx, Check};

/// `MemTotal` of this host, in bytes.
fn mem_total() -> Result<u64, String> {
    let text = ctx(
        std::fs::read_to_string("/proc/meminfo"),
        "reading /proc/meminfo",
    )?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| "no MemTotal in /proc/meminfo".into())
}

/// Every proc asks for an equal share of twice the host's memory (the procs of the
/// job are on this host); each must get `NoRoom` naming the whole, then a small
/// allocation must work on all.
pub fn too_big(rma: &Rma<'_>) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let twice = 2 * mem_total()?;
    let each = twice.div_ceil(n as u64);
    match rma.malloc(each as usize) {
        Ok(bases) => {
            // Nothing was touched: give it back before saying what went wrong.
            let _ = rma.free(bases[me]);
            Err(format!(
                "malloc of {each} B on each of {n} procs ({twice} B, twice MemTotal) succeeded"
            ))
        }
        Err(RmaError::NoRoom {
            proc,
            need,
            room,
            limit,
            ..
        }) => {
            if proc != 0 || need < twice || room >= need {
                return Err(format!(
                    "NoRoom names proc {proc}, {need} B asked, {room} B room; expected proc \
                     0, at least {twice} B asked and less room"
                ));
            }
            let text = RmaError::NoRoom {
                op: "malloc",
                proc,
                need,
                room,
                limit: limit.clone(),
            }
            .to_string();
            if let Limit::ShmDir(dir) = &limit {
                if !text.contains(&dir.display().to_string()) {
                    return Err(format!(
                        "the message does not name {}: {text}",
                        dir.display()
                    ));
                }
            }
            eprintln!("proc {me}: refused as it must be: {text}");
            // The job goes on: nothing of the refused allocation is left.
            let bases = ctx(rma.malloc(4096), "a small malloc after the refusal")?;
            ctx(rma.barrier(), "barrier")?;
            ctx(rma.free(bases[me]), "free")
        }
        Err(e) => Err(format!("expected NoRoom, got: {e}")),
    }
}
