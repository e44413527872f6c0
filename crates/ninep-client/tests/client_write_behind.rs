//! Writing behind (`File::copy_from_behind`) against a real server: several writes in
//! flight to a file whose writes land at their offset, one at a time and in order to
//! a stream, and every byte where it belongs either way; and remote → remote copies
//! (`File::copy_to_file`), reads in flight on the source feeding writes in flight on
//! the destination, under the same rules, with a failure on either side.

use std::time::Duration;

use nf_ninep::types::QidType;
use nf_ninep::LOpenFlags;
use nf_ninep_client::{ClientConfig, CopyError, File, FileCopyError};
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::SyntheticTree;
use nf_testkit::ninep::{serve, Probe, Served, Via};

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
    probe.state().short_at = Some(chunk);
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
    probe.state().fail_at = Some(2 * chunk);
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
    probe.state().fail_at = None;
    file.write_all_at(b"after", 0).unwrap();
}

/// Two probes served side by side, `/src` holding `data` and `/dst` empty, each opened
/// through 4 KiB messages on a connection of its own (as `nf cp` between two servers).
fn open_pair(
    src_positional: bool,
    dst_positional: bool,
    data: &[u8],
) -> (Served<SyntheticTree>, Probe, File, Probe, File) {
    let tree = SyntheticTree::new();
    // The destination waits longer for company than a read of the source takes, so
    // writes in flight together meet even while reads go one at a time.
    let (src, dst) = (
        Probe::holding(src_positional, data),
        Probe::new(dst_positional).waiting(Duration::from_secs(1)),
    );
    tree.add_file("/src", src.clone()).unwrap();
    tree.add_file("/dst", dst.clone()).unwrap();
    let served = serve(tree, ServerConfig::default(), Via::Unix);
    let open = |path: &str, flags: LOpenFlags| {
        served
            .client_with(ClientConfig {
                msize: 4096,
                ..ClientConfig::default()
            })
            .attach("t", "")
            .unwrap()
            .open(path, flags)
            .unwrap()
    };
    let (from, to) = (
        open("/src", LOpenFlags::RDONLY),
        open("/dst", LOpenFlags::WRONLY),
    );
    (served, src, from, dst, to)
}

#[test]
fn a_copy_between_files_keeps_reads_and_writes_in_flight_at_once() {
    let data = pattern(6 * 4072 + 17);
    let (_served, src, mut from, dst, mut to) = open_pair(true, true, &data);
    assert!(data.len() > 6 * from.chunk() as usize);
    let n = from.copy_to_file(&mut to, 4).unwrap();
    assert_eq!(n, data.len() as u64);
    assert_eq!(from.position(), n);
    assert_eq!(to.position(), n);
    let (got, wrote) = dst.seen();
    assert!(got == data, "the bytes differ");
    let (_, read) = src.seen();
    assert!(
        read >= 2,
        "reads went one at a time (at most {read} at once)"
    );
    assert!(
        wrote >= 2,
        "writes went one at a time (at most {wrote} at once)"
    );
}

#[test]
fn a_copy_between_files_at_depth_one_sends_one_message_at_a_time() {
    let data = pattern(3 * 4072 + 5);
    let (_served, src, mut from, dst, mut to) = open_pair(true, true, &data);
    assert_eq!(from.copy_to_file(&mut to, 1).unwrap(), data.len() as u64);
    let (got, wrote) = dst.seen();
    assert!(got == data, "the bytes differ");
    assert_eq!((src.seen().1, wrote), (1, 1), "(reads, writes) at once");
}

#[test]
fn a_copy_to_a_stream_writes_one_at_a_time_in_order_while_reading_ahead() {
    let data = pattern(4 * 4072 + 9);
    let (_served, src, mut from, dst, mut to) = open_pair(true, false, &data);
    assert_eq!(from.copy_to_file(&mut to, 8).unwrap(), data.len() as u64);
    let (got, wrote) = dst.seen();
    assert!(got == data, "the bytes differ or came out of order");
    assert_eq!(wrote, 1, "two writes were in flight on a stream");
    assert!(src.seen().1 >= 2, "the source was not read ahead");
}

#[test]
fn a_copy_from_a_stream_reads_one_at_a_time_in_order_while_writing_behind() {
    let data = pattern(4 * 4072 + 9);
    let (_served, src, mut from, dst, mut to) = open_pair(false, true, &data);
    assert_eq!(from.copy_to_file(&mut to, 8).unwrap(), data.len() as u64);
    let (got, wrote) = dst.seen();
    assert!(got == data, "the bytes differ or came out of order");
    assert_eq!(src.seen().1, 1, "two reads were in flight on a stream");
    assert!(wrote >= 2, "the destination was not written behind");
}

#[test]
fn a_failed_read_in_flight_ends_the_copy_with_nothing_written_after_it() {
    let data = pattern(8 * 4072);
    let (_served, src, mut from, dst, mut to) = open_pair(true, true, &data);
    let chunk = from.chunk() as u64;
    src.state().fail_read_at = Some(3 * chunk);
    let err = from.copy_to_file(&mut to, 4).unwrap_err();
    assert!(
        matches!(&err, FileCopyError::Source(e) if e.errno() == Some(nf_ninep::errno::EIO)),
        "{err}"
    );
    let (got, _) = dst.seen();
    assert!(
        got[..] == data[..3 * chunk as usize],
        "{} bytes written, not the {} before the failed read",
        got.len(),
        3 * chunk
    );
    assert_eq!((from.position(), to.position()), (3 * chunk, 3 * chunk));
    // The reads still in flight were abandoned, not left in the way: both connections
    // take the next request at once.
    src.state().fail_read_at = None;
    assert_eq!(from.read_chunk(0, 5).unwrap(), data[..5]);
    to.write_all_at(b"after", 0).unwrap();
}

#[test]
fn a_failed_write_in_flight_ends_the_copy_and_both_positions_stay_before_it() {
    let data = pattern(8 * 4072);
    let (_served, _src, mut from, dst, mut to) = open_pair(true, true, &data);
    let chunk = to.chunk() as u64;
    dst.state().fail_at = Some(2 * chunk);
    let err = from.copy_to_file(&mut to, 4).unwrap_err();
    assert!(
        matches!(&err, FileCopyError::Destination(e) if e.errno() == Some(nf_ninep::errno::ENOSPC)),
        "{err}"
    );
    assert_eq!((from.position(), to.position()), (2 * chunk, 2 * chunk));
    let (got, _) = dst.seen();
    assert!(got[..2 * chunk as usize] == data[..2 * chunk as usize]);
    dst.state().fail_at = None;
    to.write_all_at(b"after", 0).unwrap();
    assert_eq!(from.read_chunk(0, 5).unwrap(), data[..5]);
}
