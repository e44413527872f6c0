//! The README's examples run as printed. Blocks are marked by an HTML comment on the
//! line before their fence:
//!
//! - `<!-- readme-test: setup -->`: run before every command of the blocks after it
//!   (it puts `nf` on PATH);
//! - `<!-- readme-test: file NAME -->`: written to NAME in the run's directory;
//! - `<!-- readme-test: run[; needs CMD][; repeat N][; every line TEXT] -->`: each
//!   command is run (after the setup) and must succeed; `needs` skips the block, saying
//!   so, where the shell command CMD fails (a Python package not installed);
//!   `every line` requires each line it prints to be TEXT.
//!
//! Commands run with bash in a temporary directory holding `target/release/PROG` for
//! the binaries built beside this test's `nf` (a debug build stands in for the
//! release one), each bounded. A command whose program is not installed (`mpirun`) or
//! not built here (`nf-core-check` when only nf-cli was built) is skipped, saying so.
//! Every `sh` block that calls a bare `nf` must come after a setup block.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Each command takes seconds; this only keeps a broken one from hanging the suite.
const BOUND: Duration = Duration::from_secs(180);

const NF: &str = env!("CARGO_BIN_EXE_nf");

#[derive(Debug, Default)]
struct Marker {
    kind: String,
    file: Option<String>,
    needs: Option<String>,
    repeat: usize,
    every_line: Option<String>,
}

#[derive(Debug)]
struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    lang: String,
    marker: Option<Marker>,
    body: String,
}

fn parse_marker(comment: &str) -> Option<Marker> {
    let inner = comment
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim()
        .strip_prefix("readme-test:")?;
    let mut m = Marker {
        repeat: 1,
        ..Marker::default()
    };
    for (i, part) in inner.split(';').map(str::trim).enumerate() {
        if i == 0 {
            let mut words = part.split_whitespace();
            m.kind = words.next()?.to_owned();
            if m.kind == "file" {
                m.file = words.next().map(str::to_owned);
            }
        } else if let Some(cmd) = part.strip_prefix("needs ") {
            m.needs = Some(cmd.to_owned());
        } else if let Some(n) = part.strip_prefix("repeat ") {
            m.repeat = n.parse().expect("repeat N");
        } else if let Some(t) = part.strip_prefix("every line ") {
            m.every_line = Some(t.to_owned());
        } else {
            panic!("unknown readme-test option {part:?}");
        }
    }
    Some(m)
}

/// Every fenced block of `text`, with the marker on the line before it, if any.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let marker = i
            .checked_sub(1)
            .and_then(|p| parse_marker(lines[p]))
            .or_else(|| {
                // A blank line may sit between the marker and the fence.
                i.checked_sub(2)
                    .filter(|&p| lines[p + 1].trim().is_empty())
                    .and_then(|p| parse_marker(lines[p]))
            });
        let start = i;
        // A block in a list item is indented as its fence is.
        let indent = lines[i].len() - lines[i].trim_start().len();
        let mut body = String::new();
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            let line = lines[i];
            let cut = indent.min(line.len() - line.trim_start().len());
            body.push_str(&line[cut..]);
            body.push('\n');
            i += 1;
        }
        out.push(Block {
            line: start + 1,
            lang: lang.trim().to_owned(),
            marker,
            body,
        });
        i += 1;
    }
    out
}

/// The commands of a shell block: continuation lines joined, blank and comment-only
/// lines dropped.
fn commands(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in body.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            cur.push_str(head);
            continue;
        }
        cur.push_str(line);
        let cmd = std::mem::take(&mut cur);
        if !cmd.trim().is_empty() && !cmd.trim_start().starts_with('#') {
            out.push(cmd);
        }
    }
    out
}

/// The program a command starts: its first word after `NAME=value` assignments.
fn program(cmd: &str) -> &str {
    cmd.split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with('-'))
        .unwrap_or("")
}

fn readme() -> String {
    let path = std::env::var_os("NF_README").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")),
        PathBuf::from,
    );
    std::fs::read_to_string(path).expect("read README.md")
}

/// A directory standing in for a checkout: `target/release/` holds `nf` and every
/// other binary built beside it.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    let built = Path::new(NF).parent().unwrap();
    for entry in std::fs::read_dir(built).unwrap().flatten() {
        let name = entry.file_name();
        let is_exe = entry.metadata().is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        });
        if is_exe && name.to_str().is_some_and(|n| n.starts_with("nf")) {
            std::os::unix::fs::symlink(entry.path(), release.join(&name)).unwrap();
        }
    }
    dir
}

/// PATH for the commands: this one, after the Python environment scripts/test-python.sh
/// installs the package into, when there is one.
fn path() -> String {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/pyenv/bin");
    let base = std::env::var("PATH").unwrap_or_default();
    if Path::new(venv).is_dir() {
        format!("{venv}:{base}")
    } else {
        base
    }
}

