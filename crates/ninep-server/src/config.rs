//! Every server setting in one place: limits and their defaults.
//!
//! | setting | default | when hit |
//! |---|---|---|
//! | `max_msize` | 1 MiB | `Rversion` offers at most this; larger frames close the connection |
//! | `max_fids` (per connection) | 16384 | the request that would create a fid gets `Rlerror(EMFILE)` |
//! | `max_in_flight` (per connection) | 256 | a request beyond it gets `Rlerror(EAGAIN)`; `Tflush` is never refused |
//! | `max_clients` (per server) | 1024 | an idle connection of the user holding the most gives its slot up; if none may, the new connection's first request gets `Rlerror(EAGAIN)`, then it is closed (`slots`) |
//! | `max_clients_per_user` | 128 | the same, among the user's own connections; a user is the kernel's uid of a local peer or the account a TLS name maps to (one user over every transport); connections that identify nobody count as one user |
//! | reserve: the last `max_clients / 8` slots | 128 | only for users holding fewer than 4 connections (`slots`) |
//! | `evict_idle_after` | 1 s | how long a connection holding fids must have been silent, with nothing in flight, before it may give its slot up (one holding no fid may at once) |
//! | `max_conn_memory` (per connection) | 32 MiB | a request that would go beyond it gets `Rlerror(ENOMEM)` (`budget`) |
//! | `max_user_memory` (per user; the server 16×) | 256 MiB | the same, for all of one user's connections; 16× for the whole server |
//! | `max_conn_fds` (per connection) | a 32nd of the descriptor limit | an open that would keep one more descriptor gets `Rlerror(EMFILE)` (`budget`, `nofile`) |
//! | `max_user_fds` (per user; the server three quarters of the limit) | an 8th of the descriptor limit | the same, for all of one user's connections |
//! | `handshake_timeout` | 10 s | a connection that has started to talk but not attached this long after it was accepted is closed |
//! | `frame_timeout` | 30 s | a connection whose frame has started to arrive but stays incomplete this long is closed |
//! | `idle_timeout` | 60 s | a connection that attached, then let go of every fid and sends nothing this long is closed |
//! | `max_workers` (per server) | 1024 | requests wait in their user's queue for a free worker (`pool`) |
//! | workers per user: `max_workers / 4` | 256 | the user's further requests wait in the user's own queue; other users' run |
//! | reserve: the last `max_workers / 8` workers | 128 | only for users running fewer than 4 requests (`pool`) |
//! | `refuse_timeout` | 2 s | how long a refused connection may take to send its first frame |
//! | `worker_idle` | 10 s | an idle worker thread exits after this |
//!
//! Why 1024 / 128: a connection costs a thread and buffers that `max_conn_memory`
//! bounds, so a node can afford a thousand; 128 lets one user's job put a connection
//! per rank on the largest nodes (and scripts run many `nf` commands at once), and is
//! an eighth of the total: seven users must each hold that many before the reserve is
//! touched, so one or two users can never fill the server. A connection that holds
//! fids is never timed out (a kernel mount stays idle for hours); it gives its slot
//! up only when the server or its user is full, and only after `evict_idle_after` of
//! silence.
//!
//! Why a quarter of the workers: a request that blocks in a tree (a pipe read, a
//! `/log` follow, `/xcpu/N/wait`) holds a worker as long as it waits, so without
//! shares one user's waiting reads could hold them all; with them, one user holds at
//! most a quarter, and users running many stop short of the last eighth, so a user
//! running few always gets a worker. The descriptor limit is the
//! process's `RLIMIT_NOFILE`, raised to its hard limit when the server starts
//! (`nofile`): a user may keep an eighth of it open, so one user's open files never
//! stop another's opens, nor the server's accepts.
//!
//! Each limit that is hit is also logged (`tracing` warn) with the setting's name, so
//! an operator knows which knob to turn; what a client can repeat at will (refusals,
//! evictions, bad frames, requests past a limit, deadlines) is counted and logged at
//! most once per 10 s per kind (`tally`).

use std::time::Duration;

use nf_ninep::version::DEFAULT_MAX_MSIZE;

