//! [`ByteChannel`]: a bidirectional byte stream over shared memory between two
//! processes of one host — how a rank talks 9P to its node's server without a socket
//! copy per message (as CellFS carried 9P over the Cell's on-chip bus).
//!
//! Memory: one memfd holding two single-producer single-consumer byte rings (layout
//! and access rules 7–10 in [`super::layout`]; the ring protocol itself, sending,
//! receiving and when to sleep and wake, is `channel_ring.rs`, model-checked by
//! `loom_channel.rs`). Wake-ups: four eventfds, one per
//! (ring, reason): a consumer sleeping for data, a producer sleeping for room. Liveness:
//! the unix stream the channel was set up over stays open; it carries nothing more, so
//! when it reports hang-up or end of file the peer has closed or died, and sleepers wake.
//!
//! Set-up (over a connected unix stream):
//!
//! 1. The offering side ([`ByteChannel::offer`], the server) creates the memfd, sizes it,
//!    maps it, writes the header, and creates the four eventfds.
//! 2. It sends one byte with all five descriptors attached (`SCM_RIGHTS`).
//! 3. The joining side ([`ByteChannel::join`], the client) receives them, checks the
//!    header (magic, version, capacity against the file's size) and the seals, and
//!    maps the memfd.
//!
//! Neither side trusts the other (a 9P server serves clients it does not control):
//!
//! - The offerer seals the memfd's size (`F_SEAL_SHRINK`, `F_SEAL_GROW`, then
//!   `F_SEAL_SEAL`) before sending it, so no peer can truncate the memory under the
//!   other's mapping (which would kill it with `SIGBUS`); the joiner refuses memory
//!   that is not sealed.
//! - Each side keeps its own counter (the consumer's head, the producer's tail) in
//!   private memory and only publishes it; the peer's counter is read and checked: a
//!   ring claiming more bytes than it holds, or less room than none, breaks the
//!   protocol and fails the call (`InvalidData`) instead of reading or writing out of
//!   bounds. Garbage bytes are the layer above's to refuse (9P frames are checked).
//!
//! Ring 0 carries joiner → offerer bytes, ring 1 offerer → joiner. One thread may
//! receive while another sends; sends must be serialised by the caller (the 9P server
//! and client both hold a lock around them). [`ByteChannel::close`] may come from any
//! thread and wakes both sides.

use std::fs::File;
use std::io;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::Shutdown;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;

use memmap2::MmapMut;
use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
use rustix::fs::{fcntl_add_seals, fcntl_get_seals, memfd_create, MemfdFlags, SealFlags};
use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::channel_ring::{Doorbells, Rings, DATA, SPACE};
use super::layout::{ChannelGeometry, ChannelView, CHANNEL_MAGIC, CHANNEL_VERSION};

/// Default bytes per ring: 1 MiB, room for a whole default-msize 9P message.
pub const DEFAULT_CAPACITY: usize = 1 << 20;

/// Descriptors sent at set-up: memfd, then the eventfds in `[ring][DATA | SPACE]`
/// order.
const FDS: usize = 5;

/// The four eventfds, `[ring][DATA | SPACE]`, and the unix stream whose hang-up
/// says the channel is closed: the channel's [`Doorbells`].
struct Eventfds {
    wakers: [[OwnedFd; 2]; 2],
    sock: UnixStream,
}

impl Doorbells for Eventfds {
    fn sleep(&self, ring: usize, reason: usize) -> io::Result<bool> {
        let efd = &self.wakers[ring][reason];
        let mut fds = [
            PollFd::new(efd, PollFlags::IN),
            PollFd::new(&self.sock, PollFlags::IN | PollFlags::RDHUP),
        ];
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(true),
            Err(e) => return Err(e.into()),
        }
        if !fds[1].revents().is_empty() {
            return Ok(false);
        }
        let mut counter = [0u8; 8];
        let _ = rustix::io::read(efd, &mut counter);
        Ok(true)
    }

    fn ring(&self, ring: usize, reason: usize) {
        // EAGAIN only if the counter is saturated: the sleeper is awake anyway.
        let _ = rustix::io::write(&self.wakers[ring][reason], &1u64.to_ne_bytes());
    }

    fn hang_up(&self) {
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

/// One end of a shared-memory byte channel (see the [module docs](self)).
pub struct ByteChannel {
    rings: Rings<Eventfds>,
    /// Keeps the memory mapped for the rings' view.
    _map: MmapMut,
}

impl std::fmt::Debug for ByteChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteChannel")
            .field("capacity", &self.capacity())
            .field("rx", &self.rings.rx)
            .finish()
    }
}

