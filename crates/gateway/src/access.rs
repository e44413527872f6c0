//! Who attaches to the gateway, and for whom the gateway then acts.
//!
//! The gateway never touches files itself: it passes each user's requests to members
//! in that user's name, and members apply their own checks. So what matters here is
//! *who the user is*; the rules follow the node's (`nf_node::access`):
//!
//! 1. A TLS client certificate's name `U` attaches as `U` (`uname` empty or `U`).
//! 2. A local peer (unix socket, loopback tcp) is the account of its uid; root may
//!    attach as any user (`uname`).
//! 3. A gateway in front of this one (`gateway:NAME`, a certificate with OU `ninefold
//!    gateway`) attaches for its users (`uname`) if NAME is in `trust_gateways`.
//! 4. A node (`node:NAME`) attaches only to register (`/join`).
//! 5. Anything else is refused (`EACCES`).
//!
//! The user's groups (for the config's `groups` lists) come from this host's user
//! database; a user with no account here is in no group.

use std::sync::Arc;

use nf_link::tls::{GATEWAY_PREFIX, NODE_PREFIX};
use nf_ninep::errno::EACCES;
use nf_ninep::{Tattach, NONUNAME};
use nf_ninep_server::{Ctx, FsError, FsResult};
use nf_node::access::{Accounts, SystemAccounts};

/// Who a gateway attach is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// A user, by name, and their group names.
    User {
        /// The name the gateway attaches as at members.
        name: Arc<str>,
        /// Group names, for access lists.
        groups: Vec<String>,
    },
    /// A node that may only register.
    Node(String),
}

/// Group names of `user` on this host.
fn groups_of(accounts: &dyn Accounts, user: &str) -> Vec<String> {
    let Some(account) = accounts.by_name(user) else {
        return Vec::new();
    };
    account
        .groups
        .iter()
        .filter_map(|g| {
            nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(*g))
                .ok()
                .flatten()
                .map(|g| g.name)
        })
        .collect()
}

fn refuse(ctx: &Ctx, req: &Tattach, why: &str) -> FsError {
    // Counted, not each logged: a client retrying as root must not flood the log.
    nf_node::access::refused(ctx, req, &format!("gateway: {why}"));
    FsError::Errno(EACCES)
}

/// The attach check of rules 1–5.
pub fn check(trusted: &[String], ctx: &Ctx, req: &Tattach) -> FsResult<Who> {
    check_with(&SystemAccounts, trusted, ctx, req)
}

/// [`check`] with accounts from `accounts`.
pub fn check_with(
    accounts: &dyn Accounts,
    trusted: &[String],
    ctx: &Ctx,
    req: &Tattach,
) -> FsResult<Who> {
    let name: String = if let Some(user) = ctx.user() {
        if let Some(node) = user.strip_prefix(NODE_PREFIX) {
            return Ok(Who::Node(node.to_string()));
        }
        if let Some(gw) = user.strip_prefix(GATEWAY_PREFIX) {
            if !trusted.iter().any(|t| t == gw) {
                return Err(refuse(ctx, req, "a gateway not in trust_gateways"));
            }
            if req.uname.is_empty() || req.uname == "root" {
                return Err(refuse(ctx, req, "a gateway must name an unprivileged user"));
            }
            req.uname.clone()
        } else {
            if !req.uname.is_empty() && req.uname != user {
                return Err(refuse(
                    ctx,
                    req,
                    "a user may only attach as the name in their certificate",
                ));
            }
            user.to_string()
        }
    } else if let Some(uid) = ctx.peer_uid() {
        let Some(own) = accounts.by_uid(uid) else {
            return Err(refuse(ctx, req, "the peer's uid has no account here"));
        };
        // The kernel's v9fs attaches per uid: uname "nobody" (or empty), n_uname set.
        let asked = if req.n_uname != NONUNAME {
            match accounts.by_uid(req.n_uname) {
                Some(a) => Some(a.name),
                None => return Err(refuse(ctx, req, "n_uname has no account here")),
            }
        } else {
            (!req.uname.is_empty()).then(|| req.uname.clone())
        };
        match asked {
            None => own.name,
            Some(name) if name == own.name || uid == 0 => name,
            Some(_) => {
                return Err(refuse(
                    ctx,
                    req,
                    "a local process may only attach as its own user",
                ))
            }
        }
    } else {
        return Err(refuse(
            ctx,
            req,
            "the transport does not say who the peer is",
        ));
    };
    Ok(Who::User {
        groups: groups_of(accounts, &name),
        name: Arc::from(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::NOFID;
    use nf_ninep_server::Cancel;
    use nf_node::access::Account;

    struct Fixed;
    impl Accounts for Fixed {
        fn by_name(&self, name: &str) -> Option<Account> {
            self.by_uid(match name {
                "root" => 0,
                "ann" => 1000,
                _ => return None,
            })
        }
        fn by_uid(&self, uid: u32) -> Option<Account> {
            let name = match uid {
                0 => "root",
                1000 => "ann",
                _ => return None,
            };
            Some(Account {
                name: name.into(),
                uid,
                gid: uid,
                groups: vec![],
            })
        }
    }

    fn who(ctx: Ctx, uname: &str) -> Result<String, u32> {
        who_n(ctx, uname, NONUNAME)
    }

    fn who_n(ctx: Ctx, uname: &str, n_uname: u32) -> Result<String, u32> {
        let req = Tattach {
            fid: 0,
            afid: NOFID,
            uname: uname.into(),
            aname: String::new(),
            n_uname,
        };
        match check_with(&Fixed, &["head".into()], &ctx, &req) {
            Ok(Who::User { name, .. }) => Ok(name.to_string()),
            Ok(Who::Node(n)) => Ok(format!("node {n}")),
            Err(e) => Err(e.errno().unwrap()),
        }
    }

    fn tls(user: &str) -> Ctx {
        Ctx::new(Cancel::new(), 8192, 1, 1).with_user(Some(Arc::from(user)))
    }

    fn local(uid: u32) -> Ctx {
        Ctx::background(8192).with_peer_uid(Some(uid))
    }

    #[test]
    fn users_are_who_their_certificate_or_uid_says() {
        assert_eq!(who(tls("ann"), ""), Ok("ann".into()));
        assert_eq!(who(tls("ann"), "bob"), Err(EACCES));
        assert_eq!(who(local(1000), ""), Ok("ann".into()));
        assert_eq!(who(local(1000), "root"), Err(EACCES));
        assert_eq!(who(local(0), "ann"), Ok("ann".into()));
        assert_eq!(who(local(4242), ""), Err(EACCES));
        assert_eq!(who(Ctx::background(8192), "ann"), Err(EACCES));
        // The kernel's per-uid attaches.
        assert_eq!(who_n(local(0), "nobody", 1000), Ok("ann".into()));
        assert_eq!(who_n(local(1000), "nobody", 1000), Ok("ann".into()));
        assert_eq!(who_n(local(1000), "", 0), Err(EACCES));
        assert_eq!(who_n(local(0), "", 4242), Err(EACCES));
    }

    #[test]
    fn only_trusted_gateways_act_for_users_and_never_as_root() {
        assert_eq!(who(tls("gateway:head"), "ann"), Ok("ann".into()));
        assert_eq!(who(tls("gateway:head"), "root"), Err(EACCES));
        assert_eq!(who(tls("gateway:head"), ""), Err(EACCES));
        assert_eq!(who(tls("gateway:rogue"), "ann"), Err(EACCES));
        assert_eq!(who(tls("node:n1"), "ann"), Ok("node n1".into()));
    }
}
