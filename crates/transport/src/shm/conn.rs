//! Wire-up of the shm transport (the three steps in `mod.rs`): each rank creates its
//! receive segment, maps every peer's, then removes its segment's name. The segment
//! files themselves (naming, mapping, checking, reclaiming) are `segment.rs`'s job.

use super::layout::{Geometry, FAST_DATA};
use super::rx::Receiver;
use super::segment::{self, Segment};
use super::tx::Peer;
use super::{ShmConfig, ShmTransport};
use crate::error::TransportError;

impl ShmTransport {
    /// Step 1 of wire-up: creates this rank's receive segment.
    pub fn create(
        cfg: &ShmConfig,
        job: &str,
        me: usize,
        size: usize,
    ) -> Result<Self, TransportError> {
        if me >= size {
            return Err(TransportError::NoPeer { dest: me, size });
        }
        if cfg.fast_limit > FAST_DATA {
            return Err(TransportError::Config(format!(
                "fast-box limit {} B exceeds the {FAST_DATA} B a fast-box slot holds",
                cfg.fast_limit
            )));
        }
        let geo = Geometry {
            nrings: cfg.rings.min(size).max(1),
            frames: cfg.frames,
            frame_size: cfg.frame_size,
            nsenders: size,
        };
        let path = segment::segment_path(&cfg.dir, job, me);
        let own = Segment::create(&path, geo, me, cfg.sleeps)?;
        Ok(ShmTransport {
            me,
            size,
            rx: Receiver::new(own, me),
            peers: (0..size).map(|_| None).collect(),
            peer_pids: vec![std::process::id(); size],
            dir: cfg.dir.clone(),
            job: job.to_owned(),
            fast_limit: cfg.fast_limit,
            sleeps: cfg.sleeps,
            doorbell: Default::default(),
        })
    }

    /// Step 2 of wire-up: maps every peer's segment (all must exist: fence first).
    /// Every rank must use our frame size: the core splits messages by its own
    /// frames, so a peer with smaller ones would refuse our packets mid-job.
    pub fn connect(&mut self) -> Result<(), TransportError> {
        let ours = self.rx.geometry().frame_size;
        for peer in (0..self.size).filter(|&p| p != self.me) {
            let seg = Segment::open(
                &segment::segment_path(&self.dir, &self.job, peer),
                self.size,
            )?;
            let theirs = seg.view().geometry().frame_size;
            if theirs != ours {
                return Err(TransportError::FrameSizeMismatch { peer, ours, theirs });
            }
            let p = Peer::new(seg, self.me, peer, self.fast_limit);
            self.peer_pids[peer] = p.pid();
            self.peers[peer] = Some(p);
        }
        Ok(())
    }

    /// Step 3 of wire-up: removes our segment's name (all peers have mapped it).
    pub fn unlink_own(&self) -> Result<(), TransportError> {
        self.rx.segment().unlink()
    }
}
