//! Small-operation rate of the node server over its three local transports, measured
//! in the same run, alternating: unix socket, shared-memory channel, TLS on loopback.
//!
//! One operation is what `Root::read_file` does on a 6-byte file in `/fs`: walk, open,
//! read, read (end of file), clunk — five round trips.
//!
//! ```sh
//! cargo run -p nf-node --example transports [-- OPS ROUNDS]
//! ```

use std::time::{Duration, Instant};

use nf_link::addr::Addr;
use nf_ninep_client::connect::{attach, ConnectOptions};
use nf_ninep_client::Root;
use nf_node::{Daemon, NodeConfig, ServeConfig};

fn rate(root: &Root, ops: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..ops {
        assert_eq!(root.read_file("/fs/hello").unwrap(), b"hello\n");
    }
    ops as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: usize = args.next().map_or(2000, |a| a.parse().expect("OPS"));
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    std::fs::create_dir(&export).unwrap();
    std::fs::write(export.join("hello"), b"hello\n").unwrap();
    let certs = make_certs(dir.path());
    let socket = dir.path().join("nf.sock");
    let shm = dir.path().join("nf.sock.shm");
    let daemon = Daemon::start(&ServeConfig {
        unix: Some(socket.clone()),
        shm: Some(shm.clone()),
        tcp: vec!["127.0.0.1:0".parse().unwrap()],
        tls: Some(certs.0),
        node: NodeConfig {
            export: Some(export),
            ..NodeConfig::default()
        },
        limits: Default::default(),
        ..ServeConfig::default()
    })
    .unwrap();
    let tls_addr = daemon.tcp_addr().unwrap();
    let opts = ConnectOptions {
        user: "root".into(),
        tls: Some(certs.1),
        ..ConnectOptions::default()
    };
    let roots = [
        ("unix", attach(&Addr::Unix(socket), &opts).unwrap()),
        ("shm", attach(&Addr::Shm(shm), &opts).unwrap()),
        (
            "tls",
            attach(&Addr::Tls(tls_addr.to_string()), &opts).unwrap(),
        ),
    ];
    let mut best = [0f64; 3];
    let mut all = vec![Vec::new(); 3];
    for _ in 0..rounds {
        for (i, (_, root)) in roots.iter().enumerate() {
            let r = rate(root, ops);
            all[i].push(r);
            best[i] = best[i].max(r);
        }
    }
    println!("{{\"ops_per_round\": {ops}, \"rounds\": {rounds}, \"results\": [");
    for (i, (name, _)) in roots.iter().enumerate() {
        let mut v = all[i].clone();
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        let comma = if i + 1 < roots.len() { "," } else { "" };
        println!(
            "  {{\"transport\": \"{name}\", \"median_ops_per_s\": {median:.0}, \"best_ops_per_s\": {:.0}, \"median_vs_unix\": {:.2}}}{comma}",
            best[i],
            median / {
                let mut u = all[0].clone();
                u.sort_by(f64::total_cmp);
                u[u.len() / 2]
            }
        );
    }
    println!("]}}");
    drop(roots);
    daemon.shutdown(Duration::from_secs(5));
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate for root.
fn make_certs(dir: &std::path::Path) -> (nf_link::tls::TlsFiles, nf_link::tls::TlsFiles) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "bench CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    let issue = |name: &str, cn: &str, sans: Vec<String>| {
        let mut p = CertificateParams::new(sans).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &ca_cert, &ca_key).unwrap();
        let files = nf_link::tls::TlsFiles {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
            ca: ca_file.clone(),
        };
        std::fs::write(&files.cert, cert.pem()).unwrap();
        std::fs::write(&files.key, key.serialize_pem()).unwrap();
        files
    };
    (
        issue("server", "node", vec!["127.0.0.1".into()]),
        issue("client", "root", Vec::new()),
    )
}
