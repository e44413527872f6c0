//! Refused attaches, counted rather than each logged: a local user who retries an
//! attach as root in a loop must not flood `/log` (and the server's stderr) with a
//! line per try, and so hide what else happens.
//!
//! 1. A refusal when no window is open is logged in full — who, as whom, why, and
//!    the fix where there is one — and opens a window of [`WINDOW`].
//! 2. Refusals while a window is open are only counted, per (peer, asked) pair.
//! 3. When the window ends, one line sums it up if anything was counted — `N attaches
//!    refused in the last 10 s and not logged one by one, e.g. uid 1001 as "root"
//!    (35), "alice" as "bob" (2)` —
//!    the most frequent [`EXAMPLES`] pairs first, and a new window opens; if nothing
//!    was counted, the window closes and rule 1 applies again. So a flood of any
//!    length leaves one line, then one per [`WINDOW`].
//! 4. The window's end is kept by one short-lived thread, started by the first
//!    counted refusal and ending with the first window in which none came: nothing
//!    runs while nobody is refused.
//! 5. Memory is bounded: at most [`PAIRS`] distinct pairs are kept per window (the
//!    others are counted in the total only).
//!
//! Peers and names are written as [`Debug`] strings (quoted, escaped), since a client
//! chooses its `uname`: none can break a line or pass for the server.
//!
//! One tally serves the process (a process serves one node tree).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nf_ninep_server::lock;

/// How long refusals after a logged one are only counted (rule 2).
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// Pairs named in a summary line (rule 3).
const EXAMPLES: usize = 3;
/// Distinct pairs remembered per window (rule 5).
const PAIRS: usize = 256;

struct Tally {
    /// When the open window began; `None`: no window open.
    since: Option<Instant>,
    /// Refusals counted in the open window.
    count: u64,
    /// Of those, per "PEER as ASKED".
    pairs: BTreeMap<String, u64>,
    /// The thread that ends windows runs (rule 4).
    ticking: bool,
}

static TALLY: Mutex<Tally> = Mutex::new(Tally {
    since: None,
    count: 0,
    pairs: BTreeMap::new(),
    ticking: false,
});

/// Reports a refused attach by `peer` (already quoted where a client chose it) that
/// asked to attach as `asked`, on connection `conn`, for reason `why` (rules 1–2).
pub(crate) fn refused(peer: &str, asked: &str, conn: u64, why: &str) {
    let now = Instant::now();
    let mut t = lock(&TALLY);
    let open = t
        .since
        .is_some_and(|since| t.ticking || now.duration_since(since) < WINDOW);
    if !open {
        t.since = Some(now);
        t.count = 0;
        t.pairs.clear();
        drop(t);
        // Display: both are quoted and escaped already where a client chose them.
        tracing::warn!(%peer, %asked, conn, "attach refused: {why}");
        return;
    }
    t.count += 1;
    let pair = format!("{peer} as {asked}");
    if let Some(n) = t.pairs.get_mut(&pair) {
        *n += 1;
    } else if t.pairs.len() < PAIRS {
        t.pairs.insert(pair, 1);
    }
    if !t.ticking {
        let started = std::thread::Builder::new()
            .name("nf-refusals".into())
            .spawn(tick);
        // Without the thread, the window closes at the next refusal after it (rule 1).
        t.ticking = started.is_ok();
    }
}

/// Ends windows until one passes with nothing counted (rules 3–4).
fn tick() {
    loop {
        let since = lock(&TALLY).since.unwrap_or_else(Instant::now);
        std::thread::sleep((since + WINDOW).saturating_duration_since(Instant::now()));
        let mut t = lock(&TALLY);
        if t.count == 0 {
            t.since = None;
            t.ticking = false;
            return;
        }
        let line = summary(t.count, &t.pairs);
        t.since = Some(Instant::now());
        t.count = 0;
        t.pairs.clear();
        drop(t);
        tracing::warn!("{line}");
    }
}

/// The summary line of a window (rule 3).
fn summary(count: u64, pairs: &BTreeMap<String, u64>) -> String {
    let mut top: Vec<(&String, &u64)> = pairs.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let named: Vec<String> = top
        .iter()
        .take(EXAMPLES)
        .map(|(pair, n)| format!("{pair} ({n})"))
        .collect();
    let more = if pairs.len() > EXAMPLES {
        format!(" and {} more", pairs.len() - EXAMPLES)
    } else {
        String::new()
    };
    format!(
        "{count} attaches refused in the last {} s and not logged one by one, e.g. {}{more}",
        WINDOW.as_secs(),
        named.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_the_most_frequent_pairs_first() {
        let pairs = BTreeMap::from([
            ("uid 1001 as \"root\"".to_string(), 35),
            ("uid 1002 as \"bob\"".to_string(), 2),
            ("uid 1003 as \"root\"".to_string(), 1),
            ("uid 1004 as \"x\"".to_string(), 1),
        ]);
        let line = summary(39, &pairs);
        assert!(
            line.starts_with(
                "39 attaches refused in the last 10 s and not logged one by one, e.g. \
                 uid 1001 as \"root\" (35), uid 1002 as \"bob\" (2), uid 1003 as \"root\" (1) \
                 and 1 more"
            ),
            "{line}"
        );
    }
}
