//! The README's pipe line, `nf write :/pipe/jobs < work.txt & nf cat :/pipe/jobs`, run
//! 50 times in a row on one pipe with real `nf` processes: whichever starts first, and
//! also when the writer has finished before the reader opens, the reader gets every
//! byte and then end of file.

mod serve_support;

use std::process::Stdio;

use serve_support::{nf, run_bounded, text, wait_bounded, Served};

#[test]
fn the_readme_pipe_line_works_fifty_times_in_a_row() {
    let s = Served::start(&[]);
    let small: Vec<u8> = (0..10_000u32)
        .flat_map(|i| format!("job {i}\n").into_bytes())
        .collect();
    let small = &small[..10_000];
    let large: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let pipe = s.at("/pipe/jobs");
    for round in 0..50 {
        // Every fifth round the writer finishes alone first (its data fits the pipe);
        // otherwise both run at once, the reader first on odd rounds, with more data
        // than the pipe holds.
        let alone = round % 5 == 0;
        let data: &[u8] = if alone { small } else { &large };
        let work = s.dir.path().join(format!("work{round}.txt"));
        std::fs::write(&work, data).unwrap();
        let writer = || {
            nf().args(["write", &pipe])
                .stdin(std::fs::File::open(&work).unwrap())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let reader = || {
            nf().args(["cat", &pipe])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (mut w, r) = if alone {
            let mut w = writer();
            assert!(wait_bounded(&mut w).success(), "round {round}: writer");
            (w, reader())
        } else if round % 2 == 1 {
            let r = reader();
            (writer(), r)
        } else {
            let w = writer();
            (w, reader())
        };
        let out = serve_support::output_bounded(r);
        assert!(
            wait_bounded(&mut w).success(),
            "round {round}: writer failed"
        );
        assert!(
            out.status.success(),
            "round {round}: reader failed: {}",
            text(&out.stderr)
        );
        assert!(
            out.stdout == data,
            "round {round}: the reader got {} of {} bytes",
            out.stdout.len(),
            data.len()
        );
    }
    let out = run_bounded(nf().args(["ls", &s.at("/pipe")]));
    assert!(text(&out.stdout).contains("jobs"));
}
