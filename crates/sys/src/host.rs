//! This process's host identity: the one answer to "do these two ranks share memory?".
//!
//! The messaging core picks shared memory between ranks of one identity, and the
//! one-sided layer maps their segments directly; both ask here, so they cannot
//! disagree (a rank that the core reaches over shm but rma treats as remote, or the
//! reverse, would mix two channels for one pair).
//!
//! The identity is `NF_HOST` where a launcher sets it; otherwise host name, kernel
//! boot id and network namespace. The namespace is part of it because namespaces
//! stand for hosts in multi-host tests and in containers, and processes in different
//! ones are not assumed to share `/dev/shm` unless a launcher says so.

use crate::setting::Setting;

/// The environment variable a launcher sets to name the host of a rank.
pub const HOST_ENV: &str = "NF_HOST";

/// The settings this crate reads: the host identity. `nf run --hosts` sets it for
/// each rank; anyone may set it to say which processes share memory.
pub const SETTINGS: &[Setting] = &[Setting::new(
    HOST_ENV,
    "sys",
    "this host's identity: ranks with equal values share memory (nf run --hosts sets it to the host's name)",
    "host name + boot id + network namespace",
)];

/// This process's host identity (see the module doc).
pub fn host_identity() -> String {
    identity(std::env::var(HOST_ENV).ok())
}

/// `given` (the launcher's name) if any, else the name read from the kernel.
fn identity(given: Option<String>) -> String {
    if let Some(h) = given {
        return h;
    }
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let netns = std::fs::read_link("/proc/self/ns/net")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    format!(
        "{}/{}/{netns}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_network_namespace_unless_a_launcher_named_the_host() {
        let id = identity(None);
        assert!(id.contains("net:["), "{id}");
        assert_eq!(id, identity(None));
        assert_eq!(identity(Some("node7".into())), "node7");
    }
}
