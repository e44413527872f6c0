//! Wire-up of the ofi transport (step 2 of `mod.rs`): the address an endpoint
//! publishes ([`OfiTransport::address`]) and joining the peers' endpoints
//! ([`OfiTransport::connect`]).
//!
//! The published address is the provider's name for the endpoint, then a trailer
//! with what a peer must know before sending:
//!
//! ```text
//!  +---- name (provider's bytes) ----+--------+-------------+--------+
//!  | e.g. sockaddr_in for tcp        | window | max_payload | "nfo2" |
//!  +---------------------------------+--------+-------------+--------+
//!                                      u32 LE    u32 LE       4 B tag
//! ```
//! `window` is the endpoint's `reorder_window` (the packets it holds per sender,
//! `window.rs`); `max_payload` must equal the peer's own (a larger one would truncate).

use super::faults::ofi_error;
use super::OfiTransport;
use crate::error::TransportError;

impl OfiTransport {
    /// Step 2a: this endpoint's name and trailer, for the peers' [`OfiTransport::connect`].
    pub fn address(&self) -> Vec<u8> {
        encode(
            &self.name,
            self.cfg.max_payload as u32,
            self.cfg.reorder_window as u32,
        )
    }

    /// Step 2b: inserts every peer's name (indexed by rank; `None` for ourselves and
    /// for peers reached another way). Names already inserted are kept.
    pub fn connect(&mut self, peers: &[Option<Vec<u8>>]) -> Result<(), TransportError> {
        if peers.len() != self.size {
            return Err(TransportError::Config(format!(
                "ofi connect got {} addresses for a job of {} ranks",
                peers.len(),
                self.size
            )));
        }
        for (rank, addr) in peers.iter().enumerate() {
            let Some(addr) = addr else { continue };
            if rank == self.me || self.connected[rank] {
                continue;
            }
            let wire_up = |why: String| TransportError::WireUp { peer: rank, why };
            let theirs = decode(addr).map_err(wire_up)?;
            let (name, max) = (theirs.name, theirs.max_payload);
            if max as usize != self.cfg.max_payload {
                return Err(wire_up(format!(
                    "it uses an ofi max_payload of {max} B, we use {} B; every rank must \
                     use the same",
                    self.cfg.max_payload
                )));
            }
            if name.len() != self.name.len() {
                return Err(wire_up(format!(
                    "its ofi endpoint name is {} B, ours is {} B: do all ranks use the same \
                     provider ({}) and address family?",
                    name.len(),
                    self.name.len(),
                    self.cfg.provider
                )));
            }
            self.ep.insert(rank, name).map_err(|f| {
                ofi_error(
                    format!("inserting rank {rank}'s address into the address vector"),
                    f,
                    "the published address is not one this provider accepts",
                )
            })?;
            self.windows.open(rank, theirs.window);
            self.connected[rank] = true;
        }
        Ok(())
    }
}

/// Tag ending the trailer.
const TAG: [u8; 4] = *b"nfo2";
/// Bytes of the trailer: window, max_payload, tag.
const TRAILER: usize = 12;

/// What a published address says.
#[derive(Debug)]
pub(crate) struct Published<'a> {
    /// The provider's name of the endpoint.
    pub name: &'a [u8],
    /// Its `max_payload`.
    pub max_payload: u32,
    /// Its `reorder_window`.
    pub window: u32,
}

/// The address to publish for an endpoint named `name`.
pub(crate) fn encode(name: &[u8], max_payload: u32, window: u32) -> Vec<u8> {
    let mut a = Vec::with_capacity(name.len() + TRAILER);
    a.extend_from_slice(name);
    a.extend_from_slice(&window.to_le_bytes());
    a.extend_from_slice(&max_payload.to_le_bytes());
    a.extend_from_slice(&TAG);
    a
}

/// Splits a published address, or says why it is not one of ours.
pub(crate) fn decode(addr: &[u8]) -> Result<Published<'_>, String> {
    let Some(split) = addr
        .len()
        .checked_sub(TRAILER)
        .filter(|&n| addr[n + 8..] == TAG)
    else {
        return Err(format!(
            "its published ofi address ({} B) does not end in ninefold's trailer: is it from \
             an ofi transport of this version?",
            addr.len()
        ));
    };
    let (name, trailer) = addr.split_at(split);
    let word = |i: usize| u32::from_le_bytes(trailer[i..i + 4].try_into().expect("4 bytes"));
    Ok(Published {
        name,
        window: word(0),
        max_payload: word(4),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_round_trips_and_a_foreign_one_is_refused() {
        let a = encode(b"name", 65536, 256);
        let p = decode(&a).unwrap();
        assert_eq!(
            (p.name, p.max_payload, p.window),
            (&b"name"[..], 65536, 256)
        );
        assert!(decode(&a[..a.len() - 1]).unwrap_err().contains("trailer"));
        assert!(decode(b"short").is_err());
        let mut old = a.clone();
        old[a.len() - 1] = b'1';
        assert!(decode(&old).is_err());
    }
}
