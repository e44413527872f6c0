//! `nf cert`: the certificates remote 9P needs, made the way rustls accepts them
//! (X.509 v3 with the right extensions), so nobody has to get openssl's flags right.
//!
//! - `nf cert ca` makes `ca.pem` / `ca.key`: the CA that signs nodes and users;
//! - `nf cert node HOST` makes `HOST.pem` / `HOST.key`, valid for the name (or IP)
//!   clients dial, for `nf serve --tls-cert`; it also serves as the node's client
//!   certificate when it hands sessions on to other nodes (OU `ninefold node`);
//! - `nf cert gateway NAME [--host H…]` makes `NAME.pem` / `NAME.key` for a gateway
//!   (OU `ninefold gateway`, CN NAME), valid for the names it is dialled at; nodes
//!   trust it with `nf serve --trust-gateway NAME`;
//! - `nf cert user NAME` makes `NAME.pem` / `NAME.key` with CN NAME: the 9P user.
//!
//! Names a certificate should almost never carry are refused unless `--force` is
//! given, each with what the certificate would allow: a user certificate for `root`
//! (or whatever uid 0 is called here) acts as root on every node that trusts the CA;
//! one named `node:…` or `gateway:…` names nobody (nodes refuse it at the handshake;
//! `nf cert node` and `nf cert gateway` make those). Names that cannot be a file name
//! or a single account name (empty, with `/`, starting with `.`, with control
//! characters or white space at either end) are refused outright.
//!
//! The CA is read back from `ca.key` alone: its certificate is re-made from the same
//! key and name, which signs exactly as the original does.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// The CA's common name (the CA is re-made from its key under this name).
const CA_NAME: &str = "ninefold CA";

/// Arguments of `nf cert`.
#[derive(Args)]
pub struct CertArgs {
    /// What to make.
    #[command(subcommand)]
    pub what: CertCommand,
    /// Directory of the CA and of the files made.
    #[arg(long, global = true, default_value = ".")]
    pub dir: PathBuf,
}

