//! Where a 9P server listens: a unix socket and tcp addresses, plain on loopback or
//! TLS with client certificates. Shared by `nf serve` ([`crate::Daemon`]) and the
//! gateway, so both refuse the same unsafe plans the same way.
//!
//! Local sockets are open to every user; the attach check decides who a peer is and
//! what it may do ([`crate::access`]), never the file modes:
//!
//! 1. A socket directory the server makes (`/run/ninefold` by default) is 0755 —
//!    every user may reach the sockets, only the owner may add or remove entries.
//! 2. A socket directory that exists must be a directory of the server's own user or
//!    of root, writable by nobody else (no group or other write bit): whoever may
//!    write to it could replace the server's socket with their own and be talked to
//!    in its place. One that is not is refused, saying why.
//! 3. The unix socket and the shared-memory channel socket are 0666 (connecting to a
//!    unix socket takes write permission on it), set right after binding: until then
//!    nobody else could connect, so no one connects early.

use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nf_ninep_server::{Filesystem, ListenAddr, Listener, Server};
use nf_sys::activation::{take_unix, Passed};

use crate::serve::ServeError;
use crate::tls::{server_config, TlsFiles, TlsListener};

/// Refuses tcp on an address that is not loopback without TLS: it is reachable from
/// other hosts, and without certificates nobody there can be told apart.
pub fn check_plan(tcp: &[SocketAddr], tls: Option<&TlsFiles>) -> Result<(), ServeError> {
    if tls.is_none() {
        if let Some(addr) = tcp.iter().find(|a| !a.ip().is_loopback()) {
            return Err(ServeError::RemoteWithoutAuth { addr: *addr });
        }
    }
    Ok(())
}

/// A server's unix and tcp listeners.
#[derive(Debug, Default)]
pub struct Listeners {
    plain: Vec<Listener>,
    tls: Vec<TlsListener>,
}

impl Listeners {
    /// Listens on `unix` (its directory made or checked, rules 1–3) and on every `tcp`
    /// address: TLS when `tls` is given, else plain (loopback only, [`check_plan`]).
    pub fn start<F: Filesystem>(
        server: &Server<F>,
        unix: Option<&Path>,
        tcp: &[SocketAddr],
        tls: Option<&TlsFiles>,
    ) -> Result<Listeners, ServeError> {
        Self::start_with(server, unix, tcp, tls, &mut Vec::new())
    }

    /// [`Listeners::start`], taking the unix socket from `passed` when a service manager
    /// bound it already (socket activation: its directory and mode are the unit's).
    pub fn start_with<F: Filesystem>(
        server: &Server<F>,
        unix: Option<&Path>,
        tcp: &[SocketAddr],
        tls: Option<&TlsFiles>,
        passed: &mut Vec<Passed>,
    ) -> Result<Listeners, ServeError> {
        check_plan(tcp, tls)?;
        let tls = tls.map(server_config).transpose()?;
        let mut out = Listeners::default();
        if let Some((path, l)) = unix.and_then(|p| Some((p, take_unix(passed, p)?))) {
            tracing::info!(path = %path.display(), "unix socket passed by the service manager");
            out.plain.push(server.listen_unix_passed(l, path)?);
        } else if let Some(path) = unix {
            socket_dir(path).map_err(|(dir, source)| ServeError::SocketDir { dir, source })?;
            out.plain.push(server.listen_unix(path)?);
            open_to_every_user(path).map_err(|source| ServeError::SocketDir {
                dir: path.to_path_buf(),
                source,
            })?;
        }
        for addr in tcp {
            match &tls {
                Some(tls) => out.tls.push(
                    TlsListener::start(server.clone(), *addr, Arc::clone(tls)).map_err(
                        |source| ServeError::BindTls {
                            addr: *addr,
                            source,
                        },
                    )?,
                ),
                None => {
                    tracing::info!(%addr, "plain tcp on loopback: each peer is known by the uid that owns its socket (asked of the kernel), as on the unix socket");
                    out.plain.push(server.listen_tcp(*addr)?);
                }
            }
        }
        Ok(out)
    }

