//! A node server started in-process on a real unix socket in a temporary directory,
//! with an export directory, and real clients for it.

#![allow(dead_code)]

pub mod certs;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nf_ninep_client::{Client, Root};
use nf_ninep_server::ServerConfig;
use nf_node::xcpu::XcpuConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, Account};

/// A running node server and its files.
pub struct Node {
    pub daemon: Option<Daemon>,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub export: PathBuf,
    /// The memory registry `/mem` reads (empty unless a test fills it).
    pub registry: PathBuf,
    /// `/xcpu`'s settings (its upload directory is inside `dir`).
    pub xcpu: XcpuConfig,
}

impl Node {
    /// A server with the default limits.
    pub fn start() -> Node {
        Node::with_limits(ServerConfig::default())
    }

    /// A server with `limits`, exporting a fresh directory holding `hello.txt`.
    pub fn with_limits(limits: ServerConfig) -> Node {
        Node::with_xcpu(limits, XcpuConfig::default())
    }

    /// A server with `limits` that every local user can reach and attach to, as a
    /// root server's under `/run/ninefold` (the temporary directory is root's 0700).
    pub fn for_users(limits: ServerConfig) -> Node {
        let node = Node::with_limits(limits);
        let open = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        open(node.dir.path(), 0o755);
        open(node.socket.parent().unwrap(), 0o755);
        open(&node.socket, 0o777);
        open(&node.shm_socket(), 0o777);
        open(&node.export, 0o755);
        open(&node.export.join("hello.txt"), 0o644);
        node
    }

    /// A server with `limits` and `/xcpu` settings `xcpu` (its `dir` is set here).
    pub fn with_xcpu(limits: ServerConfig, xcpu: XcpuConfig) -> Node {
        let dir = tempfile::tempdir().expect("tempdir");
        let export = dir.path().join("export");
        std::fs::create_dir(&export).unwrap();
        std::fs::write(export.join("hello.txt"), b"hello from the host\n").unwrap();
        let socket = dir.path().join("run/nf.sock");
        let registry = dir.path().join("mem");
        let xcpu = XcpuConfig {
            dir: Some(dir.path().join("xcpu")),
            ..xcpu
        };
        let mut node = Node {
            daemon: None,
            dir,
            socket,
            export,
            registry,
            xcpu,
        };
        node.restart_with(limits);
        node
    }

    /// Stops the server (if running) and starts a fresh one on the same socket.
    pub fn restart_with(&mut self, limits: ServerConfig) {
        if let Some(d) = self.daemon.take() {
            assert!(d.shutdown(Duration::from_secs(5)), "connections let go");
        }
        let config = ServeConfig {
            unix: Some(self.socket.clone()),
            shm: Some(self.shm_socket()),
            tcp: Vec::new(),
            tls: None,
            node: NodeConfig {
                export: Some(self.export.clone()),
                pipe_capacity: 16,
                mem_registry: Some(self.registry.clone()),
                xcpu: self.xcpu.clone(),
                ..NodeConfig::default()
            },
            limits,
            ..ServeConfig::default()
        };
        self.daemon = Some(Daemon::start(&config).expect("start node server"));
    }

    /// Where the server offers shared-memory channels.
    pub fn shm_socket(&self) -> PathBuf {
        self.socket.with_extension("sock.shm")
    }

    pub fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("running")
    }

    pub fn client(&self) -> Client {
        Client::connect_unix(&self.socket).expect("connect")
    }

    pub fn root(&self) -> Root {
        self.client().attach("root", "").expect("attach")
    }

    /// `user`'s session over the unix socket, attached as themselves.
    pub fn session(&self, user: &Account) -> Root {
        let client = as_user(user, || Client::connect_unix(&self.socket)).expect("connect");
        client.attach(&user.name, "").expect("attach as oneself")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown(Duration::from_secs(5));
        }
    }
}

/// Waits for `what` for up to 10 s (a deadline against hangs, not a timing claim).
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    nf_testkit::eventually(what, Duration::from_secs(10), cond);
}

/// The text of `path`, or the test fails naming it.
pub fn read(root: &Root, path: &str) -> String {
    String::from_utf8(
        root.read_file(path)
            .unwrap_or_else(|e| panic!("read {path}: {e}")),
    )
    .unwrap()
}

/// Writes `text` to `path`, or the test fails naming it.
pub fn write(root: &Root, path: &str, text: &str) {
    root.write_file(path, text.as_bytes())
        .unwrap_or_else(|e| panic!("write {path}: {e}"));
}