/// The seals that keep the memory's size fixed.
const SIZE_SEALS: SealFlags = SealFlags::SHRINK.union(SealFlags::GROW);

fn new_eventfd() -> io::Result<OwnedFd> {
    Ok(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?)
}

fn map(file: &File, geo: ChannelGeometry) -> io::Result<(MmapMut, ChannelView)> {
    // SAFETY: the memfd is shared only with the peer of this channel; its length was
    // set (offer) or checked (join) to hold the whole geometry and is sealed against
    // shrinking (offer seals, join checks), so the mapping stays backed; what the peer
    // writes into it is only ever read through atomics and bounds-checked counters.
    let mut map = unsafe { MmapMut::map_mut(file)? };
    if map.len() < geo.total_len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "byte channel memory is smaller than its header says",
        ));
    }
    // SAFETY: the mapping is page-aligned, holds total_len bytes (checked above), lives
    // as long as the ByteChannel that owns both, and geo was validated by the callers.
    let view = unsafe { ChannelView::new(map.as_mut_ptr(), geo) };
    Ok((map, view))
}

/// Receives the memfd and eventfds of an offer (the first half of step 3).
fn receive_offer(sock: &UnixStream) -> io::Result<(File, [[OwnedFd; 2]; 2])> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    if got.bytes == 0 {
        return Err(bad(
            "the server closed the connection before offering a channel",
        ));
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    if fds.len() != FDS || byte != *b"C" {
        return Err(bad("the peer did not offer a ninefold byte channel"));
    }
    let mut fds = fds.into_iter();
    let mut next = || fds.next().expect("FDS descriptors checked above");
    let file = File::from(next());
    let wakers = [[next(), next()], [next(), next()]];
    Ok((file, wakers))
}

impl ByteChannel {
    /// Steps 1–2 of the set-up: creates a channel of `capacity` bytes per ring and sends
    /// it over `sock` (which then stays open for liveness).
    pub fn offer(sock: UnixStream, capacity: usize) -> io::Result<ByteChannel> {
        let geo = ChannelGeometry { capacity };
        geo.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let memfd = memfd_create(
            "nf-byte-channel",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        let file = File::from(memfd);
        file.set_len(geo.total_len() as u64)?;
        fcntl_add_seals(&file, SIZE_SEALS | SealFlags::SEAL)?;
        let (map, view) = map(&file, geo)?;
        view.init_header();
        let wakers = [
            [new_eventfd()?, new_eventfd()?],
            [new_eventfd()?, new_eventfd()?],
        ];
        let fds = [
            file.as_fd(),
            wakers[0][DATA].as_fd(),
            wakers[0][SPACE].as_fd(),
            wakers[1][DATA].as_fd(),
            wakers[1][SPACE].as_fd(),
        ];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&fds));
        sendmsg(
            &sock,
            &[IoSlice::new(b"C")],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        Ok(ByteChannel {
            rings: Rings::new(view, 0, Eventfds { wakers, sock }),
            _map: map,
        })
    }

