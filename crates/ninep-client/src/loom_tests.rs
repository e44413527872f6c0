//! Model checks of how callers and the reader thread hand receiving to each other
//! (`rpc.rs`, module docs): the real [`Rpc`], [`PendingCall`] and reply slots, with
//! loom's locks and condition variables (`sync.rs`), over a model transport.
//!
//! The transport is a model, not a real one: two byte pipes (a loom mutex and condition
//! variable each) between the client and a "server" thread that decodes requests and
//! answers them. It can wait until readable, as sockets can, so callers receive their
//! own replies and the reader thread receives for the others. loom has no clock:
//! waits with a deadline never time out (`Condvar::wait_timeout` is `wait`), so the
//! reader thread's idle check never runs and a wake-up it would have papered over is
//! a deadlock here; the models wait without deadlines.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3
//! cargo test -p nf-ninep-client --release --lib loom` (scripts/test.sh does). A lost
//! wake-up leaves every thread blocked: loom reports a deadlock.
//!
//! Checks (each test's doc names a one-line mutation of `rpc.rs` that fails it, and
//! loom's report, `Blocked(Location(None))` shortened to `Blocked`; thread 0 is the
//! model's main thread, 1 the reader thread):
//!
//! 1. Two callers, each with a call in flight, and the reader thread, the server
//!    answering in the order the requests came ([`loom_two_calls_answered_in_order`])
//!    or the other way round ([`loom_two_calls_answered_reversed`]): each call returns
//!    its own reply, whoever received it, and [`Rpc::close`] then ends the reader.
//! 2. The server reads both requests and closes the connection while both calls wait
//!    ([`loom_server_closes_while_calls_wait`]): each returns `Disconnected`, the
//!    reader thread ends, and the connection reads as closed.
//! 3. [`Rpc::close`] while a call waits on a server that never answers
//!    ([`loom_close_races_a_waiting_call`]): the call returns `Disconnected` and the
//!    reader thread ends.
//!
//! `Rpc::fail` hangs up the waiting calls in tag order: with the map's random order
//! (`waiting.clear()`) loom's replays diverge and it panics "expected to be able to
//! acquire lock" in check 2.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use loom::sync::{Condvar, Mutex};
use loom::thread;
use nf_link::Transport;
use nf_ninep::frame::{encode_frame, FrameDecoder};
use nf_ninep::message::{Rlerror, Rmessage, Tclunk, Tmessage};

use crate::error::ClientError;
use crate::rpc::{PendingCall, Rpc};
use crate::sync::lock;

/// The models' message size: small, as nothing big is sent.
const MSIZE: u32 = 4096;

/// One direction of the model byte stream.
struct Pipe {
    state: Mutex<PipeState>,
    /// Wakes the side waiting for bytes (or the end).
    ready: Condvar,
}

struct PipeState {
    bytes: VecDeque<u8>,
    /// Either side closed the stream: reads return 0, writes fail.
    closed: bool,
}

impl Pipe {
    fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(PipeState {
                bytes: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        })
    }

    /// Appends `parts` at once (one frame is never split), or fails once closed.
    fn write(&self, parts: &[&[u8]]) -> io::Result<()> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        for part in parts {
            s.bytes.extend(part.iter());
        }
        drop(s);
        self.ready.notify_all();
        Ok(())
    }

    /// Whether a read would return without blocking; waits until it would if `block`.
    fn readable(&self, block: bool) -> bool {
        let mut s = lock(&self.state);
        while block && s.bytes.is_empty() && !s.closed {
            s = self.ready.wait(s).unwrap();
        }
        !s.bytes.is_empty() || s.closed
    }

    /// Reads what is there into `buf`, waiting for at least a byte; 0 once closed.
    fn read(&self, buf: &mut [u8]) -> usize {
        let mut s = lock(&self.state);
        while s.bytes.is_empty() && !s.closed {
            s = self.ready.wait(s).unwrap();
        }
        if s.closed {
            return 0;
        }
        let n = buf.len().min(s.bytes.len());
        for (to, from) in buf.iter_mut().zip(s.bytes.drain(..n)) {
            *to = from;
        }
        n
    }

    /// Closes the stream; what was not read is lost, as at a shut-down socket.
    fn close(&self) {
        let mut s = lock(&self.state);
        s.closed = true;
        s.bytes.clear();
        drop(s);
        self.ready.notify_all();
    }
}

