//! `nf gateway`: many nodes and clusters as one 9P tree (`nf_gateway`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use nf_gateway::{Gateway, GatewayConfig, GatewayOptions};
use nf_ninep_server::ServerConfig;

use super::serve::{announce, detach, stop_signals, wait_for_stop, ListenTlsArgs};

/// The line a started gateway prints once it listens.
const READY: &str = "nf gateway: ready";

/// Arguments of `nf gateway`.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  \
  nf cert gateway gw --host 10.0.0.254     # the gateway's identity (nodes: --trust-gateway gw)\n  \
  nf gateway --config gw.toml --tcp 0.0.0.0:564 --tls-cert gw.pem --tls-key gw.key --tls-client-ca ca.pem\n  \
  nf ls tls:10.0.0.254:564:/n              # every node\n  \
  nf exec tls:10.0.0.254:564:/views/gpu -- ./prog   # placed on the least busy gpu node")]
pub struct GatewayArgs {
    /// The config file (TOML): members, views, access lists, trusted gateways. Without
    /// it the gateway starts empty and nodes register themselves (nf serve --join).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Unix socket to listen on.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Listen on tcp ADDR:PORT (repeatable). Loopback only, unless TLS is configured.
    #[arg(long, value_name = "ADDR:PORT")]
    pub tcp: Vec<SocketAddr>,
    /// The gateway's certificate (nf cert gateway NAME), key and the CA of users,
    /// nodes and gateways: served to clients, and presented to members when it
    /// attaches for users.
    #[command(flatten)]
    pub tls: ListenTlsArgs,
    /// Largest 9P message, towards clients and members, in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub msize: u32,
    /// Most client connections at once.
    #[arg(long, default_value_t = 256)]
    pub max_clients: usize,
    /// Connections to each member; client connections are spread over them.
    #[arg(long, default_value_t = nf_gateway::member::DEFAULT_LANES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub member_connections: usize,
    /// Stay in the foreground (default: detach once listening).
    #[arg(long, short = 'f')]
    pub foreground: bool,
}

/// Runs `nf gateway`.
pub fn main(a: GatewayArgs) -> anyhow::Result<i32> {
    let config = match &a.config {
        Some(path) => GatewayConfig::load(path)?,
        None => GatewayConfig::default(),
    };
    if a.msize < nf_ninep::MIN_MSIZE {
        anyhow::bail!(
            "--msize {} is below the 9P minimum of {} bytes",
            a.msize,
            nf_ninep::MIN_MSIZE
        );
    }
    let tls = a.tls.files();
    let opts = GatewayOptions {
        unix: a.unix.clone(),
        tcp: a.tcp.clone(),
        tls,
        limits: ServerConfig::default()
            .max_msize(a.msize)
            .max_clients(a.max_clients),
        member_lanes: a.member_connections,
    };
    if !a.foreground {
        return detach(READY);
    }
    let signals = stop_signals()?;
    let gateway = Gateway::start(&config, &opts).context("starting the gateway")?;
    announce("nf gateway", READY, gateway.addrs());
    wait_for_stop(signals);
    if !gateway.shutdown(Duration::from_secs(5)) {
        tracing::warn!("some clients did not release their fids within 5 s");
    }
    Ok(0)
}
