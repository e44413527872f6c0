//! The byte transports under 9P and the addresses that name them: how a 9P client
//! reaches a server and how a server's connections carry bytes, whatever the server
//! serves (diod's `Nptrans` and its `fdtrans`, with TLS and shared memory beside them).
//!
//! | module | job |
//! |---|---|
//! | [`transport`] | the three-method byte [`Transport`] the client and the server read and write |
//! | [`tcp`], [`unix`] | tcp and unix-socket streams as transports; who the local peer is (`SO_PEERCRED`, [`sockdiag`]) |
//! | [`sockdiag`] | the owner of a loopback tcp peer's socket, asked of the kernel |
//! | [`tls`] | TLS with client certificates: the stream, both sides' configs, who a certificate names |
//! | [`shm`] | the shared-memory byte channel as a transport: joining and offering it |
//! | [`addr`] | `unix:PATH`, `tcp:HOST:PORT`, `tls:HOST:PORT`, `shm:PATH` and `ADDR:/path`; the default server |
//! | [`sockdir`] | who may reach a server's sockets and who may not replace them (rules 1–3) |
//!
//! # Where this crate sits
//!
//! Between the codec (`nf-ninep`, sans-IO: it turns bytes into messages and does no
//! I/O) and the client and server (`nf-ninep-client`, `nf-ninep-server`), which move
//! their frames through a [`Transport`]. The trait lives here, not in the codec, because
//! Rust lets only the trait's crate implement it for `TcpStream` and `UnixStream`, and
//! those implementations do I/O (a polling `recv`, netlink): with the trait in the codec
//! the codec could not stay sans-IO. Client and server both need the tcp and unix
//! implementations (`Client::connect_unix`, `Server::listen_tcp`), so this crate cannot
//! sit above them.
//!
//! What needs the client or the server stays above them: connecting an [`addr::Addr`]
//! and attaching is `nf_ninep_client::connect`, and the accept loops that serve a
//! `Server` over TLS and shared memory are the node's (`nf_node::listen`).
//!
//! The lock-free ring under [`shm`] (`nf_transport::shm::channel::ByteChannel`) stays in
//! `nf-transport`: its shared layout is defined in `shm/layout.rs` with every other
//! shared-memory structure, and its loom model runs the real ring code over the same
//! `shm/sync.rs` atomics as the message rings' model. This crate makes it a 9P transport
//! (set-up over a unix socket, the peer's credentials), nothing more.
//!
//! # Settings
//!
//! [`SETTINGS`]: `NF_ADDR`, the server `:/path` means ([`addr::default_address`]).

#![forbid(unsafe_code)]

pub mod addr;
pub mod shm;
pub mod sockdiag;
pub mod sockdir;
pub mod tcp;
pub mod tls;
pub mod transport;
pub mod unix;

pub use addr::SETTINGS;
pub use transport::Transport;
