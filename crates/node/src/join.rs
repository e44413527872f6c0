//! Registering with a gateway (`nf serve --join ADDR`): the node tells a gateway where
//! to reach it, and keeps telling it, so a gateway that restarts learns it again.
//!
//! Start-up ([`JoinPlan::new`], before the node listens): the gateway must be a
//! `tls:` address and the node must have its TLS files, with a certificate that names
//! a node (OU [`nf_link::tls::NODE_UNIT`], made by `nf cert node HOST`), since the node
//! registers as itself; without `--join-as` it must have a TLS listener (`--tcp`),
//! whose port the default address names. Then ([`JoinPlan::start`], once it listens)
//! the address to announce is settled — `--join-as`, else `tls:CN:PORT` with the
//! certificate's common name and the first TLS listener's port — and a thread
//! registers:
//!
//! 1. Connect to the gateway over TLS with the node's certificate, each step bounded
//!    by [`JoinConfig::timeout`].
//! 2. Attach with an empty `uname` (the gateway knows the node by its certificate).
//! 3. Open [`JOIN_FILE`] for writing, write `ADDR\n`, clunk it, disconnect.
//! 4. Wait [`JoinConfig::interval`], or until the daemon stops, and start again.
//!
//! A failed registration is logged once per distinct error (not at every retry) and
//! retried at the next interval; serving never waits for the gateway. Stopping
//! ([`Joiner::stop`]) wakes the waiting thread at once; a registration in flight is
//! left to end on its own (its steps are bounded) after a second's wait, so shutdown
//! never waits long on an unresponsive gateway.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use nf_ninep::LOpenFlags;

use nf_link::addr::Addr;
use nf_link::tls::{file_identity, TlsError, TlsFiles, NODE_PREFIX};
use nf_ninep_client::connect::{attach, ConnectError, ConnectOptions};

/// The gateway's file a node writes its address to.
pub const JOIN_FILE: &str = "/join";
/// How often a node registers again by default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// How long one registration's connecting and each reply may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`Joiner::stop`] waits for a registration in flight before leaving it.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Which gateway to register with, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinConfig {
    /// The gateway (`tls:HOST:PORT`).
    pub gateway: Addr,
    /// The address the gateway should dial this node at (`--join-as`, `tls:HOST:PORT`);
    /// `None`: `tls:CN:PORT`, the node certificate's common name and the first TLS
    /// listener's port.
    pub advertise: Option<Addr>,
    /// Time between registrations.
    pub interval: Duration,
    /// Bound on connecting to the gateway and on each of its replies.
    pub timeout: Duration,
}

impl JoinConfig {
    /// Registering with `gateway` every [`DEFAULT_INTERVAL`], announcing the default
    /// address.
    pub fn new(gateway: Addr) -> JoinConfig {
        JoinConfig {
            gateway,
            advertise: None,
            interval: DEFAULT_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why a node cannot register with a gateway.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// An address that is not `tls:`.
    #[error("{flag} {addr}: the gateway and its nodes talk TLS only; give tls:HOST:PORT")]
    NotTls {
        /// The flag it was given with (`--join`, `--join-as`).
        flag: &'static str,
        /// The address.
        addr: String,
    },
    /// No TLS files to register with.
    #[error(
        "--join needs the node's certificate (--tls-cert, --tls-key, --tls-client-ca): \
         the node registers with the gateway as itself; make one with `nf cert node HOST`"
    )]
    NoCertificate,
    /// The certificate is not a node's.
    #[error(
        "--join: {} is not a node certificate (it names {who}); the node registers as \
         itself with the certificate `nf cert node HOST` makes (OU \"ninefold node\")",
        cert.display()
    )]
    NotNodeCertificate {
        /// The certificate file.
        cert: PathBuf,
        /// Whom it names instead (`nobody` if no one).
        who: String,
    },
    /// No address to announce.
    #[error(
        "--join: the node has no TLS listener to tell the gateway about; give \
         --tcp ADDR:PORT, or the address to dial with --join-as tls:HOST:PORT"
    )]
    NoListener,
    /// The certificate could not be read.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The registration thread could not start.
    #[error("starting the gateway registration thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// A join checked against the node's TLS files: the node certificate is a node's.
#[derive(Clone, Debug)]
pub struct JoinPlan {
    config: JoinConfig,
    tls: TlsFiles,
    /// The node certificate's common name.
    name: String,
}

