//! [`Acceptor`]: an accept thread for the node's own listeners (TLS, shm), handing each
//! connection to a thread of its own, so a slow set-up never blocks other clients.
//!
//! Stopping sets a flag and shuts the listening socket down for reading, which makes
//! the blocked `accept` fail at once; the thread sees the flag and ends. Nothing
//! connects to the listener to wake it (its address may belong to another network
//! namespace).

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A listening socket.
pub trait Listening: AsFd + Send + Sync + 'static {
    /// What an accept gives.
    type Stream: Send + 'static;
    /// Waits for the next connection.
    fn accept_one(&self) -> io::Result<Self::Stream>;
}

impl Listening for TcpListener {
    type Stream = TcpStream;
    fn accept_one(&self) -> io::Result<TcpStream> {
        self.accept().map(|(s, _)| s)
    }
}

impl Listening for UnixListener {
    type Stream = UnixStream;
    fn accept_one(&self) -> io::Result<UnixStream> {
        self.accept().map(|(s, _)| s)
    }
}

/// A running accept thread; dropping it (or [`Acceptor::stop`]) stops it.
pub struct Acceptor {
    socket: Arc<dyn AsFd + Send + Sync>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Acceptor {
    /// Accepts on `socket` and runs `handle` for each connection on a new thread named
    /// `name`.
    pub fn start<L: Listening>(
        name: &str,
        socket: L,
        handle: impl Fn(L::Stream) + Send + Sync + 'static,
    ) -> io::Result<Acceptor> {
        let socket = Arc::new(socket);
        let stop = Arc::new(AtomicBool::new(false));
        let (listener, flag) = (Arc::clone(&socket), Arc::clone(&stop));
        let handle = Arc::new(handle);
        let conn_name = format!("{name}-conn");
        let thread = thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || loop {
                let accepted = listener.accept_one();
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                let stream = match accepted {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed; retrying");
                        thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                let handle = Arc::clone(&handle);
                if let Err(e) = thread::Builder::new()
                    .name(conn_name.clone())
                    .spawn(move || handle(stream))
                {
                    tracing::error!(error = %e, "cannot start a thread for a connection");
                }
            })?;
        Ok(Acceptor {
            socket,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops accepting and waits for the accept thread.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        if rustix::net::shutdown(self.socket.as_fd(), rustix::net::Shutdown::Read).is_ok() {
            let _ = thread.join();
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop_now();
    }
}
