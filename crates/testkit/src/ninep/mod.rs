//! 9P fixtures shared by the tests of the 9P crates (features `ninep-codec` and `ninep`).
//!
//! | module | gives | feature |
//! |---|---|---|
//! | `samples` | one or more of every 9P2000.L message, and their frames | `ninep-codec` |
//! | `mutate` | [`Mutator`]: seeded mutations of frames for bounded fuzz runs | `ninep-codec` |
//! | `served` | [`serve`]: a tree on a fresh socket; [`Raw`]: exact-frame exchanges | `ninep` |
//! | `probe` | [`Probe`]: a file that sees whether reads or writes were in flight together | `ninep` |

mod mutate;
#[cfg(feature = "ninep")]
mod probe;
mod samples;
#[cfg(feature = "ninep")]
mod served;

pub use mutate::Mutator;
#[cfg(feature = "ninep")]
pub use probe::{Probe, Seen};
pub use samples::{encoded_samples, qid, replies, requests, MSIZE};
#[cfg(feature = "ninep")]
pub use served::{ecode, serve, wait_for, Got, Raw, Served, Via, BOTH, LIMIT, QUIET};