/// What `nf cert` makes.
#[derive(Subcommand)]
pub enum CertCommand {
    /// A CA: DIR/ca.pem (give to servers and clients as --tls-client-ca / --ca) and
    /// DIR/ca.key (keep private).
    Ca,
    /// A node's certificate, valid for HOST (a name or IP clients dial): DIR/HOST.pem,
    /// DIR/HOST.key.
    Node {
        /// Host name or IP address.
        host: String,
    },
    /// A gateway's certificate with CN NAME, valid for the names and IPs it is dialled
    /// at: DIR/NAME.pem, DIR/NAME.key. Nodes let it attach for their users with
    /// `nf serve --trust-gateway NAME`.
    Gateway {
        /// The gateway's name (its certificate's common name).
        name: String,
        /// A host name or IP address the gateway is dialled at (repeatable)
        /// [default: NAME].
        #[arg(long = "host", value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// A user's client certificate with CN NAME (the 9P user): DIR/NAME.pem, DIR/NAME.key.
    /// Reserved names (root, uid 0's name, node:…, gateway:…) need --force.
    User {
        /// User name.
        name: String,
        /// Make it even for a reserved name (see the message that names the risk).
        #[arg(long)]
        force: bool,
    },
}

/// Runs `nf cert`.
pub fn main(a: CertArgs) -> anyhow::Result<i32> {
    let (name, cert, key) = match &a.what {
        CertCommand::Ca => {
            let key = KeyPair::generate()?;
            ("ca".to_owned(), ca_params()?.self_signed(&key)?, key)
        }
        CertCommand::Node { host } => {
            let p = service(host, std::slice::from_ref(host), nf_link::tls::NODE_UNIT)?;
            signed(host, p, &a.dir)?
        }
        CertCommand::Gateway { name, hosts } => {
            let hosts = match hosts.as_slice() {
                [] => std::slice::from_ref(name),
                some => some,
            };
            let p = service(name, hosts, nf_link::tls::GATEWAY_UNIT)?;
            signed(name, p, &a.dir)?
        }
        CertCommand::User { name, force } => {
            if let Some(risk) = reserved_user(name, nf_node::access::account_name(0)) {
                if !*force {
                    bail!("refusing to make a user certificate named {name:?}: {risk}; pass --force to make it anyway");
                }
                eprintln!("nf cert: warning: {name:?}: {risk}");
            }
            let mut p = CertificateParams::new(Vec::new())?;
            p.distinguished_name.push(DnType::CommonName, name.as_str());
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            signed(name, p, &a.dir)?
        }
    };
    let pem = a.dir.join(format!("{name}.pem"));
    let keyfile = a.dir.join(format!("{name}.key"));
    // Both files are claimed before either is written: an existing key never gets a
    // certificate for another key beside it.
    let pem_file = create_new(&pem, 0o644)?;
    let key_file = create_new(&keyfile, 0o600).inspect_err(|_| {
        let _ = std::fs::remove_file(&pem);
    })?;
    write_all(pem_file, &pem, &cert.pem())?;
    write_all(key_file, &keyfile, &key.serialize_pem())?;
    println!("wrote {} and {}", pem.display(), keyfile.display());
    Ok(0)
}

/// Why a user certificate named `name` is dangerous or useless (`root_name`: uid 0's
/// account name here, if it has one), or `None` for an ordinary name.
fn reserved_user(name: &str, root_name: Option<String>) -> Option<String> {
    use nf_link::tls::{GATEWAY_PREFIX, NODE_PREFIX};
    if name == "root" || root_name.as_deref() == Some(name) {
        return Some(format!(
            "it would let whoever holds its key attach as {name} (uid 0) to every node \
             that trusts this CA: read and change every file there and run jobs as root \
             through /xcpu"
        ));
    }
    let (prefix, command) = if name.starts_with(NODE_PREFIX) {
        (NODE_PREFIX, "nf cert node HOST")
    } else if name.starts_with(GATEWAY_PREFIX) {
        (GATEWAY_PREFIX, "nf cert gateway NAME")
    } else {
        return None;
    };
    Some(format!(
        "user names starting with {prefix:?} are reserved for the cluster's own services: \
         nodes refuse such a user certificate at the handshake, and software that reads \
         only the name would take it for one (make a real one with `{command}`)"
    ))
}

/// A service of the cluster (a node, a gateway) named `name` in unit `unit`: valid as
/// a server for `hosts`, and as a client, since nodes and gateways also connect to
/// nodes, saying with the unit that they are no user.
fn service(name: &str, hosts: &[String], unit: &str) -> anyhow::Result<CertificateParams> {
    let mut p = CertificateParams::new(hosts.to_vec())
        .with_context(|| format!("{hosts:?}: not host names or IP addresses"))?;
    p.distinguished_name.push(DnType::CommonName, name);
    p.distinguished_name
        .push(DnType::OrganizationalUnitName, unit);
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    Ok(p)
}

fn ca_params() -> anyhow::Result<CertificateParams> {
    let mut p = CertificateParams::new(Vec::new())?;
    p.distinguished_name.push(DnType::CommonName, CA_NAME);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok(p)
}

/// `params` (a leaf named `name`) with a new key, signed by the CA in `dir`.
fn signed(
    name: &str,
    mut params: CertificateParams,
    dir: &Path,
) -> anyhow::Result<(String, Certificate, KeyPair)> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("{name:?} cannot name a file; give a plain host or user name");
    }
    if name.chars().any(char::is_control) || name.trim() != name {
        bail!(
            "{name:?} has control characters or white space at an end: no account or host \
             is named so, and logs would show it misleadingly; give a plain host or user name"
        );
    }
    let ca_key_file = dir.join("ca.key");
    let text = nf_sys::file::read_regular_text(&ca_key_file, 64 << 10).with_context(|| {
        format!(
            "reading the CA key {}; make a CA first with `nf cert ca`",
            ca_key_file.display()
        )
    })?;
    let ca_key = KeyPair::from_pem(&text)
        .with_context(|| format!("{} is not a PEM private key", ca_key_file.display()))?;
    let ca = ca_params()?.self_signed(&ca_key)?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &ca, &ca_key)?;
    Ok((name.to_owned(), cert, key))
}

/// Writes `text` to `path` with permission bits `mode`, refusing to replace a file.
fn create_new(path: &Path, mode: u32) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("creating {} (an existing file is kept)", path.display()))
}

fn write_all(mut f: std::fs::File, path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
