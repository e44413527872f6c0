//! Attacks on `/log` of a real `nf serve` run as root: every
//! user could write lines there that read like the server's, flood it, and fill it
//! with refused-attach warnings (one line per try). An unprivileged account tries
//! each; the log must stay bounded and every line of theirs must say who wrote it.

mod serve_support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use nf_ninep::errno::EACCES;
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, Root};
use nf_node::log::{USER_BURST, USER_RATE};
use nf_testkit::users::{as_user, test_account, Account};
use serve_support::{log_text, Served};

/// A root `nf serve` whose socket (in the test's private directory) every user can
/// reach, as under `/run/ninefold`.
fn served() -> Served {
    let s = Served::start(&[]);
    std::fs::set_permissions(s.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    s
}

fn session(s: &Served, user: &Account) -> Root {
    let client = as_user(user, || Client::connect_unix(&s.socket)).expect("connect");
    client.attach(&user.name, "").expect("attach as oneself")
}

#[test]
fn a_burst_of_refused_attaches_leaves_a_bounded_number_of_lines_in_the_log() {
    let user = test_account().unwrap();
    let s = served();
    let tries = 200;
    for _ in 0..tries {
        let c = as_user(&user, || Client::connect_unix(&s.socket)).unwrap();
        let refused = c
            .attach("root", "")
            .expect_err("a user may not attach as root");
        assert_eq!(refused.errno(), Some(EACCES));
    }
    let lines = log_text(&s);
    let full = lines
        .lines()
        .filter(|l| l.contains("attach refused"))
        .count();
    assert!(
        (1..=2).contains(&full),
        "{full} refusal lines for {tries} tries:\n{lines}"
    );

    // The rest are counted, and said in one line when the 10 s window ends (a
    // generous deadline against hangs on a loaded machine, not a timing claim).
    let who = format!("uid {} as \"root\"", user.uid);
    let deadline = Instant::now() + Duration::from_secs(40);
    let summary = loop {
        let text = log_text(&s);
        if let Some(l) = text
            .lines()
            .find(|l| l.contains("attaches refused in the last 10 s"))
        {
            break l.to_string();
        }
        assert!(Instant::now() < deadline, "no summary line:\n{text}");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(summary.contains(&who), "{summary}");
    let counted: usize = summary
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a count");
    assert!(counted + full >= tries, "{summary}");
    let text = log_text(&s);
    let lines = text
        .lines()
        .filter(|l| l.contains("attach refused") || l.contains("attaches refused"))
        .count();
    assert!(
        lines <= 3,
        "{lines} lines for {tries} refused attaches:\n{text}"
    );
}

#[test]
fn a_user_cannot_write_a_line_that_looks_like_the_servers_nor_flood_the_log() {
    let user = test_account().unwrap();
    let s = served();
    let me = session(&s, &user);
    let forged = "attach refused: all is well, nothing to see";
    me.write_file(
        "/log",
        format!("hello\n2030-01-01T00:00:00.000000Z  WARN nf_node::access: {forged}\n").as_bytes(),
    )
    .unwrap();
    let text = log_text(&s);
    let theirs: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("hello") || l.contains(forged))
        .collect();
    assert_eq!(theirs.len(), 2, "{text}");
    let tag = format!("user {}: ", user.name);
    for l in &theirs {
        assert!(
            l.starts_with(&tag),
            "a user's line without their name: {l:?}"
        );
    }

    // A megabyte in 2,000 writes: what goes in is bounded by the user's rate.
    let start = Instant::now();
    let f = me.open("/log", LOpenFlags::WRONLY).unwrap();
    let line = [b"x".repeat(499), b"\n".to_vec()].concat();
    for _ in 0..2000 {
        assert_eq!(f.write_at(&line, 0).unwrap(), line.len(), "never refused");
    }
    let earned = USER_RATE * (start.elapsed().as_secs() + 1);
    let text = log_text(&s);
    let kept: usize = text
        .lines()
        .filter(|l| l.starts_with(&tag) && l.ends_with("xxxx"))
        .map(|l| l.len() + 1)
        .sum();
    assert!(
        kept as u64 <= USER_BURST + earned,
        "{kept} bytes of 1 MB kept (burst {USER_BURST}, {earned} earned)"
    );
    assert!(kept > 0, "the user's first lines go in");
    // Root still writes, as written.
    let root = Client::connect_unix(&s.socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    root.write_file("/log", b"operator: maintenance at 18:00\n")
        .unwrap();
    assert!(log_text(&s).contains("\noperator: maintenance at 18:00\n"));
}
