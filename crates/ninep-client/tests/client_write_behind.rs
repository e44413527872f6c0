//! Writing behind (`File::copy_from_behind`) against a real server: several writes in
//! flight to a file whose writes land at their offset, one at a time and in order to
//! a stream, and every byte where it belongs either way.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nf_ninep::types::QidType;
use nf_ninep::LOpenFlags;
use nf_ninep_client::{ClientConfig, CopyError, File};
use nf_ninep_server::{Ctx, FsError, FsResult, ServerConfig};
use nf_ninep_trees::synthetic::{FileNode, OpenFile};
use nf_ninep_trees::SyntheticTree;
use nf_testkit::ninep::{serve, Served, Via};

/// What a [`Probe`] saw: the bytes written and the most writes inside it at once.
#[derive(Default)]
struct Seen {
    data: Vec<u8>,
    /// The next write at this offset takes only half its bytes (a disk filling up).
    short_at: Option<u64>,
    /// A write at this offset fails with `ENOSPC` (a full disk).
    fail_at: Option<u64>,
    inside: usize,
    most_inside: usize,
}

/// A synthetic file whose write waits (bounded) for a second write to arrive while it
/// is inside, so a test sees whether writes were in flight together.
#[derive(Clone)]
struct Probe {
    positional: bool,
    seen: Arc<(Mutex<Seen>, Condvar)>,
}

impl Probe {
    fn new(positional: bool) -> Probe {
        Probe {
            positional,
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> (Vec<u8>, usize) {
        let s = self.seen.0.lock().unwrap();
        (s.data.clone(), s.most_inside)
    }
}

impl FileNode for Probe {
    fn positional(&self) -> bool {
        self.positional
    }

    fn open(&self, _: &Ctx, _: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        Ok(Box::new(self.clone()))
    }
}

impl OpenFile for Probe {
    fn write(&self, _: &Ctx, offset: u64, data: &[u8]) -> FsResult<u32> {
        let (lock, cv) = &*self.seen;
        let mut s = lock.lock().unwrap();
        if s.fail_at == Some(offset) {
            return Err(FsError::Errno(nf_ninep::errno::ENOSPC));
        }
        let data = if s.short_at == Some(offset) {
            s.short_at = None;
            &data[..data.len() / 2]
        } else {
            data
        };
        let at = if self.positional {
            offset as usize
        } else {
            s.data.len()
        };
        if s.data.len() < at + data.len() {
            s.data.resize(at + data.len(), 0);
        }
        s.data[at..at + data.len()].copy_from_slice(data);
        s.inside += 1;
        s.most_inside = s.most_inside.max(s.inside);
        cv.notify_all();
        // Wait for company: a write in flight beside this one arrives at once; a
        // copy that sends one at a time leaves this to end by the deadline.
        let deadline = Instant::now() + Duration::from_millis(300);
        while s.inside < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = cv.wait_timeout(s, left).unwrap().0;
        }
        s.inside -= 1;
        Ok(data.len() as u32)
    }
}

/// A [`Probe`] (`positional` or a stream) served alone, opened for writing through
/// 4 KiB messages, so a copy of a few KiB is several writes.
fn open_probe(positional: bool) -> (Served<SyntheticTree>, Probe, File) {
    let tree = SyntheticTree::new();
    let probe = Probe::new(positional);
    tree.add_file("/f", probe.clone()).unwrap();
    let served = serve(tree, ServerConfig::default(), Via::Unix);
    let root = served
        .client_with(ClientConfig {
            msize: 4096,
            ..ClientConfig::default()
        })
        .attach("t", "")
        .unwrap();
    let file = root.open("/f", LOpenFlags::WRONLY).unwrap();
    (served, probe, file)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn writes_to_a_positional_file_are_in_flight_together() {
    let (_served, probe, mut file) = open_probe(true);
    assert!(!file.qid().ty.contains(QidType::APPEND));
    assert!(file.writes_positional().unwrap());
    let data = pattern(6 * file.chunk() as usize + 17);
    let n = file.copy_from_behind(&mut &data[..], 4).unwrap();
    assert_eq!(n, data.len() as u64);
    assert_eq!(file.position(), data.len() as u64);
    let (got, most) = probe.seen();
    assert!(got == data, "the bytes differ");
    assert!(
        most >= 2,
        "writes went one at a time (at most {most} inside at once)"
    );
}

#[test]
fn writes_to_a_stream_go_one_at_a_time_in_order() {
    let (_served, probe, mut file) = open_probe(false);
    assert!(
        file.qid().ty.contains(QidType::APPEND),
        "a file whose writes ignore the offset says so in its qid"
    );
    assert!(!file.writes_positional().unwrap());
    let data = pattern(3 * file.chunk() as usize + 5);
    assert_eq!(
        file.copy_from_behind(&mut &data[..], 8).unwrap(),
        data.len() as u64
    );
    let (got, most) = probe.seen();
    assert!(got == data, "the bytes differ or came out of order");
    assert_eq!(most, 1, "two writes were in flight on a stream");
}

#[test]
fn a_short_write_in_flight_is_written_again_from_where_it_stopped() {
    let (_served, probe, mut file) = open_probe(true);
    let chunk = file.chunk() as u64;
    // The second message comes back short while later ones are in flight.
    probe.seen.0.lock().unwrap().short_at = Some(chunk);
    let data = pattern(6 * chunk as usize + 17);
    let n = file.copy_from_behind(&mut &data[..], 4).unwrap();
    assert_eq!(n, data.len() as u64);
    let (got, _) = probe.seen();
    assert!(got == data, "a hole or lost bytes after the short write");
}

#[test]
fn a_failed_write_in_flight_is_the_error_and_the_connection_goes_on() {
    let (_served, probe, mut file) = open_probe(true);
    let chunk = file.chunk() as u64;
    probe.seen.0.lock().unwrap().fail_at = Some(2 * chunk);
    let data = pattern(8 * chunk as usize);
    let err = file.copy_from_behind(&mut &data[..], 4).unwrap_err();
    assert!(
        matches!(&err, CopyError::Remote(e) if e.errno() == Some(nf_ninep::errno::ENOSPC)),
        "{err}"
    );
    assert_eq!(
        file.position(),
        2 * chunk,
        "the position stays after what was written"
    );
    // Every reply was collected: the same connection takes the next write at once.
    probe.seen.0.lock().unwrap().fail_at = None;
    file.write_all_at(b"after", 0).unwrap();
}
