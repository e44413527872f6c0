//! Model checks of what the owner's thread and the progress thread hand each other
//! (the locks and atomics are loom's, `sync.rs`), over stand-ins for the kernel: a
//! socket and an edge-triggered epoll registration behind one loom mutex, as the
//! kernel's own locks order arrivals and room against `epoll_ctl`.
//!
//! - Reading (`handoff.rs` rules 1–3, `inbox.rs` rules 1–3): the real [`Rx`] and
//!   [`Inbox`], driven by the steps of the progress thread (`Engine::read`: visit,
//!   read under the lock, deposit) and of the owner (`TcpTransport::poll` and
//!   `read_held`: take the inbox; try to own the connection, take the inbox again,
//!   read; give it back).
//! - Writing (`tx.rs` rules 1–2): the real [`Peer::try_send`] on the owner's side and
//!   [`Peer::drain`] on the progress thread's writable events.
//! - The inbox's bound (`inbox.rs` rule 4): the real [`Inbox::stall`] and
//!   [`Inbox::take_all`], with a loom condvar for the owner's `mio::Waker`.
//! - Parking (`park.rs` step 2): the real [`Bell`](super::park::Bell) and
//!   [`Inbox::push`], with `TcpTransport::park`'s announce-then-check.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nf-transport
//! --release --lib loom` (scripts/test.sh does). A packet left in the socket while
//! nobody watches it strands the owner, who polls forever: loom fails the model
//! ("Model exceeded maximum number of branches"). Bytes left queued with no writable
//! event to come leave the peer and the progress thread asleep: loom reports a
//! deadlock.
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
//! 2. The owner sends one 20-byte frame through an 8-byte socket buffer while the
//!    peer reads (each read a writable event for the progress thread): the frame
//!    arrives whole and in order, whoever wrote each part, and nothing stays queued.
//!
//!    Mutation that fails it: in `Peer::try_send`, drop the
//!    `self.backlog.store(true, Ordering::SeqCst);` before the last write (rule 2:
//!    the flag is then only set after it). loom: "deadlock; threads = [(Id(0),
//!    Blocked), (Id(1), Blocked), (Id(2), Terminated)]" (the edge after the last
//!    write came while the flag was still down; the progress thread skipped it).
//! 3. The progress thread deposits three 1-byte arrivals into an inbox bounded at one
//!    byte, stalling when over it, while the owner takes them: the thread is always
//!    woken, and everything arrives in order.
//!
//!    Mutation that fails it: in `Inbox::stall`, drop the `fence(Ordering::SeqCst)`
//!    after storing `stalled`. loom: "Model exceeded maximum number of branches" (the
//!    thread read `bytes` from before the owner's take, the owner `stalled` from
//!    before the store: the thread waits for a wake-up that never comes, the owner
//!    polls forever). The code before the fences (`SeqCst` store and load, no fence)
//!    fails the same way under loom, which treats `SeqCst` loads and stores as
//!    acquire/release: the fences are what it can check.
//! 4. An owner parks while the progress thread deposits an arrival: either the owner
//!    sees the arrival before it would sleep, or its bell rings.
//!
//!    Mutation that fails it: in `Bell::ring_if_parked`, drop the
//!    `fence(Ordering::SeqCst)` before loading `parked`. loom: "the owner would sleep
//!    through the arrival" (the model's assertion). The code before the fences
//!    (`SeqCst` store and loads alone) fails the same way under loom.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::sync::Arc;

use loom::sync::{Condvar, Mutex};
use loom::thread;

use super::handoff::{Rx, Visit, Watch};
use super::inbox::Inbox;
use super::tx::{Peer, Wire};
use super::wire::Header;
use crate::SendStatus;

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

/// Bytes the model's socket buffer holds: a frame takes several writes.
const ROOM: usize = 8;

/// The kernel's side of the sending direction: the socket's send buffer, emptied by
/// the peer, and the writable events epoll gives the progress thread.
#[derive(Default)]
struct Pipe {
    flow: Mutex<Flow>,
    changed: Condvar,
}

#[derive(Default)]
struct Flow {
    /// Bytes written, not yet read by the peer.
    buffer: Vec<u8>,
    /// Bytes the peer read.
    received: Vec<u8>,
    /// A writable event is pending for the progress thread (edge-triggered).
    event: bool,
    /// The model is over: the progress thread returns.
    stop: bool,
}

impl Wire for Pipe {
    fn send(&self, parts: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut flow = self.flow.lock().unwrap();
        let room = ROOM - flow.buffer.len();
        if room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let n = bytes.len().min(room);
        flow.buffer.extend_from_slice(&bytes[..n]);
        self.changed.notify_all();
        Ok(n)
    }

    fn shutdown(&self, _: Shutdown) -> io::Result<()> {
        Ok(())
    }
}