/// The client's end of the model connection.
struct ModelTransport {
    /// Requests, to the server.
    up: Arc<Pipe>,
    /// Replies, from the server.
    down: Arc<Pipe>,
}

impl Transport for ModelTransport {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.down.read(buf))
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        self.up.write(&[bytes])
    }

    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        self.up.write(parts)
    }

    fn close(&self) {
        self.up.close();
        self.down.close();
    }

    fn can_wait_readable(&self) -> bool {
        true
    }

    /// Without a deadline, waits; with one, only looks (loom has no clock: every
    /// deadline has passed).
    fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        Ok(self.down.readable(timeout.is_none()))
    }
}

/// The server's end: decodes requests, encodes replies.
struct Server {
    up: Arc<Pipe>,
    down: Arc<Pipe>,
    /// Request bytes not decoded yet.
    pending: Vec<u8>,
}

impl Server {
    /// The next request and its tag; `None` once the client closed the connection.
    fn request(&mut self) -> Option<(u16, Tmessage)> {
        let decoder = FrameDecoder::new(MSIZE);
        loop {
            if let Some((frame, used)) = decoder.decode::<Tmessage>(&self.pending).unwrap() {
                self.pending.drain(..used);
                return Some((frame.tag, frame.body));
            }
            let mut chunk = [0u8; 64];
            let n = self.up.read(&mut chunk);
            if n == 0 {
                return None;
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// Answers the request under `tag`: a `Tclunk` of fid `f` gets `Rlerror(f)`, so each
    /// caller can tell its own reply.
    fn answer(&self, tag: u16, request: Tmessage) {
        let Tmessage::Tclunk(Tclunk { fid }) = request else {
            panic!("the models send only Tclunk, not {request:?}");
        };
        let reply = Rmessage::from(Rlerror { ecode: fid });
        let mut frame = Vec::new();
        encode_frame(tag, &reply, MSIZE, &mut frame).unwrap();
        // The client may have closed already; it no longer waits then.
        let _ = self.down.write(&[&frame]);
    }

    /// Closes the connection, as a server that goes away.
    fn hang_up(&self) {
        self.up.close();
        self.down.close();
    }
}

/// A model connection: an [`Rpc`] over it with its reader thread running, and the
/// server's end.
fn connect() -> (Arc<Rpc>, thread::JoinHandle<()>, Server) {
    let (up, down) = (Pipe::new(), Pipe::new());
    let server = Server {
        up: Arc::clone(&up),
        down: Arc::clone(&down),
        pending: Vec::new(),
    };
    let rpc = Rpc::new(Arc::new(ModelTransport { up, down }), MSIZE);
    let reader = {
        let rpc = Arc::clone(&rpc);
        thread::spawn(move || rpc.read_replies())
    };
    (rpc, reader, server)
}

/// Starts a `Tclunk` of `fid` (the server answers `Rlerror(fid)`).
fn start(rpc: &Arc<Rpc>, fid: u32) -> PendingCall {
    rpc.start("clunk", &Tclunk { fid }.into()).unwrap()
}

/// Fails unless a call ended with [`ClientError::Disconnected`].
fn assert_disconnected(got: Result<Rmessage, ClientError>) {
    assert!(
        matches!(got, Err(ClientError::Disconnected { .. })),
        "{got:?}"
    );
}

/// Two calls from two threads at once; the server answers them in the order they
/// came, or reversed; each must get its own reply.
fn two_calls(reversed: bool) {
    loom::model(move || {
        let (rpc, reader, mut server) = connect();
        let server = thread::spawn(move || {
            let first = server.request().unwrap();
            let second = server.request().unwrap();
            let (a, b) = if reversed {
                (second, first)
            } else {
                (first, second)
            };
            server.answer(a.0, a.1);
            server.answer(b.0, b.1);
            assert!(server.request().is_none(), "no third request");
        });
        let other = {
            let rpc = Arc::clone(&rpc);
            thread::spawn(move || start(&rpc, 2).wait().unwrap())
        };
        let mine = start(&rpc, 1).wait().unwrap();
        assert_eq!(mine, Rmessage::from(Rlerror { ecode: 1 }));
        let theirs = other.join().unwrap();
        assert_eq!(theirs, Rmessage::from(Rlerror { ecode: 2 }));
        rpc.close();
        reader.join().unwrap();
        server.join().unwrap();
    });
}

/// Check 1 (module docs), the server answering in the order the requests came.
///
/// Mutation that fails it: in `receive_own`, drop the `rpc.wake_reader()` after a
/// caller got its reply (the reader slept while the caller received; the other call
/// is left waiting on its slot with nobody receiving). loom: "deadlock; threads =
/// [(Id(0), Blocked), (Id(1), Blocked), (Id(2), Blocked), (Id(3), Blocked)]". So does
/// dropping `t.reader_asleep = true;` in `reader_has_work` (then nobody wakes it).
#[test]
fn loom_two_calls_answered_in_order() {
    two_calls(false);
}

/// Check 1 (module docs), the server answering the later request first.
///
/// Mutation that fails it: in `Rpc::close`, drop the `self.wake.notify_all()` (the
/// reader thread, asleep with no call waiting, never sees `closing`). loom:
/// "deadlock; threads = [(Id(0), Blocked), (Id(1), Blocked), (Id(2), Terminated),
/// (Id(3), Terminated)]" (main joins the reader, the reader sleeps). It fails the
/// in-order variant the same way. Dropping the `wake_reader()` in `receive_own`, which
/// fails the in-order variant, passes this one within three preemptions.
#[test]
fn loom_two_calls_answered_reversed() {
    two_calls(true);
}

/// Check 2 (module docs): the server goes away while two calls wait.
///
/// Mutation that fails it: in `Rpc::fail`, drop the `self.wake.notify_all()` (a caller
/// that received the end fails the connection while the reader thread sleeps; it
/// never learns). loom: "deadlock; threads = [(Id(0), Blocked), (Id(1), Blocked),
/// (Id(2), Terminated), (Id(3), Terminated)]" (main joins the sleeping reader).
#[test]
fn loom_server_closes_while_calls_wait() {
    loom::model(|| {
        let (rpc, reader, mut server) = connect();
        let server = thread::spawn(move || {
            server.request().unwrap();
            server.request().unwrap();
            server.hang_up();
        });
        let other = {
            let rpc = Arc::clone(&rpc);
            thread::spawn(move || start(&rpc, 2).wait())
        };
        let mine = start(&rpc, 1).wait();
        assert_disconnected(mine);
        let theirs = other.join().unwrap();
        assert_disconnected(theirs);
        reader.join().unwrap();
        server.join().unwrap();
        assert!(rpc.is_closed());
    });
}

/// Check 3 (module docs): the connection is closed while a call waits on a server
/// that never answers (nobody reads the request).
///
/// Mutation that fails it: in `Rpc::fail`, hang up no call (`let mut gone: Vec<(u16,
/// ReplyTx)> = Vec::new();` for the `drain`): when the reader thread receives the
/// end, the call sleeping on its slot is never woken. loom: "deadlock; threads =
/// [(Id(0), Blocked), (Id(1), Terminated), (Id(2), Blocked)]" (main joins the call's
/// thread). Check 2 fails the same way. So does dropping `self.transport.close()` in
/// `Rpc::close` (whoever receives waits on the pipe forever; check 1 fails too).
/// Dropping `close`'s `notify_all` passes here: the waiting call's `wake_reader()`
/// wakes the reader as well.
#[test]
fn loom_close_races_a_waiting_call() {
    loom::model(|| {
        let (rpc, reader, _server) = connect();
        let call = start(&rpc, 1);
        let waiter = thread::spawn(move || call.wait());
        rpc.close();
        let got = waiter.join().unwrap();
        assert_disconnected(got);
        reader.join().unwrap();
        assert!(rpc.is_closed());
    });
}
