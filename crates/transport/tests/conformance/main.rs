//! One conformance suite for every transport (as UCX's fixtures run each test on
//! every transport): the test bodies in `cases.rs` are generic over a
//! [`cases::Fixture`], and `conformance!` instantiates each for each transport's
//! fixture (`shm.rs`, `tcp.rs`, `ofi.rs` here). Transport-specific behaviour stays in
//! `shm.rs`, `tcp.rs`, `tcp_handoff.rs` and `ofi.rs`.
//!
//! Every endpoint of a job lives in the test's one thread and is polled in turn (the
//! shm transport is not `Send`, and ofi's tcp provider moves nothing unless both ends
//! poll); every wait has a deadline.

#[path = "../ofi_support/mod.rs"]
mod ofi_support;
#[path = "../traffic/mod.rs"]
mod traffic;

mod cases;
mod ofi;
mod shm;
mod tcp;

/// `conformance!(module, Fixture, [case, …])`: one `#[test]` per case, named
/// `module::case`, running `cases::case::<Fixture>()`.
macro_rules! conformance {
    ($name:ident, $fixture:ty, [$($case:ident),* $(,)?]) => {
        mod $name {
            $(
                #[test]
                fn $case() {
                    crate::cases::$case::<$fixture>();
                }
            )*
        }
    };
}

conformance!(
    on_shm,
    crate::shm::Shm,
    [
        order,
        sizes_both_ways,
        credit_and_back_pressure,
        bad_arguments,
        bad_frames
    ] // No `peer_loss`: an shm peer is lost when its process dies (the core checks its
      // pid); endpoints of one test process cannot die apart.
);
conformance!(
    on_tcp,
    crate::tcp::Tcp,
    [
        order,
        sizes_both_ways,
        credit_and_back_pressure,
        bad_arguments,
        bad_frames,
        peer_loss
    ]
);
conformance!(
    on_ofi,
    crate::ofi::Ofi,
    [
        order,
        sizes_both_ways,
        credit_and_back_pressure,
        bad_arguments,
        bad_frames,
        peer_loss
    ]
);
