//! Who may attach, and as whom the attach's requests run.
//!
//! Who a peer is comes from the kernel or from a certificate, never from what the peer
//! claims in `Tattach`:
//!
//! 1. A connection whose transport authenticated user `U` (a TLS client certificate's
//!    common name) may attach only as `U`: `uname` must be `U` or empty, and
//!    `n_uname`, when given, must be `U`'s uid.
//! 2. A peer that authenticated as a *node* of the cluster (a node certificate,
//!    `node:HOST`, [`nf_link::tls::NODE_PREFIX`]) hands sessions on for users (tree
//!    spawn): it may attach as any user with an account here (`uname`, or `n_uname`;
//!    both given must name the same account), except root.
//! 3. A peer that authenticated as a *gateway* (a gateway certificate, `gateway:NAME`,
//!    [`nf_link::tls::GATEWAY_PREFIX`]) serves users in front of many nodes: if this
//!    node trusts it (`NAME` is in [`AttachPolicy::trusted_gateways`], `nf serve
//!    --trust-gateway NAME`) it may attach for users exactly as a node may (rule 2);
//!    a gateway that is not trusted is refused, whatever it asks.
//! 4. A local connection carries the uid of the process at the other end: on a unix
//!    socket or a shared-memory channel as the kernel recorded it at `connect`
//!    (`SO_PEERCRED`), on loopback tcp the owner of the connecting socket as the kernel
//!    reports it (`sock_diag`). That process may attach only as its own user — `uname`
//!    empty or its account's name, `n_uname` unset or its uid. Root (uid 0) may attach
//!    as anyone (`n_uname` first, else `uname`; both unset: root).
//! 5. A connection whose transport identifies nobody is refused.
//! 6. A server that does not run as root cannot act as anyone else, so it serves only
//!    its own user: any other attach is refused.
//! 7. The user must have an account on this host (the system's user database, through
//!    NSS: `/etc/passwd`, LDAP, …); its primary group and supplementary groups are read
//!    from there at attach time.
//!
//! Refusals answer `EACCES` and are logged with the names involved, quoted (and, for
//! an untrusted gateway, the flag that would trust it) — in full only when none came
//! in the 10 s before, else counted into one summary line per 10 s (`refusals.rs`),
//! so a user retrying in a loop cannot flood `/log`. An attach that is
//! let in yields the account's [`Creds`]: the mount table makes every request on the
//! attach's fids run with them (fsuid, fsgid, supplementary groups on the serving
//! thread), so the kernel applies that user's permissions to host files, and in-memory
//! trees (pipes, `/mem`) check ownership against them.

use nf_ninep::errno::EACCES;
use nf_ninep::{Tattach, NONUNAME};
use nf_ninep_server::{Creds, Ctx, FsError, FsResult};

/// One user account: name, uid, primary gid and supplementary groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The login name.
    pub name: String,
    /// The user id.
    pub uid: u32,
    /// The primary group id.
    pub gid: u32,
    /// Every group the user is in (the primary one included).
    pub groups: Vec<u32>,
}

impl Account {
    /// The identity requests of this account run with.
    pub fn creds(&self) -> Creds {
        Creds::new(self.uid, self.gid, self.groups.clone())
    }
}

/// Where accounts are looked up.
pub trait Accounts: Send + Sync {
    /// The account named `name`, if there is one.
    fn by_name(&self, name: &str) -> Option<Account>;
    /// The account of `uid`, if there is one.
    fn by_uid(&self, uid: u32) -> Option<Account>;
}

/// The system's user database (NSS: `/etc/passwd` and `/etc/group`, LDAP, …).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAccounts;

impl SystemAccounts {
    fn account(user: nix::unistd::User) -> Account {
        let groups = std::ffi::CString::new(user.name.clone())
            .ok()
            .and_then(|name| nix::unistd::getgrouplist(&name, user.gid).ok())
            .map(|gs| gs.into_iter().map(|g| g.as_raw()).collect())
            .unwrap_or_else(|| vec![user.gid.as_raw()]);
        Account {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups,
        }
    }
}

