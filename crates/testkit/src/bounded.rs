//! Running a command to completion with a deadline, so a hung program fails its test
//! instead of hanging the suite.

use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Runs `cmd` (stdin closed, stdout and stderr captured) and returns its output; kills
/// it and panics, showing what it printed, if it runs longer than `bound`.
pub fn output_within(cmd: &mut Command, bound: Duration) -> Output {
    let what = format!("{cmd:?}");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e} (scripts/setup.sh installs it)"));
    finish_within(child, bound, &what)
}

/// Waits for `child` (`what` names it in the panic) and returns its output; kills it
/// and panics, showing what it printed, if it runs longer than `bound`.
pub fn finish_within(mut child: Child, bound: Duration, what: &str) -> Output {
    let start = Instant::now();
    // Output beyond a pipe's buffer would block the child; the programs run this way
    // print a few lines each.
    while child.try_wait().expect("wait for the child").is_none() {
        if start.elapsed() > bound {
            let _ = child.kill();
            let out = child
                .wait_with_output()
                .expect("output of the killed child");
            panic!(
                "{what} still running after {bound:?}; stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output of the child")
}

/// Waits until process `pid` has exited, for at most `bound`; true if it did. The
/// process need not be a child of this one (a server that detached itself): a pidfd
/// becomes readable when it exits, so this wakes on the exit itself.
pub fn exited_within(pid: u32, bound: Duration) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::io::Errno;
    use rustix::process::{pidfd_open, Pid, PidfdFlags};

    let pid = Pid::from_raw(pid as i32).expect("a pid is not 0");
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Gone (and reaped) already.
        Err(Errno::SRCH) => return true,
        Err(e) => panic!("pidfd_open({pid:?}): {e}"),
    };
    let deadline = Instant::now() + bound;
    loop {
        let left = Timespec::try_from(deadline.saturating_duration_since(Instant::now()))
            .expect("a bounded wait fits a timespec");
        match poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&left)) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(Errno::INTR) => continue,
            Err(e) => panic!("poll on the pidfd of {pid:?}: {e}"),
        }
    }
}