impl Pipe {
    /// The peer reads until `len` bytes came; each read makes room, a writable edge.
    fn receive(&self, len: usize) -> Vec<u8> {
        let mut flow = self.flow.lock().unwrap();
        while flow.received.len() < len {
            if flow.buffer.is_empty() {
                flow = self.changed.wait(flow).unwrap();
                continue;
            }
            let bytes = std::mem::take(&mut flow.buffer);
            flow.received.extend(bytes);
            flow.event = true;
            self.changed.notify_all();
        }
        std::mem::take(&mut flow.received)
    }

    /// The progress thread's `epoll_wait`: true for an event, false once stopped.
    fn wait(&self) -> bool {
        let mut flow = self.flow.lock().unwrap();
        while !flow.event && !flow.stop {
            flow = self.changed.wait(flow).unwrap();
        }
        std::mem::take(&mut flow.event)
    }

    fn stop(&self) {
        self.flow.lock().unwrap().stop = true;
        self.changed.notify_all();
    }
}

#[test]
fn loom_bytes_queued_by_a_send_are_written_out_by_the_thread_never_stranded() {
    // One frame of 8 + 12 bytes through an 8-byte socket buffer.
    const PAYLOAD: [u8; 12] = [7; 12];
    loom::model(|| {
        let pipe = Arc::new(Pipe::default());
        let peer = Arc::new(Peer::<Pipe>::new(1));
        assert!(peer.install(Arc::clone(&pipe), "127.0.0.1:1".parse().unwrap()));
        let inbox = Arc::new(Inbox::new().unwrap());
        let progress = {
            let (pipe, peer, inbox) = (Arc::clone(&pipe), Arc::clone(&peer), Arc::clone(&inbox));
            thread::spawn(move || {
                while pipe.wait() {
                    peer.drain(&inbox);
                }
            })
        };
        let owner = {
            let (peer, inbox) = (Arc::clone(&peer), Arc::clone(&inbox));
            thread::spawn(move || {
                let sent = peer.try_send(&[], &PAYLOAD, 1 << 20, &inbox).unwrap();
                assert_eq!(sent, SendStatus::Sent);
            })
        };
        let mut frame = Header::data(0, PAYLOAD.len()).encode().to_vec();
        frame.extend_from_slice(&PAYLOAD);
        assert_eq!(
            pipe.receive(frame.len()),
            frame,
            "the frame arrives whole, in order"
        );
        owner.join().unwrap();
        pipe.stop();
        progress.join().unwrap();
    });
}

/// How the owner wakes the progress thread (its `mio::Waker`).
#[derive(Default)]
struct Waker {
    woken: Mutex<bool>,
    changed: Condvar,
}

impl Waker {
    fn wake(&self) {
        *self.woken.lock().unwrap() = true;
        self.changed.notify_all();
    }

    /// The progress thread's `epoll_wait` for the waker alone.
    fn wait(&self) {
        let mut woken = self.woken.lock().unwrap();
        while !*woken {
            woken = self.changed.wait(woken).unwrap();
        }
        *woken = false;
    }
}

#[test]
fn loom_a_progress_thread_stalled_on_a_full_inbox_is_always_woken() {
    // Three 1-byte arrivals into an inbox that holds 1 byte: the thread stalls after
    // the second until the owner takes them.
    const ARRIVALS: u32 = 3;
    const LIMIT: usize = 1;
    loom::model(|| {
        let inbox = Arc::new(Inbox::<u32>::new().unwrap());
        let waker = Arc::new(Waker::default());
        let progress = {
            let (inbox, waker) = (Arc::clone(&inbox), Arc::clone(&waker));
            thread::spawn(move || {
                for seq in 0..ARRIVALS {
                    // `Engine::read`: deposit; over the limit, stall unless drained.
                    inbox.push(&mut vec![seq], 1);
                    if inbox.over(LIMIT) && inbox.stall(LIMIT) {
                        waker.wait();
                    }
                }
            })
        };
        let mut taken = VecDeque::new();
        while taken.len() < ARRIVALS as usize {
            if inbox.take_all(&mut taken) {
                waker.wake();
            }
            if taken.len() < ARRIVALS as usize {
                thread::yield_now();
            }
        }
        assert_eq!(taken, (0..ARRIVALS).collect::<VecDeque<_>>());
        progress.join().unwrap();
    });
}

#[test]
fn loom_an_arrival_is_seen_by_a_parking_owner_or_rings_its_bell() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::<u32>::new().unwrap());
        let depositor = {
            let inbox = Arc::clone(&inbox);
            thread::spawn(move || inbox.push(&mut vec![0], 1))
        };
        // `TcpTransport::park`: announce, then check the inbox; sleep only if empty.
        inbox.bell.announce();
        let seen = inbox.waiting();
        // Asleep (or not), the owner is up once the deposit is done.
        depositor.join().unwrap();
        let rung = inbox.bell.leave();
        assert!(seen || rung, "the owner would sleep through the arrival");
    });
}