impl Accounts for SystemAccounts {
    fn by_name(&self, name: &str) -> Option<Account> {
        let user = nix::unistd::User::from_name(name).ok()??;
        Some(Self::account(user))
    }

    fn by_uid(&self, uid: u32) -> Option<Account> {
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok()??;
        Some(Self::account(user))
    }
}

/// The account name of `uid` in the system's user database, if there is one.
pub fn account_name(uid: u32) -> Option<String> {
    SystemAccounts.by_uid(uid).map(|a| a.name)
}

/// The node's attach policy: rules 1–7 (module docs), with the gateways it trusts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachPolicy {
    /// Common names of the gateways that may attach for users (rule 3).
    pub trusted_gateways: Vec<String>,
}

impl AttachPolicy {
    /// The attach check with the system's accounts, for a server running as this
    /// process's effective uid.
    pub fn check(&self, ctx: &Ctx, req: &Tattach) -> FsResult<Creds> {
        let server_uid = rustix::process::geteuid().as_raw();
        self.check_with(&SystemAccounts, server_uid, ctx, req)
    }

    /// The attach check with accounts from `accounts`, for a server running as
    /// `server_uid`.
    pub fn check_with(
        &self,
        accounts: &dyn Accounts,
        server_uid: u32,
        ctx: &Ctx,
        req: &Tattach,
    ) -> FsResult<Creds> {
        let account = if let Some(user) = ctx.user() {
            self.authenticated(accounts, ctx, req, user)?
        } else if let Some(uid) = ctx.peer_uid() {
            local(accounts, ctx, req, uid)?
        } else {
            refused(ctx, req, "the connection's transport does not say who the peer is (use the unix socket, loopback tcp or TLS with a client certificate)");
            return Err(FsError::Errno(EACCES));
        };
        if server_uid != 0 && account.uid != server_uid {
            refused(ctx, req, &format!("this server runs as uid {server_uid}, not as root, so it can act only as its own user (run nf serve as root to serve every user)"));
            return Err(FsError::Errno(EACCES));
        }
        Ok(account.creds())
    }

    /// Rules 1–3 (and 7).
    fn authenticated(
        &self,
        accounts: &dyn Accounts,
        ctx: &Ctx,
        req: &Tattach,
        user: &str,
    ) -> FsResult<Account> {
        if user.starts_with(nf_link::tls::NODE_PREFIX) {
            return for_users(accounts, ctx, req, user);
        }
        if let Some(gateway) = user.strip_prefix(nf_link::tls::GATEWAY_PREFIX) {
            if !self.trusted_gateways.iter().any(|t| t == gateway) {
                refused(ctx, req, &format!("this node does not trust gateway {gateway:?} (to let it attach for users, start nf serve with --trust-gateway {gateway})"));
                return Err(FsError::Errno(EACCES));
            }
            return for_users(accounts, ctx, req, user);
        }
        if !req.uname.is_empty() && req.uname != user {
            refused(
                ctx,
                req,
                "a user may only attach as the identity it authenticated as",
            );
            return Err(FsError::Errno(EACCES));
        }
        let Some(account) = accounts.by_name(user) else {
            refused(
                ctx,
                req,
                "the authenticated user has no account on this host",
            );
            return Err(FsError::Errno(EACCES));
        };
        if req.n_uname != NONUNAME && req.n_uname != account.uid {
            refused(
                ctx,
                req,
                &format!(
                    "n_uname is not the authenticated user's uid ({})",
                    account.uid
                ),
            );
            return Err(FsError::Errno(EACCES));
        }
        Ok(account)
    }
}

