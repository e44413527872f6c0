//! Scenario program for the rma layer's multi-process tests: run it under `nf run`.
fn main() {
    eprintln!("nf-rma-check: no scenarios yet");
    std::process::exit(1);
}
