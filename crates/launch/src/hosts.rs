//! Jobs across hosts: which ranks run where, how a rank is started on another host, and
//! where the launcher's PMI server listens so that every rank can reach it.
//!
//! # Placement
//!
//! Ranks are numbered in host order: with `h1:2,h2:2`, h1 runs ranks 0 and 1 (local
//! ranks 0 and 1 of 2), h2 runs ranks 2 and 3. Every rank gets `NF_HOST=<its host name>`;
//! ranks with equal `NF_HOST` share memory, the others talk over the network.
//!
//! # Starting a rank
//!
//! A host named `localhost` is this machine: its ranks are started directly, as in a
//! single-host job. A rank on any other host is started by [`Hosts::remote`], a
//! [`RemoteStart`] ([`crate::remote`]): a remote template, below, or a session on the
//! host's `/xcpu` ([`crate::XcpuStart`]). Through a template it runs as the template
//! with `{host}` replaced, followed by `env NAME=VALUE … PROG ARGS` — the environment
//! travels on the command line because `ssh` does not forward it. The template is split at whitespace
//! (a word cannot contain spaces); default `ssh {host}`; tests use `ip netns exec {host}`.
//! When the template's program is `ssh` or `rsh`, which hand the remote shell one
//! string, every appended word is shell-quoted; other templates (`ip netns exec`,
//! `srun -w`) get the words as separate arguments.
//!
//! The environment on the command line is, later entries winning: every `NF_*` variable
//! of the launcher's own environment (`NF_PMI_TIMEOUT`, `NF_TRANSPORTS`…), then the
//! spec's extra variables, then the rank's contract ([`nf_pmi::env`]). The program is
//! resolved on this machine and started by that absolute path on every host (a shared
//! file system, or the same install path everywhere). The template process is the one
//! the launcher supervises and signals; with `ssh` that is the local `ssh` client, and
//! since ssh without a terminal does not pass signals on, a remote rank that ignores the
//! closed connection (and its failing PMI calls) can outlive a stopped job.
//! `--bind-to core` applies only to ranks started directly. `NF_PMI_SECRET` is part of
//! the command line, so users who can list processes on this machine (the template
//! process) or on the host (until `env` execs the program) can read it: it keeps
//! strangers and other jobs out of the PMI server, not other users of the same hosts.
//!
//! # The PMI address
//!
//! Ranks on other hosts reach the launcher over TCP, at the address the caller gives
//! ([`Hosts::pmi_bind`], `nf run --pmi-bind IP`). Without one, the launcher uses
//! 127.0.0.1 when every host is `localhost`, and otherwise refuses to start
//! ([`LaunchError::PmiBindNeeded`]): it never guesses an address of its own. A bind to
//! 0.0.0.0 or `::` is refused too, since the ranks need an address to connect to.
//! A multi-host job serves PMI over TCP only, `localhost` ranks included.

use std::ffi::{OsStr, OsString};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use crate::error::LaunchError;
use crate::remote::RemoteStart;

/// The host name that means "this machine, start the ranks directly".
pub const LOCALHOST: &str = "localhost";
/// The remote template used when none is given.
pub const DEFAULT_REMOTE: &str = "ssh {host}";
/// What the remote template's `{host}` is replaced with.
const HOST_PLACEHOLDER: &str = "{host}";

/// One host of a job and how many ranks it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSlots {
    /// The host's name: for the remote template and as every rank's `NF_HOST`.
    pub name: String,
    /// Ranks on it, at least 1.
    pub ranks: usize,
}

/// How a rank is started on another host: a command prefix with `{host}` in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTemplate {
    text: String,
    words: Vec<String>,
}