/// Rules 2 and 3: a node or trusted gateway (`peer`, as `node:…` / `gateway:…`)
/// acting for a user.
fn for_users(accounts: &dyn Accounts, ctx: &Ctx, req: &Tattach, peer: &str) -> FsResult<Account> {
    let asked = if req.n_uname != NONUNAME {
        accounts.by_uid(req.n_uname)
    } else {
        accounts.by_name(&req.uname)
    };
    let Some(account) = asked.filter(|a| req.uname.is_empty() || req.uname == a.name) else {
        refused(
            ctx,
            req,
            &format!("{peer:?}, a node or gateway, asked for a user with no account on this host"),
        );
        return Err(FsError::Errno(EACCES));
    };
    if account.uid == 0 {
        refused(ctx, req, "a node or gateway may not act as root");
        return Err(FsError::Errno(EACCES));
    }
    tracing::info!(peer = ?peer, user = %account.name, conn = ctx.conn_id(), "attached for a user");
    Ok(account)
}

/// Logs (or counts) a refused attach (`crate::refusals`), naming the peer and what
/// it asked for with every client-chosen name quoted and escaped. The gateway reports
/// its own refusals here too, so neither floods its log.
pub fn refused(ctx: &Ctx, req: &Tattach, why: &str) {
    let peer = match (ctx.user(), ctx.peer_uid()) {
        (Some(user), _) => format!("{user:?}"),
        (None, Some(uid)) => format!("uid {uid}"),
        (None, None) => "an unnamed peer".to_string(),
    };
    let asked = match (req.uname.is_empty(), req.n_uname) {
        (true, NONUNAME) => "itself".to_string(),
        (false, NONUNAME) => format!("{:?}", req.uname),
        (true, uid) => format!("uid {uid}"),
        (false, uid) => format!("{:?} (uid {uid})", req.uname),
    };
    crate::refusals::refused(&peer, &asked, ctx.conn_id(), why);
}

