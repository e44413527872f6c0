//! The three measured operations, each timed per message round trip (or per cycle)
//! through the ninefold client, so the server is the only thing that changes.

use std::time::Instant;

use nf_ninep::LOpenFlags;
use nf_ninep_client::{ClientError, Root};

/// File every small-operation cycle opens and reads one byte of.
pub const SMALL_FILE: &str = "small.txt";
/// File the streaming reads read.
pub const STREAM_FILE: &str = "stream.bin";

fn us_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// `iters` timed cycles (after `warmup` untimed ones) of walk / open / read 1 B /
/// clunk of [`SMALL_FILE`]: four requests, one sample in µs per cycle.
pub fn small_ops(root: &Root, iters: usize, warmup: usize) -> Result<Vec<f64>, ClientError> {
    let mut samples = Vec::with_capacity(iters);
    for i in 0..warmup + iters {
        let t = Instant::now();
        let file = root.walk(SMALL_FILE)?.lopen(LOpenFlags::RDONLY)?;
        let byte = file.read_chunk(0, 1)?;
        file.close()?;
        if i >= warmup {
            samples.push(us_since(t));
        }
        debug_assert_eq!(byte.len(), 1);
    }
    Ok(samples)
}

/// Reads [`STREAM_FILE`] from the start, full-size `Tread`s with `depth` of them in
/// flight (1: one after another), until `bytes` were read (wrapping around at end of
/// file); one sample in µs per message: from one reply to the next, which with one in
/// flight is its round trip. Returns the samples and the bytes each message carried.
pub fn stream_read(
    root: &Root,
    bytes: u64,
    depth: usize,
) -> Result<(Vec<f64>, usize), ClientError> {
    let file = root.open(STREAM_FILE, LOpenFlags::RDONLY)?;
    let chunk = file.chunk();
    let size = file.stat()?.size();
    let whole = size / u64::from(chunk) * u64::from(chunk);
    if whole == 0 {
        return Ok((Vec::new(), chunk as usize));
    }
    let mut samples = Vec::new();
    let mut flight = std::collections::VecDeque::new();
    let (mut next, mut done) = (0u64, 0u64);
    let mut t = Instant::now();
    while done < bytes {
        while flight.len() < depth.max(1) {
            // Full-size messages only: wrap before the file's short last one.
            if next >= whole {
                next = 0;
            }
            flight.push_back(file.start_read(next, chunk)?);
            next += u64::from(chunk);
        }
        let call = flight.pop_front().expect("a read in flight");
        let data = file.finish_read(call)?;
        samples.push(us_since(t));
        t = Instant::now();
        done += data.len() as u64;
    }
    for call in flight {
        file.finish_read(call)?;
    }
    file.close()?;
    Ok((samples, chunk as usize))
}

/// Writes `bytes` to a fresh file `name`, one full-size `Twrite` after another; one
/// sample in µs per message. Returns the samples and the bytes each message carried.
pub fn stream_write(root: &Root, name: &str, bytes: u64) -> Result<(Vec<f64>, usize), ClientError> {
    let file = root.create(name, LOpenFlags::WRONLY | LOpenFlags::TRUNC, 0o644)?;
    let chunk = file.chunk() as usize;
    let data: Vec<u8> = (0..chunk).map(|i| (i % 251) as u8).collect();
    let mut samples = Vec::new();
    let mut offset = 0u64;
    while offset < bytes {
        let t = Instant::now();
        let n = file.write_at(&data, offset)?;
        samples.push(us_since(t));
        if n == 0 {
            break;
        }
        offset += n as u64;
    }
    file.close()?;
    root.remove(name)?;
    Ok((samples, chunk))
}