/// Limits and tunables of a [`crate::Server`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Largest msize `Rversion` will offer (the client may ask for less).
    pub max_msize: u32,
    /// Most fids one connection may hold at once.
    pub max_fids: usize,
    /// Most requests one connection may have in flight (not counting `Tflush`).
    pub max_in_flight: usize,
    /// Most connections served at once.
    pub max_clients: usize,
    /// Most connections served at once for one user (see the module docs).
    pub max_clients_per_user: usize,
    /// How long a connection holding fids must have been silent, with no request in
    /// flight, before it may give its slot up to a new connection.
    pub evict_idle_after: Duration,
    /// Most bytes of buffers and requests one connection may hold.
    pub max_conn_memory: usize,
    /// Most bytes of buffers and requests all of one user's connections may hold; the
    /// server as a whole, 16× this.
    pub max_user_memory: usize,
    /// Most descriptors trees may keep open for one connection's fids; `None`: a
    /// quarter of the user's (`nofile`).
    pub max_conn_fds: Option<usize>,
    /// Most descriptors trees may keep open for all of one user's fids; `None`: an
    /// eighth of the descriptor limit (`nofile`).
    pub max_user_fds: Option<usize>,
    /// How long a new connection may take to attach.
    pub handshake_timeout: Duration,
    /// How long a frame may take to arrive once it has started.
    pub frame_timeout: Duration,
    /// How long a connection that holds no fid may stay silent.
    pub idle_timeout: Duration,
    /// Most worker threads running tree methods, over all connections.
    pub max_workers: usize,
    /// How long a connection refused for `max_clients` may take to send a frame that
    /// can be answered with the refusal.
    pub refuse_timeout: Duration,
    /// How long an idle worker thread waits for work before it exits.
    pub worker_idle: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_msize: DEFAULT_MAX_MSIZE,
            max_fids: 16384,
            max_in_flight: 256,
            max_clients: 1024,
            max_clients_per_user: 128,
            evict_idle_after: Duration::from_secs(1),
            max_conn_memory: 32 << 20,
            max_user_memory: 256 << 20,
            max_conn_fds: None,
            max_user_fds: None,
            handshake_timeout: Duration::from_secs(10),
            frame_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_workers: 1024,
            refuse_timeout: Duration::from_secs(2),
            worker_idle: Duration::from_secs(10),
        }
    }
}

impl ServerConfig {
    /// This config with `max_msize` set.
    pub fn max_msize(mut self, bytes: u32) -> Self {
        self.max_msize = bytes;
        self
    }

    /// This config with `max_fids` set.
    pub fn max_fids(mut self, n: usize) -> Self {
        self.max_fids = n;
        self
    }

    /// This config with `max_in_flight` set.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n;
        self
    }

    /// This config with `max_clients` set.
    pub fn max_clients(mut self, n: usize) -> Self {
        self.max_clients = n;
        self
    }

    /// This config with `max_clients_per_user` set.
    pub fn max_clients_per_user(mut self, n: usize) -> Self {
        self.max_clients_per_user = n;
        self
    }

    /// This config with `evict_idle_after` set.
    pub fn evict_idle_after(mut self, silence: Duration) -> Self {
        self.evict_idle_after = silence;
        self
    }

    /// This config with the per-connection and per-user memory budgets set.
    pub fn memory(mut self, per_conn: usize, per_user: usize) -> Self {
        self.max_conn_memory = per_conn;
        self.max_user_memory = per_user;
        self
    }

    /// This config with the per-connection and per-user descriptor budgets set.
    pub fn descriptors(mut self, per_conn: usize, per_user: usize) -> Self {
        self.max_conn_fds = Some(per_conn);
        self.max_user_fds = Some(per_user);
        self
    }

    /// Slots kept for users holding few connections: the last eighth of `max_clients`.
    pub fn reserved_clients(&self) -> usize {
        self.max_clients / 8
    }

    /// The whole server's memory budget: 16× `max_user_memory`.
    pub fn max_server_memory(&self) -> usize {
        self.max_user_memory.saturating_mul(16)
    }

    /// This config with the handshake, frame and idle deadlines set.
    pub fn deadlines(mut self, handshake: Duration, frame: Duration, idle: Duration) -> Self {
        self.handshake_timeout = handshake;
        self.frame_timeout = frame;
        self.idle_timeout = idle;
        self
    }

    /// Most workers one user's requests may hold at once: a quarter of `max_workers`
    /// (at least 1).
    pub fn workers_per_user(&self) -> usize {
        (self.max_workers / 4).max(1)
    }

    /// Workers kept for users running few requests: the last eighth of `max_workers`.
    pub fn reserved_workers(&self) -> usize {
        self.max_workers / 8
    }

    /// This config with `max_workers` set (at least 1).
    pub fn max_workers(mut self, n: usize) -> Self {
        self.max_workers = n.max(1);
        self
    }
}
