//! Serving the node's own listeners (TLS, shm): each connection on a thread of its own,
//! so a slow set-up (a TLS handshake, a channel offer) never blocks other clients. The
//! accept thread itself is ninep's [`nf_ninep_server::Acceptor`].

use std::sync::Arc;
use std::thread;

/// An `on_accept` for [`nf_ninep_server::Acceptor::start`] that runs `handle` for each
/// connection on a new thread named `name`.
pub fn thread_per_connection<S: Send + 'static>(
    name: &str,
    handle: impl Fn(S) + Send + Sync + 'static,
) -> impl FnMut(S) + Send + 'static {
    let handle = Arc::new(handle);
    let name = name.to_string();
    move |stream| {
        let handle = Arc::clone(&handle);
        if let Err(e) = thread::Builder::new()
            .name(name.clone())
            .spawn(move || handle(stream))
        {
            tracing::error!(error = %e, "cannot start a thread for a connection");
        }
    }
}
