//! Budgets: what one connection, one user and the whole server may hold — bytes of
//! memory, and descriptors.
//!
//! Rules:
//!
//! 1. Three budgets of each [`Resource`] are charged together: the connection's, its
//!    user's (shared by the user's connections over every transport; who is a user is
//!    rule 1 of `slots`) and the server's. A charge that would take any of them past
//!    its limit is refused as a whole — nothing is charged — and the refusal names the
//!    knob.
//! 2. What is charged:
//!
//!    | resource | what | how much | when | over budget |
//!    |---|---|---|---|---|
//!    | memory | a request in flight | its frame, plus its count for `Tread` / `Treaddir` (the reply's data) | from its check until its reply is sent | `Rlerror(ENOMEM)` |
//!    | memory | the connection's receive and send buffers | their capacity (each at most msize) | while the connection lives | granted anyway, so that they count: requests are refused while buffers fill the budget |
//!    | memory | what a tree keeps or allocates for a request ([`Ctx::charge`](crate::Ctx::charge)): directory listings, readdir buffers | what the tree says | as long as the tree holds the [`Charge`] | the tree's request fails `ENOMEM` |
//!    | descriptors | a descriptor a tree keeps open for a fid ([`Ctx::charge_fd`](crate::Ctx::charge_fd)): an open host file or directory | one | as long as the tree holds the [`Charge`] (until the fid is clunked) | the open fails `EMFILE` |
//!
//!    | resource | connection | user | server |
//!    |---|---|---|---|
//!    | memory | `max_conn_memory` (32 MiB) | `max_user_memory` (256 MiB) | 16 × the user's |
//!    | descriptors | `max_conn_fds` (a 32nd of the descriptor limit) | `max_user_fds` (an 8th) | three quarters of the limit, the rest kept for connections, listeners and jobs (`nofile`) |
//!
//! 3. A charge is a guard ([`Charge`]): dropping it gives the amount back, so nothing
//!    leaks when a request fails, a fid is clunked or a connection closes.
//! 4. The counters are atomics; charging takes no lock and reads no clock (a refusal
//!    does, to log it: see `tally`).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::tally::Tally;

/// What a set of budgets counts, and how its refusals are said.
#[derive(Debug)]
pub(crate) struct Resource {
    /// What the amounts are: `"bytes"`, `"descriptors"`.
    pub unit: &'static str,
    /// The error a refused request gets, by name.
    pub errno: &'static str,
    /// The settings of the connection's, the user's and the server's budget, as
    /// refusals name them.
    pub knobs: [&'static str; 3],
}

/// Memory (rule 2).
pub(crate) static MEMORY: Resource = Resource {
    unit: "bytes",
    errno: "ENOMEM",
    knobs: [
        "max_conn_memory (nf serve --conn-memory)",
        "max_user_memory (nf serve --user-memory)",
        "the server's budget (16 x max_user_memory)",
    ],
};

/// Descriptors trees keep open for fids (rule 2).
pub(crate) static DESCRIPTORS: Resource = Resource {
    unit: "descriptors",
    errno: "EMFILE",
    knobs: [
        "max_conn_fds (nf serve --conn-fds)",
        "max_user_fds (nf serve --user-fds)",
        "the server's descriptor budget (3/4 of RLIMIT_NOFILE; raise the hard limit, e.g. LimitNOFILE=)",
    ],
};

/// One budget: an amount in use against a limit.
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

    /// The user's budget of `resource`, with `limit`.
    pub fn user(resource: &Resource, limit: usize) -> Arc<Budget> {
        Budget::new(limit, resource.knobs[1])
    }

    /// The server's budget of `resource`, with `limit`.
    pub fn server(resource: &Resource, limit: usize) -> Arc<Budget> {
        Budget::new(limit, resource.knobs[2])
    }

    /// The amount charged now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Adds `amount` if that stays within the limit.
    fn try_add(&self, amount: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(amount).filter(|&n| n <= self.limit)
            })
            .is_ok()
    }

    fn force_add(&self, amount: usize) {
        self.used.fetch_add(amount, Ordering::AcqRel);
    }

    fn sub(&self, amount: usize) {
        self.used.fetch_sub(amount, Ordering::AcqRel);
    }
}