/// Rule 4 (and 7).
fn local(accounts: &dyn Accounts, ctx: &Ctx, req: &Tattach, uid: u32) -> FsResult<Account> {
    let asked = if req.n_uname != NONUNAME {
        accounts.by_uid(req.n_uname)
    } else if !req.uname.is_empty() {
        accounts.by_name(&req.uname)
    } else {
        accounts.by_uid(uid)
    };
    let Some(account) = asked else {
        refused(ctx, req, "no account on this host for the user asked for");
        return Err(FsError::Errno(EACCES));
    };
    let names_agree = req.uname.is_empty() || req.uname == account.name;
    if names_agree && (uid == 0 || account.uid == uid) {
        return Ok(account);
    }
    refused(
        ctx,
        req,
        "a local process may only attach as its own user (only root may attach as anyone)",
    );
    Err(FsError::Errno(EACCES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::NOFID;
    use nf_ninep_server::Cancel;
    use std::sync::Arc;

    struct Fixed(Vec<Account>);

    impl Accounts for Fixed {
        fn by_name(&self, name: &str) -> Option<Account> {
            self.0.iter().find(|a| a.name == name).cloned()
        }
        fn by_uid(&self, uid: u32) -> Option<Account> {
            self.0.iter().find(|a| a.uid == uid).cloned()
        }
    }

    fn accounts() -> Fixed {
        let account = |name: &str, uid, gid, groups: &[u32]| Account {
            name: name.into(),
            uid,
            gid,
            groups: groups.to_vec(),
        };
        Fixed(vec![
            account("root", 0, 0, &[0]),
            account("ann", 1000, 1000, &[1000, 27]),
        ])
    }

    fn attach(uname: &str, n_uname: u32) -> Tattach {
        Tattach {
            fid: 0,
            afid: NOFID,
            uname: uname.into(),
            aname: String::new(),
            n_uname,
        }
    }

    fn uid_of(ctx: &Ctx, uname: &str, n_uname: u32, server: u32) -> Result<u32, u32> {
        let policy = AttachPolicy {
            trusted_gateways: vec!["gw1".into()],
        };
        policy
            .check_with(&accounts(), server, ctx, &attach(uname, n_uname))
            .map(|c| c.uid())
            .map_err(|e| e.errno().expect("an attach check answers an errno"))
    }

    fn authenticated_as(user: &str) -> Ctx {
        Ctx::new(Cancel::new(), 8192, 1, 1).with_user(Some(Arc::from(user)))
    }

    #[test]
    fn authenticated_users_attach_as_themselves_only() {
        let ann = authenticated_as("ann");
        assert_eq!(uid_of(&ann, "ann", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&ann, "", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&ann, "root", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&ann, "ann", 0, 0), Err(EACCES));
        let ghost = authenticated_as("ghost");
        assert_eq!(uid_of(&ghost, "ghost", NONUNAME, 0), Err(EACCES));
        let creds = AttachPolicy::default()
            .check_with(&accounts(), 0, &ann, &attach("", NONUNAME))
            .unwrap();
        assert_eq!((creds.gid(), creds.groups()), (1000, &[1000, 27][..]));
    }

    #[test]
    fn nodes_attach_for_users_but_never_as_root() {
        let node = authenticated_as("node:n1");
        assert_eq!(uid_of(&node, "ann", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&node, "", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&node, "root", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&node, "", 0, 0), Err(EACCES));
        assert_eq!(uid_of(&node, "ghost", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&node, "ann", 0, 0), Err(EACCES), "names disagree");
    }

    #[test]
    fn trusted_gateways_attach_for_users_but_never_as_root() {
        let gw = authenticated_as("gateway:gw1");
        assert_eq!(uid_of(&gw, "ann", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&gw, "", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&gw, "ann", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&gw, "root", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&gw, "", 0, 0), Err(EACCES));
        assert_eq!(uid_of(&gw, "ghost", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&gw, "ann", 0, 0), Err(EACCES), "names disagree");
    }

    #[test]
    fn gateways_not_trusted_are_refused() {
        for who in ["gateway:gw2", "gateway:", "gateway:gw1x"] {
            let gw = authenticated_as(who);
            assert_eq!(uid_of(&gw, "ann", NONUNAME, 0), Err(EACCES), "{who}");
            assert_eq!(uid_of(&gw, "", 1000, 0), Err(EACCES), "{who}");
        }
        let nobody_trusted = AttachPolicy::default().check_with(
            &accounts(),
            0,
            &authenticated_as("gateway:gw1"),
            &attach("ann", NONUNAME),
        );
        assert_eq!(nobody_trusted.unwrap_err().errno(), Some(EACCES));
    }

    #[test]
    fn local_peers_attach_as_their_own_user_and_root_as_anyone() {
        let local = |uid| Ctx::background(8192).with_peer_uid(Some(uid));
        assert_eq!(uid_of(&local(1000), "ann", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&local(1000), "", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&local(1000), "", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&local(1000), "root", NONUNAME, 0), Err(EACCES));
        assert_eq!(uid_of(&local(1000), "ann", 0, 0), Err(EACCES));
        assert_eq!(uid_of(&local(1000), "root", 1000, 0), Err(EACCES));
        assert_eq!(
            uid_of(&local(4242), "", NONUNAME, 0),
            Err(EACCES),
            "a uid without an account"
        );
        assert_eq!(uid_of(&local(0), "ann", NONUNAME, 0), Ok(1000));
        assert_eq!(uid_of(&local(0), "", 1000, 0), Ok(1000));
        assert_eq!(uid_of(&local(0), "", NONUNAME, 0), Ok(0));
        assert_eq!(uid_of(&local(0), "who", 7, 0), Err(EACCES));
    }

    #[test]
    fn unidentified_peers_are_refused() {
        assert_eq!(
            uid_of(&Ctx::background(8192), "ann", NONUNAME, 0),
            Err(EACCES)
        );
    }

    #[test]
    fn a_server_not_running_as_root_serves_only_its_own_user() {
        let local = |uid| Ctx::background(8192).with_peer_uid(Some(uid));
        assert_eq!(uid_of(&local(1000), "", NONUNAME, 1000), Ok(1000));
        assert_eq!(uid_of(&local(0), "", NONUNAME, 1000), Err(EACCES));
        assert_eq!(uid_of(&local(0), "ann", NONUNAME, 1000), Ok(1000));
    }
}
