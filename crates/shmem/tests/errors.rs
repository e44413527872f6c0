//! Each error class ends the job with a message naming the call and the PE, and a PE
//! killed mid-job ends the others with that PE named (`tests/c/t_errors.c`).

mod common;

use common::{compile, compile_as, nf_run, ShmDir};

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

/// PEs far past the fast path's table (csrc/internal.h rule 2): the word one past
/// the table may be 0, which sends even an unchecked call to the Rust side and its
/// message; these are unmapped or hold something else, so the C side's own range
/// check is what stops them (`a_negative_pe` covers the other side).
#[test]
fn a_pe_far_past_the_last() {
    for (mode, call, pe) in [
        ("far_pe_p", "shmem_int_p", i32::MAX),
        ("far_pe_g", "shmem_int_g", 1 << 28),
        ("far_pe_amo", "shmem_int_atomic_fetch_inc", 1 << 24),
    ] {
        fails_with(
            mode,
            &[&format!(
                "libshmem: PE 0: {call}: PE {pe} does not exist: the job has 2 PEs"
            )],
        );
    }
}

/// The heap's edge on a same-host PE: one past the end, and transfers straddling it,
/// are refused by name (the C side's fast path must hand them to the Rust side).
#[test]
fn addresses_at_the_heap_end_and_straddling_it() {
    let not_symmetric = "is not symmetric: it is neither in the symmetric heap";
    for (mode, call, arg, len) in [
        ("edge_p", "shmem_long_p", "dest", 8),
        ("edge_put", "shmem_putmem", "dest", 8),
        ("edge_get", "shmem_getmem", "source", 8),
        ("edge_amo", "shmem_long_atomic_fetch_add", "dest", 8),
    ] {
        fails_with(
            mode,
            &[
                &format!("libshmem: PE 0: {call}: {arg} = 0x"),
                &format!("(+{len} B, for PE 1) {not_symmetric}"),
            ],
        );
    }
}

#[test]
fn a_negative_pe() {
    fails_with(
        "negative_pe",
        &["libshmem: PE 0: shmem_long_g: PE -1 does not exist: the job has 2 PEs"],
    );
}