impl RemoteTemplate {
    /// Parses a template such as `ssh {host}` or `ip netns exec {host}`.
    pub fn parse(text: &str) -> Result<RemoteTemplate, LaunchError> {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Err(LaunchError::BadRemote {
                template: text.to_owned(),
                reason: "it is empty",
            });
        }
        if !words.iter().any(|w| w.contains(HOST_PLACEHOLDER)) {
            return Err(LaunchError::BadRemote {
                template: text.to_owned(),
                reason: "it has no {host} to replace with the host's name",
            });
        }
        Ok(RemoteTemplate {
            text: text.to_owned(),
            words,
        })
    }

    /// The template as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the appended words must be shell-quoted: the program is `ssh` or `rsh`,
    /// which pass the remote shell a single command string.
    pub fn quotes(&self) -> bool {
        let program = Path::new(&self.words[0]).file_name();
        program == Some(OsStr::new("ssh")) || program == Some(OsStr::new("rsh"))
    }

    /// The template's command for `host`, to which the rank's words are appended.
    pub(crate) fn command(&self, host: &str) -> Command {
        let mut words = self.words.iter().map(|w| w.replace(HOST_PLACEHOLDER, host));
        // `parse` guarantees at least one word.
        let mut cmd = Command::new(words.next().unwrap_or_default());
        cmd.args(words);
        cmd
    }
}

