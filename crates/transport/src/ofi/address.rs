//! The published address of an endpoint: the provider's name for it, then a trailer
//! with what a peer must know before sending (step 2 of `mod.rs`).
//!
//! ```text
//!  +---- name (provider's bytes) ----+--------+-------------+--------+
//!  | e.g. sockaddr_in for tcp        | window | max_payload | "nfo2" |
//!  +---------------------------------+--------+-------------+--------+
//!                                      u32 LE    u32 LE       4 B tag
//! ```
//! `window` is the endpoint's `reorder_window` (the packets it holds per sender,
//! `window.rs`); `max_payload` must equal the peer's own (a larger one would truncate).

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
