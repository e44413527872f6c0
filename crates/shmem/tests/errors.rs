//! Each error class ends the job with a message naming the call and the PE, and a PE
//! killed mid-job ends the others with that PE named (`tests/c/t_errors.c`).

mod common;

use common::{compile, nf_run};

/// Runs `t_errors MODE` on 2 PEs; checks the job failed and printed `want`.
fn fails_with(mode: &str, want: &[&str]) {
    let prog = compile("t_errors");
    let run = nf_run(2, &prog, &[mode], &[]);
    assert!(!run.ok, "{mode}: the job succeeded:\n{}", run.text);
    for w in want {
        assert!(
            run.text.contains(w),
            "{mode}: no {w:?} in the output:\n{}",
            run.text
        );
    }
}

#[test]
fn a_pe_that_does_not_exist() {
    fails_with(
        "bad_pe",
        &["libshmem: PE 0: shmem_int_p: PE 2 does not exist: the job has 2 PEs"],
    );
}

#[test]
fn an_address_outside_the_symmetric_heap() {
    fails_with(
        "outside_heap",
        &[
            "libshmem: PE 0: shmem_int_p: dest = 0x",
            "is not in the symmetric heap",
        ],
    );
}

/// The spec has `shmem_malloc` return NULL when it cannot allocate: every PE gets
/// NULL, says why, and the program goes on with a usable heap.
#[test]
fn an_oversize_allocation_is_null_with_a_message() {
    let prog = compile("t_errors");
    let run = nf_run(2, &prog, &["oversize"], &[]);
    assert!(
        run.ok,
        "the program saw a non-NULL pointer or failed:\n{}",
        run.text
    );
    for pe in 0..2 {
        let want = format!("libshmem: PE {pe}: shmem_malloc: cannot allocate 1099511627776 B");
        assert!(run.text.contains(&want), "no {want:?} in:\n{}", run.text);
    }
    assert!(run.text.contains("returning NULL"), "{}", run.text);
}

#[test]
fn a_collective_with_inconsistent_arguments() {
    // Both PEs fail; the launcher may stop one before it prints, so either message
    // will do: each names this PE's size and the other's.
    fails_with(
        "inconsistent",
        &[
            "shmem_malloc: a collective with inconsistent arguments: this PE passed size = ",
            "size = 100",
            "size = 200",
        ],
    );
}

#[test]
fn a_call_before_shmem_init_and_a_bad_comparison() {
    fails_with(
        "before_init",
        &["shmem_my_pe: OpenSHMEM is not initialised"],
    );
    fails_with(
        "bad_cmp",
        &["libshmem: PE 0: shmem_int_wait_until: cmp = 42"],
    );
}

#[test]
fn a_team_other_than_the_world() {
    fails_with(
        "bad_team",
        &["libshmem: PE 0: shmem_sync: only SHMEM_TEAM_WORLD is provided in this version"],
    );
}

#[test]
fn an_invalid_context() {
    fails_with(
        "bad_ctx",
        &["libshmem: PE 0: shmem_ctx_quiet: ctx is SHMEM_CTX_INVALID"],
    );
}

/// A stride whose byte count overflows is refused, not wrapped into the heap.
#[test]
fn a_stride_that_overflows() {
    fails_with(
        "huge_stride",
        &["libshmem: PE 0: shmem_int_iput: strides dst = 9223372036854775807, sst = 1 of 4-byte elements overflow the address space"],
    );
}

#[test]
fn a_signal_operator_that_does_not_exist() {
    fails_with(
        "bad_sig_op",
        &["libshmem: PE 0: shmem_putmem_signal: sig_op 7 is neither SHMEM_SIGNAL_SET (0) nor SHMEM_SIGNAL_ADD (1)"],
    );
}

/// A misaligned atomic is refused on the same-host path too, where a hardware atomic
/// on the mapping would otherwise run on it (and tear or fault) without a word.
#[test]
fn a_misaligned_atomic() {
    fails_with(
        "misaligned_amo",
        &[
            "libshmem: PE 0: shmem_long_atomic_fetch_add: dest = 0x",
            "is not aligned to 8 bytes",
        ],
    );
}

#[test]
fn a_pe_killed_mid_job_is_named_and_nothing_hangs() {
    fails_with("killed", &["rank 1", "SIGKILL"]);
}

#[test]
fn the_symmetric_size_is_read_and_checked() {
    let prog = compile("t_errors");
    let run = nf_run(1, &prog, &["oversize"], &[("SHMEM_SYMMETRIC_SIZE", "2M")]);
    assert!(
        run.ok && run.text.contains("of 2097152 B per PE"),
        "{}",
        run.text
    );
    let run = nf_run(1, &prog, &[], &[("SHMEM_SYMMETRIC_SIZE", "lots")]);
    assert!(
        !run.ok && run.text.contains("SHMEM_SYMMETRIC_SIZE is \"lots\""),
        "{}",
        run.text
    );
}
