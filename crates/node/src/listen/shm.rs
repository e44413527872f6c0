//! The accept loop of 9P over shared memory ([`nf_link::shm`]): a unix socket on which
//! each connection is offered a channel, and the channel served.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use nf_link::{shm, sockdir};
use nf_ninep_server::{Filesystem, Server};
use nf_sys::accept::{thread_per_connection, Acceptor};

/// Accepts shm set-ups on a unix socket and serves each channel (steps in [`nf_link::shm`]). Dropping it (or [`ShmListener::stop`]) stops accepting and removes the socket.
#[derive(Debug)]
pub struct ShmListener {
    path: PathBuf,
    acceptor: Option<Acceptor>,
    /// The socket file is ours to remove (not a service manager's).
    owns_file: bool,
}

impl ShmListener {
    /// Listens at `path` (a stale socket file is replaced) and serves `server` over
    /// channels of `capacity` bytes per direction.
    pub fn start<F: Filesystem>(
        server: Server<F>,
        path: &Path,
        capacity: usize,
    ) -> io::Result<ShmListener> {
        // Its directory and mode as the unix socket's (rules 1–3 of [`nf_link::sockdir`]).
        sockdir::socket_dir(path)
            .map_err(|(dir, e)| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        let stale = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
        if stale && UnixStream::connect(path).is_err() {
            std::fs::remove_file(path)?;
        }
        let socket = UnixListener::bind(path)?;
        sockdir::open_to_every_user(path)?;
        let mut l = Self::serve(server, socket, path, capacity)?;
        l.owns_file = true;
        Ok(l)
    }

    /// Serves `server` on `socket`, bound at `path` by a service manager (socket
    /// activation); the socket file is the manager's and stays when this stops.
    pub fn serve<F: Filesystem>(
        server: Server<F>,
        socket: UnixListener,
        path: &Path,
        capacity: usize,
    ) -> io::Result<ShmListener> {
        let serve = move |sock: UnixStream| match shm::offer(sock, capacity) {
            Ok(transport) => {
                if let Err(e) = server.serve(transport) {
                    tracing::warn!(error = %e, "shm connection refused");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot set up a shared-memory channel"),
        };
        let acceptor = Acceptor::start(
            "9p-shm-accept",
            socket,
            thread_per_connection("9p-shm-conn", serve),
        )?;
        tracing::info!(path = %path.display(), "9P server listening (shared-memory channels)");
        Ok(ShmListener {
            path: path.to_path_buf(),
            acceptor: Some(acceptor),
            owns_file: false,
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, waits for the accept thread, removes the socket file.
    pub fn stop(self) {}
}

impl Drop for ShmListener {
    fn drop(&mut self) {
        if let Some(a) = self.acceptor.take() {
            a.stop();
            if self.owns_file {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}
