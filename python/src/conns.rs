//! Connections reused across `ninefold.files` calls, so a loop of `files.cat` or
//! `files.stat` pays one connect and attach (a TLS handshake, over a network) instead
//! of one per call.
//!
//! Rules:
//!
//! 1. One connection per (address, user, certificate files, timeout, msize) in a
//!    process: a call never borrows a connection made for another identity.
//! 2. A connection is reused only by the process that made it: after `fork` the
//!    child's copy has no reader thread (threads do not survive `fork`), so the child
//!    makes its own.
//! 3. A connection found closed (the server went away) is replaced.
//! 4. At most [`MAX_KEPT`] are kept; the least recently used goes first (dropping it
//!    closes it once no open file still uses it).

use std::sync::{Arc, Mutex, PoisonError};

use nf_link::addr::Addr;
use nf_ninep_client::connect::{attach, ConnectError, ConnectOptions};
use nf_ninep_client::Root;

/// Connections kept (rule 4).
pub(crate) const MAX_KEPT: usize = 16;

struct Kept {
    key: String,
    pid: u32,
    root: Arc<Root>,
    last_use: u64,
}

struct Cache {
    kept: Vec<Kept>,
    uses: u64,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    kept: Vec::new(),
    uses: 0,
});

/// The connection rule 1 names, kept from an earlier call or made now.
pub(crate) fn attach_kept(addr: &Addr, opts: &ConnectOptions) -> Result<Arc<Root>, ConnectError> {
    let key = format!(
        "{addr}\0{}\0{:?}\0{:?}\0{}",
        opts.user, opts.tls, opts.timeout, opts.msize
    );
    let pid = std::process::id();
    {
        let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        cache.uses += 1;
        let now = cache.uses;
        // Rule 2: a parent's connections are forgotten, not dropped: dropping one
        // clunks its fid, and the answer would never come without the parent's reader
        // thread. Rule 3: closed ones go.
        for k in std::mem::take(&mut cache.kept) {
            if k.pid != pid {
                std::mem::forget(k);
            } else if !k.root.client().is_closed() {
                cache.kept.push(k);
            }
        }
        if let Some(k) = cache.kept.iter_mut().find(|k| k.key == key) {
            k.last_use = now;
            return Ok(Arc::clone(&k.root));
        }
    }
    // Connected without the lock held: another call may connect meanwhile, and both
    // work; the later one is kept.
    let root = Arc::new(attach(addr, opts)?);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    cache.uses += 1;
    let now = cache.uses;
    cache.kept.retain(|k| k.key != key);
    if cache.kept.len() >= MAX_KEPT {
        if let Some(oldest) = (0..cache.kept.len()).min_by_key(|&i| cache.kept[i].last_use) {
            cache.kept.swap_remove(oldest);
        }
    }
    cache.kept.push(Kept {
        key,
        pid,
        root: Arc::clone(&root),
        last_use: now,
    });
    Ok(root)
}
