//! This process's side of a running job: output lines printed whole, stdin forwarded,
//! Ctrl-C turned into `kill` on the sessions.

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;

use nf_ninep::LOpenFlags;
use nf_xcpu_client::session::RemoteSession;

use crate::ExecError;

/// Prints `f`'s lines with `prefix`, each line whole.
pub(crate) fn copy_lines(f: nf_ninep_client::File, prefix: &str, to_err: bool, lock: &Mutex<()>) {
    let mut reader = std::io::BufReader::new(f);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let _guard = lock.lock();
                let mut text = prefix.as_bytes().to_vec();
                text.extend_from_slice(&line);
                if !line.ends_with(b"\n") {
                    text.push(b'\n');
                }
                let _ = if to_err {
                    std::io::stderr().lock().write_all(&text)
                } else {
                    std::io::stdout().lock().write_all(&text)
                };
            }
        }
    }
}

/// Copies this process's stdin to every file of `to`, then closes them.
pub(crate) fn forward_stdin(mut to: Vec<nf_ninep_client::File>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut stdin = std::io::stdin().lock();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        to.retain_mut(|f| f.write_all(&buf[..n]).is_ok());
        if to.is_empty() {
            break;
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM become `kill INT` / `kill TERM` on every copy; a
/// second one `kill KILL`. Stops watching when dropped.
pub(crate) fn watch_interrupts(sessions: &[&RemoteSession]) -> Result<StopWatching, ExecError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).map_err(ExecError::Signals)?;
    let handle = signals.handle();
    let ctls: Vec<_> = sessions
        .iter()
        .map(|s| s.open_file("ctl", LOpenFlags::WRONLY))
        .collect::<Result<_, _>>()
        .map_err(ExecError::remote("opening a session's ctl"))?;
    let seen = AtomicUsize::new(0);
    thread::spawn(move || {
        for sig in signals.forever() {
            let word = match (seen.fetch_add(1, Ordering::Relaxed), sig) {
                (0, SIGINT) => "kill INT",
                (0, _) => "kill TERM",
                _ => "kill KILL",
            };
            for ctl in &ctls {
                let _ = ctl.write_all_at(word.as_bytes(), 0);
            }
        }
    });
    Ok(StopWatching(handle))
}

/// Watching for interrupts, until dropped.
pub(crate) struct StopWatching(signal_hook::iterator::Handle);

impl Drop for StopWatching {
    fn drop(&mut self) {
        self.0.close();
    }
}
