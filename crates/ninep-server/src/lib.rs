//! A 9P2000.L server framework for file trees, after Plan 9's lib9p and diod's libnpfs.
//!
//! A tree implements [`Filesystem`] (one method per request, each with a default
//! answer); a [`Server`] serves it over any byte
//! [`Transport`](nf_link::Transport) — TCP and unix sockets are built in
//! ([`Server::listen_tcp`], [`Server::listen_unix`]). This crate holds no tree: the
//! ready-made ones (#U, #R, synthetic, the mount table) are in `nf-ninep-trees`; the
//! codec is `nf-ninep`'s, the transports `nf-link`'s.
//!
//! | module | job |
//! |---|---|
//! | `handler` | the [`Filesystem`] trait, [`Ctx`], defaults |
//! | `check`, `job` | checking a request before the tree sees it (lib9p `sFOO`) |
//! | `apply` | the single `match` that calls the tree |
//! | `reply` | bookkeeping when a request completes (lib9p `rFOO`) |
//! | `conn` | one connection: reader loop, version, flush, sending |
//! | `pending` | requests in flight and the flushes waiting for them |
//! | `fid` | the fid table |
//! | `pool` | worker threads, shared out between users: shares, a reserve, a fair queue |
//! | `srv`, `listen` | [`Server`], [`Listener`] |
//! | `cancel` | [`Cancel`] tokens and [`Monitor`] for blocking trees |
//! | `watch` | deadlines: handshake, partial frames, idle connections; the coarse clock |
//! | `slots` | who may connect when the server or a user is full: shares, reserve, eviction |
//! | `budget` | memory and descriptor budgets per connection, user and server ([`Charge`]) |
//! | `nofile` | the descriptor limit: raised at start, shared out |
//! | `tally` | counting what clients can cause at will (refusals, bad frames, deadlines), logged at most once per 10 s per kind |
//! | `trim` | giving freed memory back to the system after a connection ends |
//! | `config` | every limit and its default ([`ServerConfig`]) |
//! | `creds` | [`Creds`]: acting as the attached user on host files |
//!
//! # Life of a request
//!
//! 1. The connection's reader thread receives bytes and splits frames; a frame whose
//!    size is below 7 or above msize closes the connection (the stream cannot be
//!    resynchronised). A frame that does not decode is answered `Rlerror(EPROTO)`.
//! 2. `Tversion` and `Tflush` are handled on the reader thread (below). Any other
//!    request before a successful `Tversion` gets `EPROTO`; a tag already in flight gets
//!    `EPROTO`; beyond `max_in_flight` requests, `EAGAIN`.
//! 3. **Charge** (`budget`): the request's frame, plus a read's or readdir's count, to
//!    the connection's, its user's and the server's memory budgets; past one, `ENOMEM`.
//!    **Check** (`check`, under the connection lock, in arrival order): fids resolve
//!    to entries, open modes and file types are verified, new fids are reserved,
//!    read/readdir counts are capped at msize − IOHDRSZ. A failure is answered at once.
//! 4. The request is registered with a fresh [`Cancel`] token and handed to a worker
//!    (`pool`): it waits in its user's queue while the user runs a quarter of the
//!    workers, or every worker the user may use is busy; a cancelled one runs at once.
//! 5. **Apply** (`apply`, on the worker, no lock held): the one tree method is called.
//! 6. **Record** (`reply`, under the connection lock): the fid table is updated from the
//!    outcome; the request leaves the pending table.
//! 7. **Reply**: the worker takes the sending lock before letting go of the connection
//!    lock, clunks in the tree the states the server let go of (so a client that has
//!    its `Rclunk` knows the fid's hold is gone), then sends the reply — unless the
//!    request was aborted, or flushed and failed — and then one `Rflush` per flush that
//!    waited for it; then its charge is given back.
//!
//! # Flush
//!
//! 1. `Tflush(oldtag)` for a tag not in flight is answered `Rflush` at once, after any
//!    reply already being sent (it needs the sending lock too).
//! 2. For a tag in flight, the flush's tag is queued on that request and its token is
//!    cancelled; a tree blocked in [`Cancel::wait`] wakes and returns (usually `EINTR`).
//! 3. When the request finishes, step 7 above sends its reply only if the tree
//!    succeeded (the work was done and the client must learn of it — flush(5)), then the
//!    `Rflush`es in arrival order. A cancelled request's error is never sent, so after
//!    `Rflush` the old tag is never answered.
//! 4. A flush of a waiting flush queues behind the same request.
//!
//! # Session reset and disconnect
//!
//! `Tversion` (with `NOTAG` or, as some clients send it, any other tag) and a closed
//! connection both: abort every
//! request in flight (cancel it; nothing will be sent for it), wait until they have all
//! returned, then clunk every fid in the tree. `Tversion` then negotiates and answers
//! `Rversion`; a disconnected connection closes its transport and leaves the server.
//!
//! # Limits
//!
//! See [`ServerConfig`]: `max_msize` (1 MiB), `max_fids` (16384 per connection,
//! `EMFILE`), `max_in_flight` (256 per connection, `EAGAIN`); connection slots
//! (`slots`): `max_clients` (1024) and `max_clients_per_user` (128), the last eighth
//! kept for users holding few, an idle connection of the user holding the most giving
//! its slot up before anyone is refused (the first request is answered `EAGAIN`, then
//! the connection is closed); memory budgets (`budget`): `max_conn_memory` (32 MiB),
//! `max_user_memory` (256 MiB, the server 16×), charged by requests in flight,
//! buffers and what trees keep ([`Ctx::charge`]), `ENOMEM` past them; descriptor
//! budgets (`budget`, `nofile`): `max_conn_fds` and `max_user_fds` (a 32nd and an
//! 8th of `RLIMIT_NOFILE`, raised to its hard limit at start; the server three
//! quarters), charged by what trees keep open ([`Ctx::charge_fd`]), `EMFILE` past
//! them; workers (`pool`): `max_workers` (1024), a quarter per user, the last eighth
//! for users running few; each logged when hit (at most once per 10 s per kind where
//! a client can repeat it, client strings escaped: `tally`); and deadlines
//! (`watch`): a connection that has started to talk must attach within
//! `handshake_timeout` (10 s), a frame must arrive within `frame_timeout` (30 s) once
//! started, and a connection that let go of every fid is closed after `idle_timeout`
//! (60 s) of silence.

// The one `unsafe` call is `malloc_trim`, in `trim`.
#![deny(unsafe_code)]

mod apply;
mod budget;
mod cancel;
mod check;
mod config;
mod conn;
mod creds;
mod error;
mod fid;
mod handler;
mod job;
mod listen;
mod nofile;
mod pending;
mod pool;
mod reply;
mod slots;
mod srv;
mod tally;
pub use tally::Tally;
mod trim;
mod watch;

pub use budget::Charge;
pub use cancel::{lock, Cancel, Cancelled, Monitor};
pub use config::ServerConfig;
pub use creds::Creds;
pub use error::{FsError, FsResult, ServerError};
pub use handler::{synthetic_statfs, Ctx, Filesystem, Walked, V9FS_MAGIC};
pub use listen::{ListenAddr, Listener};
pub use srv::{Server, ServerStats};
