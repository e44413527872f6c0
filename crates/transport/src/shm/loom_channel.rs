//! Model checks of the byte channel's ring protocol (rules 8–10 of `layout.rs`, the
//! steps in `channel_ring.rs`) under loom: the real sending, receiving and closing
//! code over channel memory on the heap whose counters and flags are loom's atomics
//! (`sync.rs`), each byte position shadowed by a loom cell (`layout.rs`,
//! `ByteShadow`), and doorbells that are a loom mutex and condvar standing in for the
//! eventfds and the unix stream's hang-up.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nf-transport
//! --release --lib loom` (scripts/test.sh does). A lost wake-up leaves both sides
//! asleep on the condvar, which loom reports as a deadlock; a byte read before its
//! publication or overwritten before it was read is two unordered accesses to its
//! shadow cell, which loom reports as a causality violation.
//!
//! Checks:
//! 1. One side sends a 100-byte request through a 64-byte ring (so it wraps, and the
//!    sender sleeps for room), as two parts (an 11-byte head and its data, as a
//!    `Twrite` goes: `Rings::send_parts`), while the other reads it 48 bytes at a time
//!    (so it sleeps for data), then answers with 70 bytes the other way, whole: every
//!    byte arrives once, in order, and neither side sleeps forever.
//!
//!    Mutation that fails it: in `Rings::send`, drop the `fence(Ordering::SeqCst)`
//!    between storing `tail` and loading `data_waiting`. loom: "deadlock; threads =
//!    [(0, Blocked), (1, Blocked)]" (each side read the other's word from before its
//!    store: the sender saw nobody waiting, the receiver saw no data, and slept).
//!    Storing `tail` with `Relaxed` instead of `Release` fails it too: "Causality
//!    violation: Concurrent read and write accesses to `UnsafeCell`" (the receiver
//!    read bytes whose writing it was not ordered after). In `Rings::send_parts`,
//!    writing every piece at `tail` instead of after the one before fails it too:
//!    "bytes lost, doubled or reordered".
//! 2. One side sends 10 bytes and closes while the other sends 100 (more than fit, and
//!    nobody reads them) from one thread and receives from another: the blocked send
//!    fails instead of sleeping forever, and the receiver gets the 10 bytes and then
//!    end of file, whether it slept before the close or came after it.
//!
//!    Mutation that fails it: in `Rings::close`, drop `self.bells.hang_up()`. loom:
//!    "deadlock; threads = [(Id(0), Blocked), (Id(1), Terminated), (Id(2),
//!    Blocked)]" (the sender sleeps for room nobody will make, the receiver for
//!    data). Returning end of file on a hang-up without re-reading `tail` fails it
//!    too: the model's "what was sent before the close arrives" (a receiver woken by
//!    the hang-up drops the 10 bytes that came before it).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::Arc;

use loom::sync::{Condvar, Mutex};
use loom::thread;

use super::channel_ring::{Doorbells, Rings};
use super::layout::{ByteShadow, ChannelGeometry, ChannelView};

/// Bytes per ring: the smallest a channel may have.
const CAPACITY: usize = 64;

/// A channel's memory on the heap, with its byte shadow.
struct Memory {
    base: *mut u8,
    layout: Layout,
    shadow: ByteShadow,
}

// SAFETY: the memory is only reached through atomics and the ownership rules 8–9 of
// `layout.rs`, which do not depend on the thread; it is freed once, on drop.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

impl Memory {
    fn new() -> Arc<Memory> {
        let geo = ChannelGeometry { capacity: CAPACITY };
        geo.validate().unwrap();
        let layout = Layout::from_size_align(geo.total_len(), 4096).unwrap();
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null());
        Arc::new(Memory {
            base,
            layout,
            shadow: ByteShadow::new(CAPACITY),
        })
    }

    /// A view on it; the first call also constructs its atomics.
    fn view(&self) -> ChannelView {
        let geo = ChannelGeometry { capacity: CAPACITY };
        // SAFETY: page-aligned, `total_len` bytes and the shadow, both freed only when
        // the last Arc goes, which the ends hold.
        unsafe { ChannelView::model(self.base, geo, &self.shadow) }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.base, self.layout) }
    }
}

