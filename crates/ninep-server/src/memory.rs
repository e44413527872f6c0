//! Memory budgets: what one connection, one user and the whole server may hold.
//!
//! Rules:
//!
//! 1. Three budgets are charged together: the connection's (`max_conn_memory`), its
//!    user's (`max_user_memory`, shared by the user's connections over every transport;
//!    who is a user is rule 1 of `slots`) and the server's (16× the user's). A charge
//!    that would take any of them past its limit is refused as a whole — nothing is
//!    charged — and the refusal names the knob.
//! 2. What is charged:
//!
//!    | what | how much | when | over budget |
//!    |---|---|---|---|
//!    | a request in flight | its frame, plus its count for `Tread` / `Treaddir` (the reply's data) | from its check until its reply is sent | `Rlerror(ENOMEM)` |
//!    | the connection's receive and send buffers | their capacity (each at most msize) | while the connection lives | granted anyway, so that they count: requests are refused while buffers fill the budget |
//!    | what a tree keeps or allocates for a request ([`Ctx::charge`](crate::Ctx::charge)): directory listings, readdir buffers | what the tree says | as long as the tree holds the [`Charge`] | the tree's request fails `ENOMEM` |
//!
//! 3. A charge is a guard ([`Charge`]): dropping it gives the bytes back, so nothing
//!    leaks when a request fails, a fid is clunked or a connection closes.
//! 4. The counters are atomics; charging takes no lock and reads no clock (a refusal
//!    does, to log it: see `tally`).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::tally::Tally;

/// The settings of the three budgets, as refusals name them.
pub(crate) const CONN_KNOB: &str = "max_conn_memory (nf serve --conn-memory)";
/// See [`CONN_KNOB`].
pub(crate) const USER_KNOB: &str = "max_user_memory (nf serve --user-memory)";
/// See [`CONN_KNOB`].
pub(crate) const SERVER_KNOB: &str = "the server's budget (16 x max_user_memory)";

/// One budget: bytes in use against a limit.
pub(crate) struct Budget {
    used: AtomicUsize,
    limit: usize,
    /// The setting that sets `limit`, as logs name it.
    knob: &'static str,
}

impl Budget {
    pub fn new(limit: usize, knob: &'static str) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicUsize::new(0),
            limit,
            knob,
        })
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Adds `bytes` if that stays within the limit.
    fn try_add(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .is_ok()
    }

    fn force_add(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    fn sub(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// A charge that would have gone past a budget (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// The setting whose limit it would pass.
    pub knob: &'static str,
    /// That limit, in bytes.
    pub limit: usize,
}

/// The budgets one connection charges: its own, its user's and the server's.
pub(crate) struct Account {
    /// Connection, user, server (rule 1).
    budgets: [Arc<Budget>; 3],
    /// Refusals, counted and logged at most once per interval.
    refusals: Arc<Tally>,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("conn", &self.budgets[0].used())
            .field("user", &self.budgets[1].used())
            .field("server", &self.budgets[2].used())
            .finish()
    }
}

impl Account {
    /// A connection's account, charging `user`'s and `server`'s budgets too.
    pub fn new(
        conn_limit: usize,
        user: Arc<Budget>,
        server: Arc<Budget>,
        refusals: Arc<Tally>,
    ) -> Arc<Account> {
        Arc::new(Account {
            budgets: [Budget::new(conn_limit, CONN_KNOB), user, server],
            refusals,
        })
    }

    /// The user's budget, shared with the user's other connections.
    pub fn user(&self) -> &Arc<Budget> {
        &self.budgets[1]
    }

    /// Charges `bytes` to every budget, or to none (rule 1).
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Result<Charge, OverBudget> {
        for (i, budget) in self.budgets.iter().enumerate() {
            if !budget.try_add(bytes) {
                for earlier in &self.budgets[..i] {
                    earlier.sub(bytes);
                }
                let over = OverBudget {
                    knob: budget.knob,
                    limit: budget.limit,
                };
                self.refusals.hit(|| {
                    format!(
                        "refusing a 9P request with ENOMEM: {} bytes more would pass {} ({} bytes)",
                        bytes, over.knob, over.limit
                    )
                });
                return Err(over);
            }
        }
        Ok(Charge {
            bytes,
            account: Some(Arc::clone(self)),
        })
    }

    /// Charges `bytes` even past the limits (buffers bounded by msize, rule 2).
    pub fn force(self: &Arc<Self>, bytes: usize) -> Charge {
        for budget in &self.budgets {
            budget.force_add(bytes);
        }
        Charge {
            bytes,
            account: Some(Arc::clone(self)),
        }
    }
}

/// Bytes charged to a connection's memory budgets; dropping it gives them back.
///
/// A tree gets one from [`Ctx::charge`](crate::Ctx::charge) and keeps it as long as it
/// keeps what it charged for (in a fid's state, for a listing).
pub struct Charge {
    bytes: usize,
    account: Option<Arc<Account>>,
}

impl Charge {
    /// A charge of nothing, to nobody: for work outside any connection.
    pub fn none() -> Charge {
        Charge {
            bytes: 0,
            account: None,
        }
    }

    /// A charge of `bytes` to nobody (a context outside any connection).
    pub(crate) fn free(bytes: usize) -> Charge {
        Charge {
            bytes,
            account: None,
        }
    }

    /// The bytes charged.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Changes the charge to `bytes`, past the limits if need be (buffers, rule 2).
    pub(crate) fn set_forced(&mut self, bytes: usize) {
        if let Some(account) = &self.account {
            for budget in &account.budgets {
                if bytes > self.bytes {
                    budget.force_add(bytes - self.bytes);
                } else {
                    budget.sub(self.bytes - bytes);
                }
            }
        }
        self.bytes = bytes;
    }
}

impl fmt::Debug for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Charge")
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.set_forced(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(conn: usize, user: &Arc<Budget>, server: &Arc<Budget>) -> Arc<Account> {
        Account::new(
            conn,
            Arc::clone(user),
            Arc::clone(server),
            Arc::new(Tally::new()),
        )
    }

    #[test]
    fn a_charge_past_any_budget_charges_nothing_and_names_the_knob() {
        let user = Budget::new(100, "max_user_memory");
        let server = Budget::new(1000, "max_server_memory");
        let a = account(60, &user, &server);
        let b = account(60, &user, &server);
        let held = a.charge(50).unwrap();
        assert_eq!(a.charge(20).unwrap_err().knob, CONN_KNOB);
        let b1 = b.charge(50).unwrap();
        assert_eq!(b.charge(1).unwrap_err().knob, "max_user_memory");
        assert_eq!(
            (user.used(), server.used()),
            (100, 100),
            "refusals charged nothing"
        );
        drop((held, b1));
        assert_eq!((user.used(), server.used()), (0, 0));
        assert!(
            a.charge(60).is_ok(),
            "the connection's budget is whole again"
        );
    }

    #[test]
    fn forced_charges_count_and_are_given_back() {
        let user = Budget::new(100, "max_user_memory");
        let server = Budget::new(1000, "max_server_memory");
        let a = account(60, &user, &server);
        let mut buf = a.force(80);
        assert!(a.charge(1).is_err(), "buffers count against the budget");
        buf.set_forced(10);
        assert!(a.charge(40).is_ok());
        drop(buf);
        assert_eq!((user.used(), server.used()), (0, 0));
    }
}