/// A charge that would have gone past a budget (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// The setting whose limit it would pass.
    pub knob: &'static str,
    /// That limit.
    pub limit: usize,
}

/// The budgets of one resource that one connection charges: its own, its user's and
/// the server's.
pub(crate) struct Account {
    resource: &'static Resource,
    /// Connection, user, server (rule 1).
    budgets: [Arc<Budget>; 3],
    /// Refusals, counted and logged at most once per interval.
    refusals: Arc<Tally>,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("unit", &self.resource.unit)
            .field("conn", &self.budgets[0].used())
            .field("user", &self.budgets[1].used())
            .field("server", &self.budgets[2].used())
            .finish()
    }
}

impl Account {
    /// A connection's account of `resource`, charging `user`'s and `server`'s budgets
    /// too.
    pub fn new(
        resource: &'static Resource,
        conn_limit: usize,
        user: Arc<Budget>,
        server: Arc<Budget>,
        refusals: Arc<Tally>,
    ) -> Arc<Account> {
        Arc::new(Account {
            resource,
            budgets: [Budget::new(conn_limit, resource.knobs[0]), user, server],
            refusals,
        })
    }

    /// The user's budget, shared with the user's other connections.
    pub fn user(&self) -> &Arc<Budget> {
        &self.budgets[1]
    }

    /// Charges `amount` to every budget, or to none (rule 1).
    pub fn charge(self: &Arc<Self>, amount: usize) -> Result<Charge, OverBudget> {
        for (i, budget) in self.budgets.iter().enumerate() {
            if !budget.try_add(amount) {
                for earlier in &self.budgets[..i] {
                    earlier.sub(amount);
                }
                let over = OverBudget {
                    knob: budget.knob,
                    limit: budget.limit,
                };
                let r = self.resource;
                self.refusals.hit(|| {
                    format!(
                        "refusing a 9P request with {}: {amount} {} more would pass {} ({} {})",
                        r.errno, r.unit, over.knob, over.limit, r.unit
                    )
                });
                return Err(over);
            }
        }
        Ok(Charge {
            amount,
            account: Some(Arc::clone(self)),
        })
    }

    /// Charges `amount` even past the limits (buffers bounded by msize, rule 2).
    pub fn force(self: &Arc<Self>, amount: usize) -> Charge {
        for budget in &self.budgets {
            budget.force_add(amount);
        }
        Charge {
            amount,
            account: Some(Arc::clone(self)),
        }
    }
}

/// An amount (bytes, descriptors) charged to a connection's budgets; dropping it gives
/// it back.
///
/// A tree gets one from [`Ctx::charge`](crate::Ctx::charge) or
/// [`Ctx::charge_fd`](crate::Ctx::charge_fd) and keeps it as long as it keeps what it
/// charged for (in a fid's state, for a listing or an open file).
pub struct Charge {
    amount: usize,
    account: Option<Arc<Account>>,
}

impl Charge {
    /// A charge of nothing, to nobody: for work outside any connection.
    pub fn none() -> Charge {
        Charge {
            amount: 0,
            account: None,
        }
    }

    /// A charge of `amount` to nobody (a context outside any connection).
    pub(crate) fn free(amount: usize) -> Charge {
        Charge {
            amount,
            account: None,
        }
    }

    /// The amount charged (bytes or descriptors).
    pub fn amount(&self) -> usize {
        self.amount
    }

    /// Changes the charge to `amount`, past the limits if need be (buffers, rule 2).
    pub(crate) fn set_forced(&mut self, amount: usize) {
        if let Some(account) = &self.account {
            for budget in &account.budgets {
                if amount > self.amount {
                    budget.force_add(amount - self.amount);
                } else {
                    budget.sub(self.amount - amount);
                }
            }
        }
        self.amount = amount;
    }
}

impl fmt::Debug for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Charge")
            .field("amount", &self.amount)
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
            &MEMORY,
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
        assert_eq!(a.charge(20).unwrap_err().knob, MEMORY.knobs[0]);
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