    /// Step 3 of the set-up: receives a channel offered over `sock`.
    pub fn join(sock: UnixStream) -> io::Result<ByteChannel> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let (file, wakers) = receive_offer(&sock)?;
        if !fcntl_get_seals(&file)?.contains(SIZE_SEALS) {
            return Err(bad(
                "byte channel memory is not sealed against resizing; refusing it",
            ));
        }
        let len = file.metadata()?.len();
        // Read the header through a minimal mapping first, to learn the geometry.
        let probe = ChannelGeometry { capacity: 64 };
        let (probe_map, probe_view) = map(&file, probe)?;
        let (magic, version, capacity) = probe_view.read_header();
        drop(probe_map);
        if magic != CHANNEL_MAGIC || version != CHANNEL_VERSION {
            return Err(bad("byte channel header: wrong magic or version"));
        }
        let geo = ChannelGeometry {
            capacity: usize::try_from(capacity).map_err(|_| bad("capacity too large"))?,
        };
        geo.validate().map_err(|e| bad(&e))?;
        if (geo.total_len() as u64) > len {
            return Err(bad("byte channel memory is smaller than its header says"));
        }
        let (map, view) = map(&file, geo)?;
        Ok(ByteChannel {
            rings: Rings::new(view, 1, Eventfds { wakers, sock }),
            _map: map,
        })
    }

    /// Bytes per ring.
    pub fn capacity(&self) -> usize {
        self.rings.capacity()
    }

    /// Reads some bytes into `buf`, blocking while there are none; `Ok(0)` once the
    /// channel is closed or the peer is gone and everything it sent has been read.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.rings.recv(buf)
    }

    /// Writes all of `bytes`, blocking while the ring is full; fails once the channel is
    /// closed, or when it must wait for room and the peer is gone (as with a socket,
    /// bytes that fit may still be written after the peer went).
    pub fn send(&self, bytes: &[u8]) -> io::Result<()> {
        self.rings.send(bytes)
    }

    /// Writes `parts` one after another as [`ByteChannel::send`] writes their
    /// concatenation, but publishes them together: a frame's head and its data that
    /// fit in the ring are one publication and at most one wake-up of the peer.
    pub fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        self.rings.send_parts(parts)
    }

    /// Closes the channel both ways: blocked calls on both sides return. Idempotent.
    pub fn close(&self) {
        self.rings.close();
    }
}

impl Drop for ByteChannel {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::thread;

    fn pair(capacity: usize) -> (ByteChannel, ByteChannel) {
        let (a, b) = UnixStream::pair().unwrap();
        let offer = thread::spawn(move || ByteChannel::offer(a, capacity).unwrap());
        let joined = ByteChannel::join(b).unwrap();
        (offer.join().unwrap(), joined)
    }

