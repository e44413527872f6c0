//! Listening sockets handed over by a service manager (systemd's socket activation,
//! `sd_listen_fds(3)`), so the sockets exist — with the modes the unit gives them —
//! before the server starts, and clients never race its start-up.
//!
//! The protocol: the manager passes the sockets as descriptors 3, 4, … and sets
//! `LISTEN_PID` (the pid they are meant for: ours, or they are someone else's and left
//! alone) and `LISTEN_FDS` (how many). [`take`] checks both, removes the variables
//! (nothing the server starts should believe they are its own), marks the descriptors
//! close-on-exec and tells each socket's kind from the kernel, not from names: a unix
//! stream socket by its bound path, a tcp one by its address.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// The first descriptor passed (`SD_LISTEN_FDS_START`).
const FIRST: RawFd = 3;
/// More than this many passed sockets is taken for a broken environment.
const MOST: usize = 64;

/// One passed listening socket.
#[derive(Debug)]
pub enum Passed {
    /// A unix stream socket bound to this path.
    Unix(PathBuf, UnixListener),
    /// A tcp socket bound to this address.
    Tcp(SocketAddr, TcpListener),
}

/// Why the passed sockets cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// `LISTEN_FDS` is not a small number.
    #[error("LISTEN_FDS={0:?} is not a number of sockets (at most {MOST})")]
    Count(String),
    /// A passed descriptor is not a listening stream socket of a kind served here.
    #[error("descriptor {fd} passed by the service manager is {what}: give only unix or tcp stream sockets (ListenStream=) in the .socket unit")]
    Kind {
        /// The descriptor.
        fd: RawFd,
        /// What it is instead.
        what: String,
    },
}

/// The sockets passed to this process, in order; none when it was not socket
/// activated (no `LISTEN_PID`, or another process's).
pub fn take() -> Result<Vec<Passed>, ActivationError> {
    let ours = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id());
    let count = std::env::var("LISTEN_FDS").ok();
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let Some(count) = count.filter(|_| ours) else {
        return Ok(Vec::new());
    };
    let n: usize = count
        .parse()
        .ok()
        .filter(|&n| n <= MOST)
        .ok_or_else(|| ActivationError::Count(count.clone()))?;
    (FIRST..FIRST + n as RawFd).map(classify).collect()
}

/// What descriptor `fd` is, taken over.
fn classify(fd: RawFd) -> Result<Passed, ActivationError> {
    let kind = |what: &str| ActivationError::Kind {
        fd,
        what: what.to_string(),
    };
    // SAFETY: the service manager passed `fd` to this process for it to own (the
    // protocol in the module docs), and `take` hands each number out once.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let _ = rustix::io::fcntl_setfd(&owned, rustix::io::FdFlags::CLOEXEC);
    let listening = rustix::net::sockopt::socket_acceptconn(&owned)
        .map_err(|e| kind(&format!("not a socket ({e})")))?;
    if !listening {
        return Err(kind("a socket that is not listening"));
    }
    if rustix::net::sockopt::socket_type(&owned).ok() != Some(rustix::net::SocketType::STREAM) {
        return Err(kind("not a stream socket"));
    }
    let domain = rustix::net::sockopt::socket_domain(&owned).map_err(|e| kind(&e.to_string()))?;
    if domain == rustix::net::AddressFamily::UNIX {
        let unix = UnixListener::from(owned);
        let path = unix
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(Path::to_path_buf))
            .ok_or_else(|| kind("an unnamed or abstract unix socket"))?;
        return Ok(Passed::Unix(path, unix));
    }
    if domain != rustix::net::AddressFamily::INET && domain != rustix::net::AddressFamily::INET6 {
        return Err(kind("neither a unix nor an inet socket"));
    }
    let tcp = TcpListener::from(owned);
    let addr = tcp.local_addr().map_err(|e| kind(&e.to_string()))?;
    Ok(Passed::Tcp(addr, tcp))
}

impl std::fmt::Display for Passed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Passed::Unix(path, _) => write!(f, "unix socket {}", path.display()),
            Passed::Tcp(addr, _) => write!(f, "tcp socket {addr}"),
        }
    }
}

/// Takes the passed unix socket bound to `path` out of `passed`, if there is one.
pub fn take_unix(passed: &mut Vec<Passed>, path: &Path) -> Option<UnixListener> {
    let at = passed
        .iter()
        .position(|p| matches!(p, Passed::Unix(bound, _) if bound == path))?;
    match passed.remove(at) {
        Passed::Unix(_, l) => Some(l),
        Passed::Tcp(..) => None,
    }
}
