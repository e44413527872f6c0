//! Test certificates made with rcgen: a CA, a server certificate for loopback and the
//! given addresses, client certificates by common name, and a stranger CA.

use std::path::{Path, PathBuf};

use nf_link::tls::TlsFiles;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// A CA that writes PEM files into a directory.
pub struct Ca {
    dir: PathBuf,
    name: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    /// A fresh CA called `name`, its certificate written to `dir/name.ca.pem`.
    pub fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join(format!("{name}.ca.pem")), cert.pem()).unwrap();
        Ca {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            cert,
            key,
        }
    }

    /// The CA certificate file.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join(format!("{}.ca.pem", self.name))
    }

    /// A certificate with common name `cn` and subject alternative names `sans`,
    /// with files `<file>.pem` / `<file>.key`; paired with `peer_ca` as the CA to trust.
    pub fn issue(&self, file: &str, cn: Option<&str>, sans: &[&str], peer_ca: &Path) -> TlsFiles {
        self.issue_in_unit(file, cn, None, sans, peer_ca)
    }

    /// As [`Ca::issue`], with organizational unit `unit` (a node's or a gateway's).
    pub fn issue_in_unit(
        &self,
        file: &str,
        cn: Option<&str>,
        unit: Option<&str>,
        sans: &[&str],
        peer_ca: &Path,
    ) -> TlsFiles {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        if let Some(unit) = unit {
            params
                .distinguished_name
                .push(DnType::OrganizationalUnitName, unit);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let files = TlsFiles {
            cert: self.dir.join(format!("{file}.pem")),
            key: self.dir.join(format!("{file}.key")),
            ca: peer_ca.to_path_buf(),
        };
        std::fs::write(&files.cert, cert.pem()).unwrap();
        std::fs::write(&files.key, key.serialize_pem()).unwrap();
        files
    }
}