impl JoinPlan {
    /// Checks `config` with the node's TLS files `tls` (start-up, in the module docs);
    /// `tls_listener` says whether the node will have a TLS listener whose port the
    /// default address can name.
    pub fn new(
        config: &JoinConfig,
        tls: Option<&TlsFiles>,
        tls_listener: bool,
    ) -> Result<JoinPlan, JoinError> {
        let tls_only = |flag, addr: &Addr| match addr {
            Addr::Tls(_) => Ok(()),
            other => Err(JoinError::NotTls {
                flag,
                addr: other.to_string(),
            }),
        };
        tls_only("--join", &config.gateway)?;
        if let Some(a) = &config.advertise {
            tls_only("--join-as", a)?;
        }
        let tls = tls.ok_or(JoinError::NoCertificate)?;
        if config.advertise.is_none() && !tls_listener {
            return Err(JoinError::NoListener);
        }
        let who = file_identity(&tls.cert)?;
        let Some(name) = who.as_deref().and_then(|w| w.strip_prefix(NODE_PREFIX)) else {
            return Err(JoinError::NotNodeCertificate {
                cert: tls.cert.clone(),
                who: who.unwrap_or_else(|| "nobody".into()),
            });
        };
        Ok(JoinPlan {
            config: config.clone(),
            tls: tls.clone(),
            name: name.to_string(),
        })
    }

    /// The address the gateway is told, given the port of the node's first TLS
    /// listener (if it has one).
    pub fn address(&self, tls_port: Option<u16>) -> Result<Addr, JoinError> {
        match (&self.config.advertise, tls_port) {
            (Some(a), _) => Ok(a.clone()),
            (None, Some(port)) => Ok(Addr::Tls(format!("{}:{port}", self.name))),
            (None, None) => Err(JoinError::NoListener),
        }
    }

    /// Starts registering (steps in the module docs), announcing the address for
    /// `tls_port` ([`JoinPlan::address`]).
    pub fn start(self, tls_port: Option<u16>) -> Result<Joiner, JoinError> {
        let line = format!("{}\n", self.address(tls_port)?);
        let (stop, stopped) = mpsc::channel::<()>();
        let (done_tx, done) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("nf-join".into())
            .spawn(move || {
                let _done = done_tx;
                self.run(&line, &stopped);
            })
            .map_err(JoinError::Thread)?;
        Ok(Joiner { stop, done, thread })
    }

    /// Registers every interval until `stopped` says stop (or its sender is gone).
    fn run(&self, line: &str, stopped: &mpsc::Receiver<()>) {
        let gateway = &self.config.gateway;
        let announced = line.trim_end();
        // Some(message) while failing: the same failure is logged once.
        let mut failing: Option<String> = None;
        let mut registered = false;
        loop {
            match self.register(line) {
                Ok(()) => {
                    if !registered || failing.is_some() {
                        tracing::info!(%gateway, address = announced, "registered with the gateway");
                    } else {
                        tracing::debug!(%gateway, address = announced, "registered with the gateway again");
                    }
                    registered = true;
                    failing = None;
                }
                Err(e) => {
                    let message = e.to_string();
                    if failing.as_deref() != Some(message.as_str()) {
                        tracing::warn!(%gateway, error = %message, interval_s = self.config.interval.as_secs_f64(), "could not register with the gateway; retrying (the same error is not logged again)");
                        failing = Some(message);
                    }
                }
            }
            match stopped.recv_timeout(self.config.interval) {
                Err(RecvTimeoutError::Timeout) => continue,
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// One registration (steps 1–3).
    fn register(&self, line: &str) -> Result<(), ConnectError> {
        let opts = ConnectOptions {
            user: String::new(),
            msize: nf_ninep::DEFAULT_MAX_MSIZE,
            tls: Some(self.tls.clone()),
            timeout: Some(self.config.timeout),
        };
        let root = attach(&self.config.gateway, &opts)?;
        let mut file = root.open(JOIN_FILE, LOpenFlags::WRONLY)?;
        file.write_all(line.as_bytes())?;
        file.close()?;
        Ok(())
    }
}

/// The thread registering a node with its gateway; [`Joiner::stop`] ends it (so does
/// dropping it, at the end of its current wait).
#[derive(Debug)]
pub struct Joiner {
    stop: mpsc::Sender<()>,
    /// Disconnected once the thread has returned.
    done: mpsc::Receiver<()>,
    thread: JoinHandle<()>,
}

impl Joiner {
    /// Stops registering: wakes the thread and waits for it, unless a registration is
    /// in flight, which is left to end on its own within its timeouts.
    pub fn stop(self) {
        let _ = self.stop.send(());
        match self.done.recv_timeout(STOP_GRACE) {
            Err(RecvTimeoutError::Disconnected) => {
                let _ = self.thread.join();
            }
            Ok(()) | Err(RecvTimeoutError::Timeout) => {
                tracing::debug!("a gateway registration is still in flight; not waiting for it");
            }
        }
    }
}
