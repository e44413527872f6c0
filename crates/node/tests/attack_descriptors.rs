//! Attack: the server's descriptors (no client can stop the others). Every
//! open file and directory of `/fs`, and every host file open for reading in `/ro`,
//! holds a descriptor of the server process. A server started from a shell keeps
//! that shell's soft `RLIMIT_NOFILE`, and when any user could hold open files
//! without bound, one unprivileged account took every descriptor: root's opens
//! failed `EMFILE` and the server accepted no connection. Here the account opens
//! files over several connections until it is refused; root and another account
//! must still connect and open files.
//!
//! The server runs in this process (its descriptors are this process's), and the
//! test starts it from a low soft limit, so this file holds one test.

mod support;

use nf_ninep::errno::EMFILE;
use nf_ninep::LOpenFlags;
use nf_ninep_client::Client;
use nf_ninep_server::ServerConfig;
use nf_testkit::users::{as_user, second_test_account, test_account};
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use support::Node;

/// The soft limit the server is started from (a shell's `ulimit -n` is often 1024).
const SOFT: u64 = 256;
/// The descriptor budgets under test: per connection and per user.
const PER_CONN: usize = 16;
const PER_USER: usize = 48;

#[test]
fn a_user_holding_open_files_cannot_use_up_the_servers_descriptors() {
    let (a, b) = (test_account().unwrap(), second_test_account().unwrap());
    let hard = getrlimit(Resource::Nofile).maximum;
    let soft = hard.map_or(SOFT, |h| h.min(SOFT));
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(soft),
            maximum: hard,
        },
    )
    .unwrap();
    let node = Node::for_users(ServerConfig::default().descriptors(PER_CONN, PER_USER));
    let server = node.daemon().server();
    assert_eq!(
        getrlimit(Resource::Nofile).current,
        hard,
        "the server raises its soft descriptor limit to the hard limit"
    );

    // A opens files, directories and /ro files on connection after connection until
    // refused (bounded: a connection stops at its first refusal, and A at 8).
    let mut sessions = Vec::new();
    let mut held = Vec::new();
    let mut per_conn = Vec::new();
    for _ in 0..8 {
        // (Before the fix, the server could not even attach A again by now.)
        let attached = as_user(&a, || Client::connect_unix(&node.socket))
            .ok()
            .and_then(|c| c.attach(&a.name, "").ok());
        let Some(s) = attached else {
            break;
        };
        let mut mine = 0;
        let refusal = loop {
            let path = ["/fs/hello.txt", "/fs", "/ro/hello.txt"][mine % 3];
            match s.open(path, LOpenFlags::RDONLY) {
                Ok(f) => {
                    held.push(f);
                    mine += 1;
                }
                Err(e) => break e,
            }
            if mine > 2 * SOFT as usize {
                panic!("one connection opened {mine} files and was never refused");
            }
        };
        assert_eq!(refusal.errno(), Some(EMFILE), "{refusal}");
        per_conn.push(mine);
        sessions.push(s);
    }
    eprintln!("opened per connection: {per_conn:?}; {:?}", server.stats());
    assert!(
        per_conn.iter().all(|&n| n <= PER_CONN),
        "a connection kept more than {PER_CONN} descriptors: {per_conn:?}"
    );
    assert_eq!(
        held.len(),
        PER_USER,
        "the user keeps exactly its share: {per_conn:?}"
    );
    assert_eq!(server.stats().fds, PER_USER);

    // Root connects (the server still accepts), opens a connection's worth of files
    // and directories, and reads.
    let root = node.root();
    assert_eq!(
        root.read_file("/fs/hello.txt").unwrap(),
        b"hello from the host\n"
    );
    let roots: Vec<_> = (0..PER_CONN)
        .map(|i| {
            let path = ["/fs/hello.txt", "/fs", "/ro/hello.txt"][i % 3];
            root.open(path, LOpenFlags::RDONLY).expect("root opens")
        })
        .collect();
    // So does another user.
    let other = node.session(&b);
    let theirs: Vec<_> = (0..PER_CONN)
        .map(|_| other.open("/fs/hello.txt", LOpenFlags::RDONLY).unwrap())
        .collect();

    // What A held is given back when its fids go.
    drop(held);
    drop(sessions);
    support::eventually("the attacker's descriptors are given back", || {
        server.stats().fds == roots.len() + theirs.len()
    });
    drop((theirs, other, roots, root));
}