    #[test]
    fn bytes_flow_both_ways_through_a_small_ring_in_order() {
        let (server, client) = pair(64);
        let client = Arc::new(client);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let sender = {
            let client = Arc::clone(&client);
            let data = data.clone();
            thread::spawn(move || {
                client.send(&data).unwrap();
                // Again as parts, some empty, each ring-full taking pieces of several.
                let parts: [&[u8]; 6] = [
                    &data[..11],
                    &[],
                    &data[11..12],
                    &data[12..200],
                    &data[200..],
                    &[],
                ];
                client.send_parts(&parts).unwrap();
            })
        };
        assert_eq!(receive(&server, data.len()), data);
        assert_eq!(receive(&server, data.len()), data, "sent as parts");
        sender.join().unwrap();
        let mut buf = [0u8; 100];
        server.send(b"reply").unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"reply");
    }

    /// Receives exactly `len` bytes.
    fn receive(end: &ByteChannel, len: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 100];
        while got.len() < len {
            let n = end.recv(&mut buf[..(len - got.len()).min(100)]).unwrap();
            assert!(n > 0, "end of file after {} of {len} bytes", got.len());
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    /// How often the data bell of ring `ring` rang since last asked (the eventfd's
    /// counter, which nobody else reads here).
    fn data_bells(end: &ByteChannel, ring: usize) -> u64 {
        let mut counter = [0u8; 8];
        match rustix::io::read(&end.rings.bells.wakers[ring][DATA], &mut counter) {
            Ok(_) => u64::from_ne_bytes(counter),
            Err(rustix::io::Errno::AGAIN) => 0,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn parts_across_the_wrap_are_one_publication_and_one_bell() {
        let (server, client) = pair(64);
        // The server writes ring 1: move its position near the end, so the next
        // message wraps.
        server.send(&[0u8; 50]).unwrap();
        receive(&client, 50);
        assert_eq!(data_bells(&server, 1), 0, "nobody was waiting");
        // From here on the client counts as asleep for data: every publication rings.
        let waiting = &server.rings.view.counters(1).data_waiting;
        waiting.store(1, Ordering::SeqCst);
        let head: Vec<u8> = (1..=11).collect();
        let data: Vec<u8> = (100..130).collect();
        server.send_parts(&[&head, &[], &data, &[]]).unwrap();
        assert_eq!(data_bells(&server, 1), 1, "head and data: one bell");
        let whole = [&head[..], &data[..]].concat();
        assert_eq!(receive(&client, whole.len()), whole);
        // The same bytes sent whole arrive the same (wrapping again at 128).
        server.send(&whole).unwrap();
        assert_eq!(receive(&client, whole.len()), whole);
        waiting.store(0, Ordering::SeqCst);
    }

    #[test]
    fn close_wakes_a_blocked_receiver_and_the_peer() {
        let (server, client) = pair(64);
        let server = Arc::new(server);
        let s2 = Arc::clone(&server);
        let blocked = thread::spawn(move || s2.recv(&mut [0u8; 8]).unwrap());
        thread::sleep(std::time::Duration::from_millis(50));
        client.send(b"last").unwrap();
        drop(client);
        assert_eq!(
            blocked.join().unwrap(),
            4,
            "data sent before closing arrives"
        );
        assert_eq!(server.recv(&mut [0u8; 8]).unwrap(), 0, "then end of file");
        // Like a socket, a send may still fill the ring; it fails once it must wait.
        assert!((0..4).any(|_| server.send(&[0u8; 64]).is_err()));
        let (a, b) = pair(64);
        let a = Arc::new(a);
        let a2 = Arc::clone(&a);
        let blocked = thread::spawn(move || a2.recv(&mut [0u8; 8]).unwrap());
        thread::sleep(std::time::Duration::from_millis(50));
        a.close();
        assert_eq!(blocked.join().unwrap(), 0);
        drop(b);
    }

    #[test]
    fn a_non_channel_peer_is_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        use std::io::Write;
        (&a).write_all(b"C").unwrap();
        let err = ByteChannel::join(b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(
            ByteChannel::offer(a, 100).is_err(),
            "capacity must be a power of two"
        );
    }
    #[test]
    fn the_offered_memory_cannot_be_resized() {
        let (a, b) = UnixStream::pair().unwrap();
        let offer = thread::spawn(move || ByteChannel::offer(a, 64).unwrap());
        let (memory, _wakers) = receive_offer(&b).unwrap();
        let server = offer.join().unwrap();
        assert!(memory.set_len(0).is_err(), "shrink");
        assert!(memory.set_len(1 << 30).is_err(), "grow");
        server.send(b"still here").unwrap();
    }

    #[test]
    fn counters_scribbled_by_the_peer_fail_the_call_without_touching_memory_out_of_bounds() {
        let (server, client) = pair(64);
        // The client is ring 0's producer: it claims far more bytes than the ring holds.
        client
            .rings
            .view
            .counters(0)
            .tail
            .store(1 << 40, Ordering::SeqCst);
        let err = server.recv(&mut [0u8; 4096]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        // It is ring 1's consumer: it claims to have read what was never sent.
        client
            .rings
            .view
            .counters(1)
            .head
            .store(1 << 40, Ordering::SeqCst);
        let err = server.send(&[1u8; 32]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        // A head moved backwards (more room claimed than exists) is caught as well.
        let (server, client) = pair(64);
        server.send(&[1u8; 64]).unwrap();
        client
            .rings
            .view
            .counters(1)
            .head
            .store(u64::MAX - 1000, Ordering::SeqCst);
        assert!(server.send(&[1u8; 8]).is_err());
    }

    #[test]
    fn unsealed_memory_is_refused_by_the_joiner() {
        let (a, b) = UnixStream::pair().unwrap();
        let memfd = memfd_create("plain", MemfdFlags::CLOEXEC).unwrap();
        let file = File::from(memfd);
        file.set_len(1 << 16).unwrap();
        let efds: Vec<OwnedFd> = (0..4).map(|_| new_eventfd().unwrap()).collect();
        let mut fds = vec![file.as_fd()];
        fds.extend(efds.iter().map(|e| e.as_fd()));
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&fds));
        sendmsg(&a, &[IoSlice::new(b"C")], &mut control, SendFlags::NOSIGNAL).unwrap();
        let err = ByteChannel::join(b).unwrap_err();
        assert!(err.to_string().contains("not sealed"), "{err}");
    }
}