fn bash(dir: &Path, script: &str) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.args(["-c", script])
        .current_dir(dir)
        .env("PATH", path())
        .env_remove("NF_ADDR")
        // As a reader's shell runs them: ranks share the launcher's stdout, and an
        // unbuffered Python writes one print in several pieces, which other ranks' lines
        // can come between ("114688.0114688.0  0.00.0"); buffered, a line is one write.
        .env_remove("PYTHONUNBUFFERED");
    nf_testkit::output_within(&mut cmd, BOUND)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn marked_readme_blocks_run_as_printed() {
    let all = blocks(&readme());
    let dir = checkout();
    let mut setup = String::from("set -eo pipefail\n");
    let mut ran = 0;
    let mut failures = Vec::new();
    for b in &all {
        let Some(m) = &b.marker else { continue };
        match m.kind.as_str() {
            "file" => {
                let name = m.file.as_deref().expect("file NAME");
                std::fs::write(dir.path().join(name), &b.body).unwrap();
                continue;
            }
            "setup" | "run" => {}
            k => panic!("README line {}: unknown readme-test kind {k:?}", b.line),
        }
        if let Some(needs) = &m.needs {
            if !bash(dir.path(), needs).status.success() {
                eprintln!("README line {}: skipped, `{needs}` fails here", b.line);
                continue;
            }
        }
        for cmd in commands(&b.body) {
            let prog = program(&cmd);
            let missing = match prog.strip_prefix("target/release/") {
                Some(_) => !dir.path().join(prog).exists(),
                None => !bash(dir.path(), &format!("{setup}command -v {prog}"))
                    .status
                    .success(),
            };
            // A binary of another package referenced as an argument must be built too.
            let unbuilt = cmd
                .split_whitespace()
                .filter(|w| w.starts_with("target/release/"))
                .find(|w| !dir.path().join(w).exists());
            if missing || unbuilt.is_some() {
                let what = unbuilt.unwrap_or(prog);
                eprintln!("README line {}: skipped `{cmd}`: no {what} here", b.line);
                continue;
            }
            for _ in 0..m.repeat {
                eprintln!("README line {}: running `{cmd}`", b.line);
                let out = bash(dir.path(), &format!("{setup}{cmd}"));
                ran += 1;
                let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
                if !out.status.success() {
                    failures.push(format!(
                        "README line {}: `{cmd}` failed ({}):\n{stdout}{stderr}",
                        b.line, out.status
                    ));
                    break;
                }
                if m.kind == "setup" {
                    // Later commands run in the state the setup leaves (its output
                    // shown once, here).
                    setup.push_str(&format!("{{ {cmd}\n}} >/dev/null\n"));
                }
                if let Some(want) = &m.every_line {
                    let bad: Vec<&str> = stdout.lines().filter(|l| l.trim() != want).collect();
                    if stdout.trim().is_empty() || !bad.is_empty() {
                        failures.push(format!(
                            "README line {}: `{cmd}` printed {bad:?}, want every line {want:?}:\n{stdout}",
                            b.line
                        ));
                        break;
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran > 0, "no README command ran");
}

#[test]
fn every_block_calling_a_bare_nf_comes_after_the_setup_that_puts_it_on_path() {
    let all = blocks(&readme());
    let setup = all
        .iter()
        .find(|b| b.marker.as_ref().is_some_and(|m| m.kind == "setup"))
        .expect("a readme-test: setup block");
    // The setup puts this checkout's nf first on PATH.
    let dir = checkout();
    let script = format!(
        "set -e\n{}\ncommand -v nf",
        commands(&setup.body).join("\n")
    );
    let out = bash(dir.path(), &script);
    let found = text(&out.stdout);
    let want = dir.path().join("target/release/nf");
    assert_eq!(
        Path::new(found.lines().last().unwrap_or("").trim()),
        want,
        "after the setup block, nf is not this checkout's:\n{found}{}",
        text(&out.stderr)
    );
    // The setup block itself calls nf after its export (the run test runs it).
    for b in all
        .iter()
        .filter(|b| b.lang == "sh" && b.line != setup.line)
    {
        let bare = commands(&b.body)
            .into_iter()
            .find(|c| c.split(';').any(|part| program(part) == "nf"));
        if let Some(cmd) = bare {
            assert!(
                b.line > setup.line,
                "README line {}: `{cmd}` calls a bare nf before the setup (line {}) puts it on PATH",
                b.line,
                setup.line
            );
        }
    }
}

#[test]
fn the_parser_finds_markers_and_commands() {
    let text = "x\n<!-- readme-test: run; repeat 2; every line 1 -->\n```sh\na \\\n  b # c\n# only\n\nX=1 nf ls\n```\n";
    let b = blocks(text);
    assert_eq!(b.len(), 1);
    let m = b[0].marker.as_ref().unwrap();
    assert_eq!(
        (m.kind.as_str(), m.repeat, m.every_line.as_deref()),
        ("run", 2, Some("1"))
    );
    let c = commands(&b[0].body);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(program(&c[1]), "nf");
}