impl Default for RemoteTemplate {
    fn default() -> RemoteTemplate {
        RemoteTemplate {
            text: DEFAULT_REMOTE.to_owned(),
            words: DEFAULT_REMOTE
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// Where the ranks of a multi-host job run, and how they are reached.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The hosts in rank order.
    pub hosts: Vec<HostSlots>,
    /// How ranks are started on hosts other than `localhost`.
    pub remote: Arc<dyn RemoteStart>,
    /// The address of this machine on which the PMI server listens (port 0: any free
    /// port); `None`: 127.0.0.1 if every host is `localhost`, else an error.
    pub pmi_bind: Option<SocketAddr>,
}

impl Hosts {
    /// These hosts, the default template (`ssh {host}`) and no PMI address.
    pub fn new(hosts: Vec<HostSlots>) -> Hosts {
        Hosts {
            hosts,
            remote: Arc::new(RemoteTemplate::default()),
            pmi_bind: None,
        }
    }

    /// Parses `h1:2,h2:2` (a host without `:N` runs one rank).
    pub fn parse_list(list: &str) -> Result<Vec<HostSlots>, LaunchError> {
        let bad = |entry: &str, reason: &'static str| LaunchError::BadHost {
            entry: entry.to_owned(),
            reason,
        };
        let mut hosts: Vec<HostSlots> = Vec::new();
        for entry in list.split(',').map(str::trim) {
            let (name, ranks) = match entry.rsplit_once(':') {
                Some((name, n)) => (
                    name,
                    n.parse::<usize>()
                        .map_err(|_| bad(entry, "the count after ':' is not a number"))?,
                ),
                None => (entry, 1),
            };
            check_host_name(name).map_err(|reason| bad(entry, reason))?;
            if ranks == 0 {
                return Err(bad(entry, "a host needs at least one rank"));
            }
            if hosts.iter().any(|h| h.name == name) {
                return Err(bad(
                    entry,
                    "the host is listed twice; give its rank count once",
                ));
            }
            hosts.push(HostSlots {
                name: name.to_owned(),
                ranks,
            });
        }
        Ok(hosts)
    }

    /// Ranks on all hosts together.
    pub fn total(&self) -> usize {
        self.hosts.iter().map(|h| h.ranks).sum()
    }

    /// Checks the hosts against a job of `nprocs` ranks; nothing is started.
    pub(crate) fn validate(&self, nprocs: usize) -> Result<(), LaunchError> {
        if self.hosts.is_empty() {
            return Err(LaunchError::NoHosts);
        }
        for h in &self.hosts {
            check_host_name(&h.name).map_err(|reason| LaunchError::BadHost {
                entry: h.name.clone(),
                reason,
            })?;
            if h.ranks == 0 {
                return Err(LaunchError::BadHost {
                    entry: h.name.clone(),
                    reason: "a host needs at least one rank",
                });
            }
        }
        if self.total() != nprocs {
            return Err(LaunchError::RanksMismatch {
                nprocs,
                hosts: self.total(),
            });
        }
        Ok(())
    }

    /// The address the PMI server binds (see the module documentation).
    pub(crate) fn bind_addr(&self) -> Result<SocketAddr, LaunchError> {
        match self.pmi_bind {
            Some(sa) if sa.ip().is_unspecified() => {
                Err(LaunchError::PmiBindUnspecified { bind: sa })
            }
            Some(sa) => Ok(sa),
            None if self.hosts.iter().all(|h| is_local(&h.name)) => {
                Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
            }
            None => Err(LaunchError::PmiBindNeeded {
                hosts: self
                    .hosts
                    .iter()
                    .filter(|h| !is_local(&h.name))
                    .map(|h| h.name.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// For every rank, in order: its host's index, its local rank and the host's rank count.
    pub(crate) fn layout(&self) -> Vec<Place> {
        self.hosts
            .iter()
            .enumerate()
            .flat_map(|(host, h)| {
                (0..h.ranks).map(move |local_rank| Place {
                    host,
                    local_rank,
                    local_size: h.ranks,
                })
            })
            .collect()
    }
}

/// Where one rank runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    /// Index of its host in [`Hosts::hosts`].
    pub(crate) host: usize,
    /// Its index among the ranks of that host.
    pub(crate) local_rank: usize,
    /// Ranks on that host.
    pub(crate) local_size: usize,
}

/// Whether ranks on `host` are started directly rather than through the template.
pub(crate) fn is_local(host: &str) -> bool {
    host == LOCALHOST
}

/// Host names go into a command line and into `NF_HOST`: letters, digits and `. _ - @`
/// (`user@host` for ssh), not starting with `-` (it would read as an option).
fn check_host_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("the host name is empty");
    }
    if name.starts_with('-') {
        return Err("a host name cannot start with '-'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'))
    {
        return Err("a host name may only hold letters, digits and . _ - @");
    }
    Ok(())
}

/// Whether `name` may be passed as `NAME=VALUE` to `env`: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_portable_env_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && !b[0].is_ascii_digit()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// `NAME=VALUE` as one word.
pub(crate) fn assignment(name: &OsStr, value: &OsStr) -> OsString {
    let mut w = name.to_owned();
    w.push("=");
    w.push(value);
    w
}

/// Quotes `word` for a POSIX shell: unchanged when it holds only safe characters,
/// else in single quotes with every `'` written as `'\''`.
pub(crate) fn shell_quote(word: &OsStr) -> OsString {
    let b = word.as_bytes();
    let safe = !b.is_empty()
        && b.iter().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'_' | b'.' | b'/' | b'=' | b':' | b',' | b'@' | b'%' | b'+' | b'-'
                )
        });
    if safe {
        return word.to_owned();
    }
    let mut out = Vec::with_capacity(b.len() + 2);
    out.push(b'\'');
    for &c in b {
        if c == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(c);
        }
    }
    out.push(b'\'');
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(list: &[(&str, usize)]) -> Vec<HostSlots> {
        list.iter()
            .map(|(n, r)| HostSlots {
                name: (*n).to_owned(),
                ranks: *r,
            })
            .collect()
    }

    #[test]
    fn host_lists_parse_in_order() {
        assert_eq!(
            Hosts::parse_list("h1:2, h2:3,me@h3").unwrap(),
            slots(&[("h1", 2), ("h2", 3), ("me@h3", 1)])
        );
    }

    #[test]
    fn bad_host_lists_name_the_entry() {
        for (list, entry) in [
            ("h1:0", "h1:0"),
            ("h1:x", "h1:x"),
            ("h1:2,,h2", ""),
            ("-oProxyCommand=x:1", "-oProxyCommand=x:1"),
            ("a b:1", "a b:1"),
            ("h1:1,h1:2", "h1:2"),
        ] {
            let err = Hosts::parse_list(list).unwrap_err();
            assert!(
                matches!(&err, LaunchError::BadHost { entry: e, .. } if e == entry),
                "{list}: {err}"
            );
        }
    }

    #[test]
    fn layout_numbers_ranks_in_host_order() {
        let hosts = Hosts::new(slots(&[("h1", 2), ("h2", 1), ("h3", 2)]));
        let places: Vec<(usize, usize, usize)> = hosts
            .layout()
            .iter()
            .map(|p| (p.host, p.local_rank, p.local_size))
            .collect();
        assert_eq!(
            places,
            [(0, 0, 2), (0, 1, 2), (1, 0, 1), (2, 0, 2), (2, 1, 2)]
        );
        assert!(hosts.validate(5).is_ok());
        assert!(matches!(
            hosts.validate(4),
            Err(LaunchError::RanksMismatch {
                nprocs: 4,
                hosts: 5
            })
        ));
    }

    #[test]
    fn pmi_address_is_given_or_loopback_for_local_jobs_only() {
        let local = Hosts::new(slots(&[("localhost", 2)]));
        assert_eq!(local.bind_addr().unwrap(), "127.0.0.1:0".parse().unwrap());
        let mut remote = Hosts::new(slots(&[("localhost", 1), ("h2", 1)]));
        let err = remote.bind_addr().unwrap_err();
        assert!(err.to_string().contains("h2"), "{err}");
        remote.pmi_bind = Some("0.0.0.0:0".parse().unwrap());
        assert!(matches!(
            remote.bind_addr(),
            Err(LaunchError::PmiBindUnspecified { .. })
        ));
        remote.pmi_bind = Some("10.1.2.3:0".parse().unwrap());
        assert_eq!(remote.bind_addr().unwrap(), "10.1.2.3:0".parse().unwrap());
    }

    #[test]
    fn templates_need_a_host_and_know_when_to_quote() {
        assert!(RemoteTemplate::parse("  ").is_err());
        let err = RemoteTemplate::parse("ssh node1").unwrap_err();
        assert!(err.to_string().contains("{host}"), "{err}");
        assert!(RemoteTemplate::default().quotes());
        assert!(RemoteTemplate::parse("/usr/bin/ssh -p 2222 {host}")
            .unwrap()
            .quotes());
        let netns = RemoteTemplate::parse("ip netns exec {host}").unwrap();
        assert!(!netns.quotes());
        let cmd = netns.command("h1");
        assert_eq!(cmd.get_program(), "ip");
        let args: Vec<&OsStr> = cmd.get_args().collect();
        assert_eq!(args, ["netns", "exec", "h1"]);
    }

    #[test]
    fn shell_quoting_survives_a_shell() {
        for word in ["plain", "a b", "it's", "", "$HOME", "x\ny", "NF_X=a;b"] {
            let quoted = shell_quote(OsStr::new(word));
            let out = Command::new("sh")
                .arg("-c")
                .arg(OsString::from_vec(
                    [b"printf %s ".as_slice(), quoted.as_bytes()].concat(),
                ))
                .output()
                .unwrap();
            assert_eq!(out.stdout, word.as_bytes(), "{word:?} as {quoted:?}");
        }
        assert_eq!(shell_quote(OsStr::new("NF_RANK=3")), "NF_RANK=3");
    }

    #[test]
    fn env_names_for_the_command_line() {
        assert!(is_portable_env_name(OsStr::new("NF_RANK")));
        assert!(is_portable_env_name(OsStr::new("_x1")));
        assert!(!is_portable_env_name(OsStr::new("1X")));
        assert!(!is_portable_env_name(OsStr::new("-i")));
        assert!(!is_portable_env_name(OsStr::new("A=B")));
        assert!(!is_portable_env_name(OsStr::new("")));
    }
}
