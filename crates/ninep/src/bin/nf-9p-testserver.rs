//! A test server, not the node daemon: serves one host directory over 9P2000.L on a
//! unix socket (and optionally loopback TCP) until it is killed. The conformance tests
//! (the Linux kernel client under QEMU, the Go client) and `nf bench 9p` use it until
//! `nf serve` exists.
//!
//! ```text
//! nf-9p-testserver --export DIR (--unix PATH | --tcp ADDR)… [--readonly] [--msize N]
//! ```
//!
//! `--readonly` serves the #R view (private in-memory writes) instead of #U
//! (passthrough). It prints `listening on ADDR` once per listener, then serves until
//! SIGTERM / SIGKILL. Bad arguments exit with status 2 and a message.

use std::path::PathBuf;
use std::process::exit;

use nf_ninep::server::{Filesystem, Listener, PassthroughFs, ReadOnlyView, Server, ServerConfig};

const USAGE: &str =
    "usage: nf-9p-testserver --export DIR (--unix PATH | --tcp ADDR)... [--readonly] [--msize N]";

/// What the command line asked for.
struct Args {
    export: PathBuf,
    unix: Vec<PathBuf>,
    tcp: Vec<String>,
    readonly: bool,
    msize: Option<u32>,
}

fn fail(msg: &str) -> ! {
    eprintln!("nf-9p-testserver: {msg}\n{USAGE}");
    exit(2)
}

fn parse() -> Args {
    let mut args = std::env::args().skip(1);
    let mut export = None;
    let (mut unix, mut tcp) = (Vec::new(), Vec::new());
    let (mut readonly, mut msize) = (false, None);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| fail(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--export" => export = Some(PathBuf::from(value())),
            "--unix" => unix.push(PathBuf::from(value())),
            "--tcp" => tcp.push(value()),
            "--readonly" => readonly = true,
            "--msize" => {
                let v = value();
                let n = v
                    .parse()
                    .unwrap_or_else(|_| fail(&format!("--msize wants bytes, got '{v}'")));
                msize = Some(n);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0)
            }
            other => fail(&format!("unknown argument '{other}'")),
        }
    }
    let export = export.unwrap_or_else(|| fail("--export DIR is required"));
    if unix.is_empty() && tcp.is_empty() {
        fail("give at least one --unix PATH or --tcp ADDR");
    }
    Args {
        export,
        unix,
        tcp,
        readonly,
        msize,
    }
}

/// Starts every listener asked for, then parks this thread forever.
fn serve<F: Filesystem>(fs: F, args: &Args) -> ! {
    let mut config = ServerConfig::default();
    if let Some(m) = args.msize {
        config = config.max_msize(m);
    }
    let server = Server::with_config(fs, config);
    let mut listeners: Vec<Listener> = Vec::new();
    for path in &args.unix {
        match server.listen_unix(path) {
            Ok(l) => listeners.push(l),
            Err(e) => fail(&format!("listening on {}: {e}", path.display())),
        }
    }
    for addr in &args.tcp {
        match server.listen_tcp(addr.as_str()) {
            Ok(l) => listeners.push(l),
            Err(e) => fail(&format!("listening on {addr}: {e}")),
        }
    }
    for l in &listeners {
        println!("listening on {}", l.addr());
    }
    loop {
        std::thread::park();
    }
}

fn main() {
    let args = parse();
    let exported = if args.readonly {
        ReadOnlyView::new(&args.export).map(|fs| serve(fs, &args))
    } else {
        PassthroughFs::new(&args.export).map(|fs| serve(fs, &args))
    };
    if let Err(e) = exported {
        eprintln!("nf-9p-testserver: {e}");
        exit(1);
    }
}
