//! Connection slots: who may connect when the server, or a user, is full.
//!
//! Rules (applied by `Server::admit` under the connection table's lock, to a view of
//! every connection):
//!
//! 1. **Users.** A connection counts against the user its transport names
//!    ([`Owner`]): the kernel's uid of a local peer, or the account a TLS name maps
//!    to, so one person over TLS, a unix socket and shm is one user. A TLS name with no
//!    account here (a node's or a gateway's certificate) is a user of its own;
//!    connections that identify nobody are one user together.
//! 2. **Limits.** A user holds at most `max_clients_per_user` connections, the server
//!    at most `max_clients`. The last `max_clients / 8` slots are a reserve, open only
//!    to a user holding fewer than [`RESERVE_HOLDING`] connections: users who hold
//!    many stop short of it, so a user holding few can always connect while others
//!    hold many.
//! 3. **Idle.** A connection may give its slot up when it has no request in flight and
//!    either holds no fid (never attached, or let go of every fid) or has been silent
//!    (no frame received) for `evict_idle_after`. One with a request in flight never
//!    gives its slot up: it is being served.
//! 4. **Eviction.** A newcomer over a limit takes the slot of an idle connection:
//!    - at its user's limit, of one of the user's own connections;
//!    - when the server is full for it (rule 2), of the user holding the most among
//!      those holding at least two more than the newcomer's user, and the newcomer's
//!      own user (a swap between users holding nearly as many would only churn);
//!      the next-heaviest is tried when the heaviest has no idle connection.
//!
//!    Within a user: a connection holding no fid first, then the one silent longest.
//!    Several evictions may be planned (a newcomer at its own limit on a full server),
//!    but none happens unless the newcomer is then admitted.
//! 5. Otherwise the newcomer is refused: its first request is answered `EAGAIN`.
//! 6. An evicted connection is closed as at shutdown (requests aborted, fids clunked).
//!    Evictions and refusals are counted ([`crate::ServerStats`]) and logged at most
//!    once per 10 s (`tally`): a client can cause them at will.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::ServerConfig;
use crate::conn::Identity;

/// A user holding fewer connections than this may use the reserve (rule 2).
pub(crate) const RESERVE_HOLDING: usize = 4;

/// Whose slots and memory budget a connection counts against (rule 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// An account here, by uid.
    Uid(u32),
    /// A TLS name with no account here.
    Name(Arc<str>),
    /// Nobody the transport can name.
    Nobody,
}

impl Owner {
    /// The owner of a connection whose transport says `who`. A TLS name is looked up
    /// in the user database (NSS), once per connection.
    pub fn of(who: &Identity) -> Owner {
        match who {
            Identity::Uid(uid) => Owner::Uid(*uid),
            Identity::User(name) => match nix::unistd::User::from_name(name) {
                Ok(Some(account)) => Owner::Uid(account.uid.as_raw()),
                _ => Owner::Name(Arc::clone(name)),
            },
            Identity::Unknown => Owner::Nobody,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Uid(uid) => write!(f, "uid {uid}"),
            // A TLS name: quoted and escaped (`tally` rule 3).
            Owner::Name(name) => write!(f, "user {name:?}"),
            Owner::Nobody => f.write_str("unidentified peers"),
        }
    }
}

/// What admission needs to know of one connection.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub id: u64,
    pub owner: Owner,
    pub fids: usize,
    pub in_flight: usize,
    /// Time since its last frame (or since it was accepted).
    pub silent: Duration,
}

impl Slot {
    /// Rule 3.
    fn idle(&self, after: Duration) -> bool {
        self.in_flight == 0 && (self.fids == 0 || self.silent >= after)
    }
}

/// The limits admission applies (rule 2), from a [`ServerConfig`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub total: usize,
    pub per_user: usize,
    pub reserve: usize,
    pub evict_after: Duration,
}

impl From<&ServerConfig> for Limits {
    fn from(c: &ServerConfig) -> Self {
        Limits {
            total: c.max_clients,
            per_user: c.max_clients_per_user,
            reserve: c.reserved_clients(),
            evict_after: c.evict_idle_after,
        }
    }
}

/// Why a newcomer was refused: the setting and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub why: &'static str,
    pub limit: usize,
}