/// The eventfds and the liveness stream of both sides: a bell per (ring, reason)
/// that stays rung until a sleeper takes it (an eventfd's counter), and a hang-up.
#[derive(Default)]
struct Bells {
    state: Mutex<Rung>,
    changed: Condvar,
}

#[derive(Default)]
struct Rung {
    bells: [[bool; 2]; 2],
    hung_up: bool,
}

/// One end: the shared bells and the memory it keeps alive.
struct End {
    bells: Arc<Bells>,
    _memory: Arc<Memory>,
}

impl Doorbells for End {
    fn sleep(&self, ring: usize, reason: usize) -> io::Result<bool> {
        let mut st = self.bells.state.lock().unwrap();
        loop {
            // The real poll reports the hang-up first, as here.
            if st.hung_up {
                return Ok(false);
            }
            if std::mem::take(&mut st.bells[ring][reason]) {
                return Ok(true);
            }
            st = self.bells.changed.wait(st).unwrap();
        }
    }

    fn ring(&self, ring: usize, reason: usize) {
        self.bells.state.lock().unwrap().bells[ring][reason] = true;
        self.bells.changed.notify_all();
    }

    fn hang_up(&self) {
        self.bells.state.lock().unwrap().hung_up = true;
        self.bells.changed.notify_all();
    }
}

/// The offering side (reads ring 0) and the joining side (reads ring 1).
fn pair() -> (Rings<End>, Rings<End>) {
    let memory = Memory::new();
    let view = memory.view();
    let bells = Arc::new(Bells::default());
    let end = |rx| {
        let bells = Arc::clone(&bells);
        let _memory = Arc::clone(&memory);
        Rings::new(view, rx, End { bells, _memory })
    };
    (end(0), end(1))
}

/// Byte `i` of a stream.
fn byte(i: usize) -> u8 {
    (i * 7 + 1) as u8
}

/// Receives exactly `len` bytes from `end`, checking they are the stream's first.
fn receive(end: &Rings<End>, len: usize) {
    let mut got = Vec::new();
    let mut buf = [0u8; 48];
    while got.len() < len {
        let n = end.recv(&mut buf).unwrap();
        assert!(n > 0, "end of file after {} of {len} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    let expected: Vec<u8> = (0..len).map(byte).collect();
    assert_eq!(got, expected, "bytes lost, doubled or reordered");
}

/// Sends the stream's first `len` bytes through `end`.
fn send(end: &Rings<End>, len: usize) {
    let data: Vec<u8> = (0..len).map(byte).collect();
    end.send(&data).unwrap();
}

/// Sends the stream's first `len` bytes through `end` as a 9P frame's 11-byte head
/// and its data, two parts.
fn send_parts(end: &Rings<End>, len: usize) {
    let data: Vec<u8> = (0..len).map(byte).collect();
    let (head, rest) = data.split_at(11);
    end.send_parts(&[head, rest]).unwrap();
}

#[test]
fn loom_bytes_cross_wrapping_rings_once_in_order_and_no_wake_up_is_lost() {
    // A request and its reply, as 9P uses the channel: both longer than a ring.
    const REQUEST: usize = 100;
    const REPLY: usize = 70;
    loom::model(|| {
        let (server, client) = pair();
        let client = thread::spawn(move || {
            send_parts(&client, REQUEST);
            receive(&client, REPLY);
        });
        receive(&server, REQUEST);
        send(&server, REPLY);
        client.join().unwrap();
    });
}

#[test]
fn loom_a_close_wakes_a_blocked_sender_and_receiver_after_the_last_bytes() {
    loom::model(|| {
        let (server, client) = pair();
        let server = Arc::new(server);
        let closer = thread::spawn(move || {
            send(&client, 10);
            client.close();
        });
        // One thread of the server receives while another sends (as the 9P server's
        // reader and writer do).
        let reader = {
            let server = Arc::clone(&server);
            thread::spawn(move || {
                let mut got = Vec::new();
                let mut buf = [0u8; 48];
                loop {
                    let n = server.recv(&mut buf).unwrap();
                    if n == 0 {
                        return got;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            })
        };
        let err = server.send(&[0u8; 100]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
        let expected: Vec<u8> = (0..10).map(byte).collect();
        let got = reader.join().unwrap();
        assert_eq!(
            got, expected,
            "what was sent before the close arrives, then the end"
        );
        closer.join().unwrap();
    });
}
