//! [`Acceptor`]: the accept thread behind every listener (tcp, unix, and the node's TLS
//! and shared-memory listeners), and how it is stopped.
//!
//! Stopping, in order:
//!
//! 1. Set the stop flag.
//! 2. Shut the listening socket down for reading: a blocked `accept` fails at once
//!    (Linux: `EINVAL`), and later connection attempts are refused.
//! 3. The thread sees the flag after its `accept` returns, and ends; `stop` joins it.
//!
//! Nothing connects to the listener to wake it: its address may belong to another
//! network namespace than the thread that stops it, where a connection would fail — or
//! reach a different listener on the same address.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A listening socket an [`Acceptor`] waits on.
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

/// A running accept thread; dropping it (or [`Acceptor::stop`]) stops it (steps in the
/// module docs).
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
    /// Accepts on `socket` on a thread named `name`, calling `on_accept` there for each
    /// connection (it must hand long work to another thread). A failed accept is
    /// logged and retried after 50 ms.
    pub fn start<L: Listening>(
        name: &str,
        socket: L,
        mut on_accept: impl FnMut(L::Stream) + Send + 'static,
    ) -> io::Result<Acceptor> {
        let socket = Arc::new(socket);
        let stop = Arc::new(AtomicBool::new(false));
        let (listener, flag) = (Arc::clone(&socket), Arc::clone(&stop));
        let thread = thread::Builder::new()
            .name(name.to_string())
            .spawn(move || loop {
                let accepted = listener.accept_one();
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                match accepted {
                    Ok(stream) => on_accept(stream),
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed; retrying");
                        thread::sleep(Duration::from_millis(50));
                    }
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
        match rustix::net::shutdown(self.socket.as_fd(), rustix::net::Shutdown::Read) {
            Ok(()) => {
                let _ = thread.join();
            }
            // Not joined: the thread may stay blocked, but it will not serve again.
            Err(e) => tracing::error!(error = %e, "cannot shut a listening socket down"),
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop_now();
    }
}