/// The connections to close so that a newcomer of `who` fits (rule 4), or why it
/// cannot.
pub(crate) fn plan(slots: &[Slot], who: &Owner, limits: &Limits) -> Result<Vec<u64>, Refusal> {
    let mut held: HashMap<&Owner, usize> = HashMap::new();
    for s in slots {
        *held.entry(&s.owner).or_default() += 1;
    }
    let mut live = slots.len();
    let mut victims = Vec::new();
    loop {
        let mine = held.get(who).copied().unwrap_or(0);
        let room = if mine < RESERVE_HOLDING {
            limits.total
        } else {
            limits.total.saturating_sub(limits.reserve)
        };
        let (may_lose, refusal): (&dyn Fn(&Owner) -> bool, Refusal) = if mine >= limits.per_user {
            (
                &|o: &Owner| o == who,
                Refusal {
                    why: "too many connections for this user (max_clients_per_user)",
                    limit: limits.per_user,
                },
            )
        } else if live >= room {
            let why = if room < limits.total {
                "the slots left are kept for users holding few connections (max_clients / 8)"
            } else {
                "too many clients (max_clients)"
            };
            (
                &|o: &Owner| o == who || held.get(o).copied().unwrap_or(0) >= mine + 2,
                Refusal { why, limit: room },
            )
        } else {
            return Ok(victims);
        };
        // Heaviest user first; within a user, one holding no fid, then the longest silent.
        let victim = slots
            .iter()
            .filter(|s| !victims.contains(&s.id) && may_lose(&s.owner))
            .filter(|s| s.idle(limits.evict_after))
            .min_by_key(|s| {
                (
                    Reverse(held.get(&s.owner).copied().unwrap_or(0)),
                    s.fids > 0,
                    Reverse(s.silent),
                    s.id,
                )
            });
        let Some(victim) = victim else {
            return Err(refusal);
        };
        victims.push(victim.id);
        live -= 1;
        if let Some(n) = held.get_mut(&victim.owner) {
            *n -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Owner = Owner::Uid(1001);
    const B: Owner = Owner::Uid(1002);
    const ROOT: Owner = Owner::Uid(0);

    fn limits(total: usize, per_user: usize) -> Limits {
        Limits {
            total,
            per_user,
            reserve: total / 8,
            evict_after: Duration::from_secs(1),
        }
    }

    /// `n` connections of `owner` holding fids, silent for `silent_ms`, with ids from
    /// `first`.
    fn held(owner: &Owner, first: u64, n: u64, silent_ms: u64, in_flight: usize) -> Vec<Slot> {
        (first..first + n)
            .map(|id| Slot {
                id,
                owner: owner.clone(),
                fids: 1,
                in_flight,
                silent: Duration::from_millis(silent_ms),
            })
            .collect()
    }

    #[test]
    fn two_users_cannot_take_the_reserve_from_a_third() {
        // 16 slots, 8 per user, 2 reserved: the busy attackers stop at 14.
        let l = limits(16, 8);
        let mut slots = held(&A, 0, 8, 0, 1);
        slots.extend(held(&B, 100, 6, 0, 1));
        let refused = plan(&slots, &B, &l).unwrap_err();
        assert!(
            refused.why.contains("kept for users holding few"),
            "{refused:?}"
        );
        assert_eq!(
            plan(&slots, &ROOT, &l),
            Ok(vec![]),
            "the reserve is open to root"
        );
        slots.extend(held(&ROOT, 200, 2, 0, 0));
        // Full now: root (holding 2) takes an idle slot of the heaviest user, A.
        let mut idle_a = held(&A, 0, 8, 5000, 0);
        idle_a.extend(held(&B, 100, 6, 5000, 0));
        idle_a.extend(held(&ROOT, 200, 2, 0, 0));
        assert_eq!(plan(&idle_a, &ROOT, &l), Ok(vec![0]));
        // While every attacker connection is busy, nothing is evicted.
        assert!(plan(&slots, &ROOT, &l).is_err());
    }

    #[test]
    fn at_its_own_limit_a_user_replaces_its_own_oldest_idle_connection() {
        let l = limits(1024, 4);
        let mut slots = held(&A, 0, 4, 2000, 0);
        slots[2].silent = Duration::from_secs(9);
        assert_eq!(plan(&slots, &A, &l), Ok(vec![2]));
        // Recently active connections holding fids stay; one holding nothing goes first.
        let mut fresh = held(&A, 0, 4, 10, 0);
        assert!(plan(&fresh, &A, &l).is_err());
        fresh[3].fids = 0;
        assert_eq!(plan(&fresh, &A, &l), Ok(vec![3]));
        // Another user is not touched by A's limit.
        assert_eq!(plan(&fresh, &B, &l), Ok(vec![]));
    }

    #[test]
    fn a_full_server_takes_from_users_holding_at_least_two_more() {
        let l = Limits {
            reserve: 0,
            ..limits(6, 6)
        };
        let mut slots = held(&A, 0, 3, 5000, 0);
        slots.extend(held(&B, 10, 3, 5000, 0));
        // B holds 3, A only 3: B's newcomer replaces one of B's own.
        assert_eq!(plan(&slots, &B, &l), Ok(vec![10]));
        // A newcomer holding nothing takes from the first heaviest with an idle one.
        slots[0].in_flight = 1;
        slots[1].in_flight = 1;
        slots[2].in_flight = 1;
        assert_eq!(plan(&slots, &ROOT, &l), Ok(vec![10]));
    }
}
