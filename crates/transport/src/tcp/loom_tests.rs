//! Model checks of the read handoff (`handoff.rs`, rules 1–3) and the inbox
//! (`inbox.rs`, rules 1–3) under loom: the real [`Rx`] and [`Inbox`] (their locks and
//! atomics are loom's, `sync.rs`), driven by the steps of the progress thread
//! (`Engine::read`: visit, read under the lock, deposit) and of the owner
//! (`TcpTransport::poll` and `read_held`: take the inbox; try to own the connection,
//! take the inbox again, read; give it back), over a stand-in for the kernel: a
//! socket queue and an edge-triggered epoll registration behind one loom mutex, as
//! the kernel's own locks order arrivals against `epoll_ctl`.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nf-transport
//! --release --lib loom` (scripts/test.sh does). A packet left in the socket while
//! nobody watches it strands the owner, who polls forever: loom fails the model
//! ("Model exceeded maximum number of branches").
//!
//! Checks:
//! 1. The owner takes the connection (as after a send) while three packets arrive;
//!    it polls once directly, gives the connection back, and polls the inbox until
//!    all came: each packet arrives once, in order, whichever thread read it, and
//!    none is stranded.
//!
//!    Mutation that fails it: in `Rx::visit`, drop `st.watched = false;` (the thread
//!    stops watching a lent connection but remembers it as watched, so `hand_back`
//!    does not watch it again). loom: "Model exceeded maximum number of branches.
//!    This is often caused by an algorithm requiring the processor to make progress"
//!    (a later packet arrives unwatched and the owner polls forever). So does
//!    clearing `app` in `hand_back` after releasing the lock instead of under it
//!    (the thread, woken by the new registration, still finds the connection lent,
//!    stops watching it, and then the owner lets go of it).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use loom::sync::{Condvar, Mutex};
use loom::thread;

use super::handoff::{Rx, Visit, Watch};
use super::inbox::Inbox;

/// Packets that arrive in each model.
const PACKETS: u32 = 3;

/// The kernel's side of one connection: bytes waiting in the socket, and the
/// progress thread's epoll registration of it.
#[derive(Default)]
struct Net {
    /// Packets in the socket, not yet read.
    socket: VecDeque<u32>,
    /// Registered with epoll.
    watched: bool,
    /// An event is pending for the progress thread (edge-triggered).
    event: bool,
    /// The model is over: the progress thread returns.
    stop: bool,
}

#[derive(Default)]
struct Kernel {
    net: Mutex<Net>,
    woken: Condvar,
}

impl Kernel {
    /// A packet arrives: into the socket, and an event if epoll watches it.
    fn arrive(&self, seq: u32) {
        let mut net = self.net.lock().unwrap();
        net.socket.push_back(seq);
        if net.watched {
            net.event = true;
            self.woken.notify_all();
        }
    }

    /// The progress thread's `epoll_wait`: true for an event, false once stopped.
    fn wait(&self) -> bool {
        let mut net = self.net.lock().unwrap();
        while !net.event && !net.stop {
            net = self.woken.wait(net).unwrap();
        }
        std::mem::take(&mut net.event)
    }

    fn stop(&self) {
        self.net.lock().unwrap().stop = true;
        self.woken.notify_all();
    }
}

/// The connection's reader: what `Reader` is to a real socket.
struct Conn(Arc<Kernel>);

impl Conn {
    /// Reads every packet in the socket (a non-blocking `recv` until empty).
    fn read(&mut self, into: &mut Vec<u32>) {
        into.extend(self.0.net.lock().unwrap().socket.drain(..));
    }
}

/// The progress thread's epoll.
struct Epoll(Arc<Kernel>);

impl Watch<Conn> for Epoll {
    fn watch(&self, _: &Conn, _token: usize) -> io::Result<()> {
        let mut net = self.0.net.lock().unwrap();
        net.watched = true;
        // Adding a file reports what is already there.
        if !net.socket.is_empty() {
            net.event = true;
            self.0.woken.notify_all();
        }
        Ok(())
    }

    fn unwatch(&self, _: &Conn) -> io::Result<()> {
        let mut net = self.0.net.lock().unwrap();
        net.watched = false;
        net.event = false;
        Ok(())
    }
}

/// What the two threads share: the connection's read side, the inbox, the kernel.
struct Shared {
    rx: Rx<Conn>,
    inbox: Inbox<u32>,
    kernel: Arc<Kernel>,
    epoll: Epoll,
}

/// `Engine::read` for an event on the connection.
fn thread_reads(sh: &Shared) {
    match sh.rx.visit(&sh.epoll).unwrap() {
        Visit::Read(mut st) => {
            let mut batch = Vec::new();
            if let Some(conn) = st.reader.as_mut() {
                conn.read(&mut batch);
            }
            // Rule 2: deposited under the connection's lock.
            sh.inbox.push(&mut batch, 0);
        }
        Visit::Lent => {}
    }
}

/// The owner's polls until every packet came, in order; it reads the connection
/// directly once (`read_held`), then gives it back.
fn owner_polls(sh: &Shared) {
    sh.rx.take();
    let mut taken = VecDeque::new();
    let mut got = Vec::new();
    let mut held = true;
    while got.len() < PACKETS as usize {
        sh.inbox.take_all(&mut taken);
        if taken.is_empty() && held {
            if let Some(mut st) = sh.rx.try_own() {
                // Rule 2: what the thread deposited comes before what we read now.
                sh.inbox.take_all(&mut taken);
                let mut direct = Vec::new();
                if let Some(conn) = st.reader.as_mut() {
                    conn.read(&mut direct);
                }
                taken.extend(direct);
            }
            sh.rx.hand_back(&sh.epoll, 0).unwrap();
            held = false;
        }
        if taken.is_empty() {
            thread::yield_now();
        }
        got.extend(taken.drain(..));
    }
    let expected: Vec<u32> = (0..PACKETS).collect();
    assert_eq!(got, expected, "a packet lost, doubled or out of order");
}

#[test]
fn loom_a_connection_handed_between_owner_and_thread_loses_and_reorders_nothing() {
    loom::model(|| {
        let kernel = Arc::new(Kernel::default());
        let sh = Arc::new(Shared {
            rx: Rx::default(),
            inbox: Inbox::new().unwrap(),
            kernel: Arc::clone(&kernel),
            epoll: Epoll(Arc::clone(&kernel)),
        });
        // Connected: the thread serves it and epoll watches it.
        sh.epoll.watch(&Conn(Arc::clone(&kernel)), 0).unwrap();
        sh.rx.install(Conn(Arc::clone(&kernel)));
        let progress = {
            let sh = Arc::clone(&sh);
            thread::spawn(move || {
                while sh.kernel.wait() {
                    thread_reads(&sh);
                }
            })
        };
        let owner = {
            let sh = Arc::clone(&sh);
            thread::spawn(move || owner_polls(&sh))
        };
        for seq in 0..PACKETS {
            kernel.arrive(seq);
        }
        owner.join().unwrap();
        kernel.stop();
        progress.join().unwrap();
    });
}
