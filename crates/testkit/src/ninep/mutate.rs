//! A deterministic mutator of 9P frames for the bounded fuzz runs on stable Rust (the
//! cargo-fuzz target in `fuzz/` needs nightly). It starts from real frames (one of every
//! message, [`super::encoded_samples`](super::samples::encoded_samples)) and stacks one to four mutations aimed at what
//! a decoder gets wrong: size, count and length fields set to edge values, truncation,
//! extension, splicing, bit flips. Seeded splitmix64: a failure names the seed and the
//! iteration that reproduce it.

/// Values that sit on the limits the decoder checks (msize 8192, 16 walk names, u16 and
/// u32 ends).
const EDGES: [u32; 12] = [0, 1, 6, 7, 16, 17, 255, 8191, 8192, 8193, 0xffff, u32::MAX];

/// A seeded source of mutated frames.
pub struct Mutator {
    state: u64,
}

impl Mutator {
    /// A mutator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Mutator { state: seed }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A mutated copy of one of `corpus`'s frames.
    pub fn mutate(&mut self, corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = corpus[self.below(corpus.len())].clone();
        for _ in 0..=self.below(4) {
            self.mutate_once(&mut bytes, corpus);
        }
        bytes
    }

    fn mutate_once(&mut self, b: &mut Vec<u8>, corpus: &[Vec<u8>]) {
        if b.is_empty() {
            b.extend_from_slice(&EDGES[self.below(EDGES.len())].to_le_bytes());
            return;
        }
        let at = self.below(b.len());
        match self.below(8) {
            0 => b[at] ^= 1 << self.below(8),
            1 => b[at] = [0, 1, 0x7f, 0x80, 0xff][self.below(5)],
            2 => {
                // An edge value over a 2- or 4-byte field (sizes, counts, lengths).
                let v = EDGES[self.below(EDGES.len())].to_le_bytes();
                let width = if self.below(2) == 0 { 2 } else { 4 };
                for (i, byte) in v.iter().take(width).enumerate() {
                    if let Some(slot) = b.get_mut(at + i) {
                        *slot = *byte;
                    }
                }
            }
            3 => b.truncate(at),
            4 => {
                for _ in 0..=self.below(64) {
                    b.push(self.next() as u8);
                }
            }
            5 => {
                let other = &corpus[self.below(corpus.len())];
                let from = self.below(other.len());
                b.extend_from_slice(&other[from..]);
            }
            6 => {
                // Make the size field true again, so body mutations get past framing.
                if b.len() >= 4 {
                    let size = (b.len() as u32).to_le_bytes();
                    b[..4].copy_from_slice(&size);
                }
            }
            _ => {
                let end = (at + 1 + self.below(16)).min(b.len());
                b.drain(at..end);
            }
        }
    }
}