    /// Where they listen, as the `nf` commands take addresses (`unix:PATH`,
    /// `tcp:IP:PORT`, `tls:IP:PORT`; the real port when 0 was asked for).
    pub fn addrs(&self) -> impl Iterator<Item = String> + '_ {
        let plain = self.plain.iter().map(|l| l.addr().to_string());
        plain.chain(self.tls.iter().map(|l| format!("tls:{}", l.addr())))
    }

    /// The first tcp or TLS address.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        let plain = self.plain.iter().find_map(|l| match l.addr() {
            ListenAddr::Tcp(a) => Some(*a),
            ListenAddr::Unix(_) => None,
        });
        plain.or_else(|| self.tls.first().map(TlsListener::addr))
    }

    /// The first TLS listener's port.
    pub fn tls_port(&self) -> Option<u16> {
        self.tls.first().map(|l| l.addr().port())
    }

    /// Stops accepting (the unix socket file is removed).
    pub fn stop(self) {
        for l in self.plain {
            l.stop();
        }
        for l in self.tls {
            l.stop();
        }
    }
}

/// Mode of a socket directory the server makes (rule 1).
const SOCKET_DIR_MODE: u32 = 0o755;
/// Mode of the sockets (rule 3).
const SOCKET_MODE: u32 = 0o666;

/// Makes the directory of the socket `path` (rule 1) or checks the one there (rule
/// 2); on failure, the directory and why.
pub(crate) fn socket_dir(path: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    make_or_check_dir(dir).map_err(|e| (dir.to_path_buf(), e))
}

/// Lets every local user connect to the socket at `path` (rule 3).
pub(crate) fn open_to_every_user(path: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
}

fn make_or_check_dir(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(SOCKET_DIR_MODE)
            .create(dir)?;
        // The umask may have narrowed it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(SOCKET_DIR_MODE))?;
    }
    let meta = std::fs::metadata(dir)?;
    let me = rustix::process::geteuid().as_raw();
    check_dir(&meta, me).map_err(std::io::Error::other)?;
    if meta.mode() & 0o005 != 0o005 {
        tracing::warn!(dir = %dir.display(), mode = format_args!("{:o}", meta.mode() & 0o7777), "other users cannot reach the sockets in this directory; make it 0755 to let them attach (as themselves)");
    }
    Ok(())
}

/// Rule 2 for a directory with metadata `meta`, for a server running as `me`.
fn check_dir(meta: &std::fs::Metadata, me: u32) -> Result<(), String> {
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() {
        return Err("refusing it: not a directory".into());
    }
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "refusing it: it belongs to uid {}, not to this server's user (uid {me}) or \
             root, so its owner could replace the server's socket with their own",
            meta.uid()
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "refusing it: its mode {mode:o} lets other users write to it, so they could \
             replace the server's socket with their own; use a directory only its owner \
             may write to (0755)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_directories_others_may_write_to_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let me = rustix::process::geteuid().as_raw();
        let check = |mode: u32, owner: u32| {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
            check_dir(&std::fs::metadata(d).unwrap(), owner)
        };
        assert!(check(0o755, me).is_ok());
        assert!(check(0o700, me).is_ok());
        for mode in [0o777, 0o1777, 0o775, 0o757] {
            let e = check(mode, me).expect_err("others may write");
            assert!(e.contains(&format!("{mode:o}")), "{e}");
        }
        if me == 0 {
            assert!(
                check(0o755, 1234).is_ok(),
                "root's directory, another server user"
            );
        } else {
            let e = check(0o755, me + 1).expect_err("another user's directory");
            assert!(e.contains(&format!("uid {me}")), "{e}");
        }
    }

    #[test]
    fn a_missing_socket_directory_is_made_0755_and_the_socket_0666() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("run/ninefold/nf.sock");
        socket_dir(&sock).unwrap();
        let mode = std::fs::metadata(sock.parent().unwrap()).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o755);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        open_to_every_user(&sock).unwrap();
        assert_eq!(std::fs::metadata(&sock).unwrap().mode() & 0o777, 0o666);
        drop(listener);
    }
}