#[test]
fn an_address_outside_the_symmetric_heap() {
    fails_with(
        "outside_heap",
        &[
            "libshmem: PE 0: shmem_int_p: dest = 0x",
            "is not symmetric: it is neither in the symmetric heap",
            "nor in the executable's global and static data (0x",
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
fn a_call_from_a_thread_other_than_shmem_inits() {
    fails_with(
        "other_thread",
        &[
            "libshmem: PE 0: shmem_int_p: called from a thread other than the one that called \
           shmem_init",
        ],
    );
}

#[test]
fn an_invalid_team() {
    fails_with(
        "bad_team",
        &["libshmem: PE 0: shmem_sync: team is SHMEM_TEAM_INVALID"],
    );
}

#[test]
fn a_destroyed_team() {
    fails_with(
        "destroyed_team",
        &[
            "libshmem: PE 0: shmem_int_sum_reduce: team 0x",
            "is not a live team: it was destroyed",
        ],
    );
}

#[test]
fn a_split_with_stride_0_and_more_than_one_pe() {
    fails_with(
        "split_stride0",
        &[
            "shmem_team_split_strided: stride = 0 with size = 2 would list one PE 2 times",
            "PE 0: no team",
            "PE 1: no team",
        ],
    );
}

#[test]
fn a_split_of_no_pes() {
    fails_with(
        "split_empty",
        &[
            "shmem_team_split_strided: size = 0: a team has at least one PE",
            "PE 0: no team",
            "PE 1: no team",
        ],
    );
}

#[test]
fn a_split_outside_the_parent() {
    fails_with(
        "split_range",
        &[
            "shmem_team_split_strided: start = 1, stride = 1, size = 2 reach parent PEs 1 ..= 2, outside the parent team of 2 PEs (0 ..= 1)",
            "PE 0: no team",
            "PE 1: no team",
        ],
    );
}

#[test]
fn a_split_with_different_arguments_on_different_pes() {
    fails_with(
        "split_inconsistent",
        &["libshmem: PE 1: shmem_team_split_strided: the parent team's PEs passed different arguments: this PE start = 1, parent PE 0 (world PE 0) start = 0"],
    );
}

#[test]
fn a_root_outside_the_team() {
    fails_with(
        "bad_root",
        &["shmem_int_broadcast: PE_root = 2 is not a PE of the team (0 ..= 1)"],
    );
}

#[test]
fn an_invalid_context() {
    fails_with(
        "bad_ctx",
        &["libshmem: PE 0: shmem_ctx_int_p: ctx is SHMEM_CTX_INVALID"],
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

/// A PE killed while the others' static data is adopted: the job ends naming it,
/// and no segment file is left (each was unlinked once mapped).
#[test]
fn a_pe_killed_with_static_data_adopted_leaves_no_segment() {
    let prog = compile_as("t_static", "t_static_pie", &["-fPIE", "-pie"]);
    let shm = ShmDir::new();
    let run = nf_run(3, &prog, &["killed"], &[shm.env()]);
    assert!(!run.ok, "the job succeeded:\n{}", run.text);
    assert!(
        run.text.contains("rank 2"),
        "rank 2 not named:\n{}",
        run.text
    );
    shm.assert_empty("t_static killed");
}

/// PEs running executables whose static data differ in size cannot share it: every
/// PE ends naming another's sizes (here PE 1 runs a build with a larger bss).
#[test]
fn a_job_of_mixed_executables_is_refused_naming_the_pe() {
    let small = compile_as("t_static", "t_static_pie", &["-fPIE", "-pie"]);
    let big = compile_as("t_static", "t_static_bigger", &["-DBIGGER"]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mixed = dir.path().join("mixed.sh");
    std::fs::write(
        &mixed,
        format!(
            "#!/bin/sh\nif [ \"$NF_RANK\" = 1 ]; then exec {} \"$@\"; fi\nexec {} \"$@\"\n",
            big.display(),
            small.display()
        ),
    )
    .expect("write the wrapper");
    let mut perms = std::fs::metadata(&mixed).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&mixed, perms).expect("chmod the wrapper");
    let shm = ShmDir::new();
    let run = nf_run(2, &mixed, &[], &[shm.env()]);
    assert!(!run.ok, "the job succeeded:\n{}", run.text);
    let named = run
        .text
        .contains("libshmem: PE 0: shmem_init: PE 1's executable has static data")
        || run
            .text
            .contains("libshmem: PE 1: shmem_init: PE 0's executable has static data");
    assert!(named, "no message naming the other PE:\n{}", run.text);
    assert!(
        run.text.contains("every PE must run the same executable"),
        "{}",
        run.text
    );
    shm.assert_empty("mixed executables");
}

/// `shmem_global_exit` ends the whole job with its status, 0 included (the others,
/// waiting in a barrier it never reaches, are stopped rather than left waiting).
#[test]
fn global_exit_ends_every_pe_with_its_status() {
    let prog = compile("t_global_exit");
    let clean = nf_run(3, &prog, &["0"], &[]);
    assert!(
        clean.ok,
        "global_exit(0) did not end the job cleanly:\n{}",
        clean.text
    );
    assert!(
        clean.text.contains("PE 2 ends the job with 0"),
        "{}",
        clean.text
    );
    let failed = nf_run(3, &prog, &["5"], &[]);
    assert!(!failed.ok, "global_exit(5) succeeded:\n{}", failed.text);
    assert!(
        failed.text.contains("ended the job with status 5"),
        "{}",
        failed.text
    );
    for run in [&clean, &failed] {
        assert!(!run.text.contains("returned"), "{}", run.text);
        assert!(!run.text.contains("passed a barrier"), "{}", run.text);
    }
}
