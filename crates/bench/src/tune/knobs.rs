//! What `nf tune` can tune: each knob's setting, the transport its jobs are forced
//! onto, the values tried and the message sizes it affects.

use nf_core::config::DEFAULT_RNDV_THRESHOLD;
use nf_core::tune::Tuned;
use nf_transport::shm::layout::FAST_DATA;

/// One tunable setting (`--knobs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// Single-copy (rendezvous) threshold, `NF_RNDV_THRESHOLD`.
    Rndv,
    /// Shm frame size (the eager and fragment size), `NF_SHM_FRAME_SIZE`.
    Frame,
    /// Fast-box payload limit, `NF_SHM_FAST_LIMIT`.
    Fast,
    /// Tcp hold time of ranks without shm peers, `NF_TCP_HOT_US`.
    TcpHold,
    /// Ofi packet size, `NF_OFI_PACKET`.
    OfiPacket,
}

/// The order knobs are tuned in: the shm sizes first, so the single-copy threshold is
/// measured over the frames chosen (it is where single copy starts to beat them).
pub const ORDER: [Knob; 5] = [
    Knob::Frame,
    Knob::Fast,
    Knob::Rndv,
    Knob::TcpHold,
    Knob::OfiPacket,
];

/// How a knob other than [`Knob::Rndv`] is measured: ping-pong jobs, one per value.
pub struct Spec {
    /// The setting a job's environment sets.
    pub var: &'static str,
    /// `NF_TRANSPORTS` of its jobs: the transport whose setting it is.
    pub transport: &'static str,
    /// The values tried.
    pub candidates: &'static [usize],
    /// The value when nothing is tuned (wins ties, see [`super::pick`]).
    pub default: usize,
    /// Message sizes it affects, bytes.
    pub sizes: &'static [usize],
}

impl Knob {
    /// The knob named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Knob> {
        ORDER.into_iter().find(|k| k.name() == name)
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Knob::Rndv => "rndv",
            Knob::Frame => "frame",
            Knob::Fast => "fast",
            Knob::TcpHold => "tcp-hold",
            Knob::OfiPacket => "ofi-packet",
        }
    }

    /// The setting it tunes.
    pub fn var(self) -> &'static str {
        match self {
            Knob::Rndv => "NF_RNDV_THRESHOLD",
            _ => self.spec().map_or("", |s| s.var),
        }
    }

    /// Its ping-pong measurement; `None` for the single-copy threshold, measured
    /// inside one job (see [`super::probe`]).
    pub fn spec(self) -> Option<Spec> {
        let spec = match self {
            Knob::Rndv => return None,
            Knob::Frame => Spec {
                var: "NF_SHM_FRAME_SIZE",
                transport: "shm",
                // Powers of two of payload behind the frame's 64 B header, so a
                // message of that size fits one frame.
                candidates: &[4160, 8256, 16448, 32832, 65600],
                default: nf_transport::shm::DEFAULT_FRAME_SIZE,
                sizes: &[1 << 10, 8 << 10, 32 << 10, 128 << 10, 512 << 10],
            },
            // Sizes between the candidates; the packet also carries a few bytes of
            // metadata, so 480 B is the largest payload that fits a slot.
            Knob::Fast => Spec {
                var: "NF_SHM_FAST_LIMIT",
                transport: "shm",
                candidates: &[0, 64, 128, 256, FAST_DATA],
                default: FAST_DATA,
                sizes: &[8, 48, 100, 200, 400],
            },
            // A ping-pong's connection is never idle longer than a round trip, so
            // only holds shorter than that can lose; what a long hold costs (a core
            // polling a quiet socket) a ping-pong cannot see — hence ties go to the
            // default.
            Knob::TcpHold => Spec {
                var: "NF_TCP_HOT_US",
                transport: "tcp",
                candidates: &[0, 50, 500, 5_000, 20_000],
                default: 20_000,
                sizes: &[8, 1 << 10, 64 << 10],
            },
            Knob::OfiPacket => Spec {
                var: "NF_OFI_PACKET",
                transport: "ofi",
                candidates: &[4 << 10, 8 << 10, 16 * 1024 - 512, 32 << 10, 64 << 10],
                default: 16 * 1024 - 512,
                sizes: &[1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20],
            },
        };
        Some(spec)
    }

    /// Its value when nothing is tuned.
    pub fn default_value(self) -> usize {
        self.spec().map_or(DEFAULT_RNDV_THRESHOLD, |s| s.default)
    }

    /// Its value in `t`, if measured.
    pub fn get(self, t: &Tuned) -> Option<usize> {
        match self {
            Knob::Rndv => t.rndv_threshold,
            Knob::Frame => t.shm_frame_size,
            Knob::Fast => t.shm_fast_limit,
            Knob::TcpHold => t.tcp_hot_us,
            Knob::OfiPacket => t.ofi_packet,
        }
    }

    /// Records `v` as its value in `t`.
    pub fn set(self, t: &mut Tuned, v: usize) {
        let field = match self {
            Knob::Rndv => &mut t.rndv_threshold,
            Knob::Frame => &mut t.shm_frame_size,
            Knob::Fast => &mut t.shm_fast_limit,
            Knob::TcpHold => &mut t.tcp_hot_us,
            Knob::OfiPacket => &mut t.ofi_packet,
        };
        *field = Some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_names_the_setting_it_caches() {
        for k in ORDER {
            let mut t = Tuned::default();
            k.set(&mut t, 4096);
            assert_eq!(k.get(&t), Some(4096));
            assert_eq!(t.settings(), [(k.var(), 4096)], "{}", k.name());
            assert_eq!(Knob::from_name(k.name()), Some(k));
            if let Some(s) = k.spec() {
                assert!(s.candidates.contains(&s.default), "{}", k.name());
            }
        }
    }
}
