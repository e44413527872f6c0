//! Who may attach: the user named in `Tattach` is checked against what the transport
//! knows of the peer.
//!
//! 1. A connection whose transport authenticated user `U` (a TLS client certificate's
//!    common name) may attach only as `U`: `uname` must be `U` or empty, and
//!    `n_uname`, when given, must be `U`'s uid. `U` must be an account in this host's
//!    `/etc/passwd` (its uid is what `n_uname` is checked against); an unknown user is
//!    refused.
//! 2. A local connection (unix socket, shared-memory channel) carries the connecting
//!    process's uid (`SO_PEERCRED`, recorded by the kernel at `connect`): that process
//!    may attach only as its own user — `uname` empty or the account name of its uid,
//!    `n_uname` unset or its uid. Root (uid 0) may attach as anyone.
//! 3. A connection whose transport identifies nobody is loopback tcp without TLS
//!    (remote listening without authentication is refused at start-up, see
//!    [`crate::serve`]): any `uname` is accepted, as diod does without
//!    authentication. Such a listener is open to every user of this host; it is only
//!    made when asked for (`--tcp 127.0.0.1:PORT`) and says so in the log.
//!
//! Refusals answer `EACCES` and are logged with the names involved.
//!
//! The tree then runs with this server's own permissions: users are authenticated and
//! mapped, not impersonated (no `setuid`).

use std::path::Path;

use nf_ninep::errno::EACCES;
use nf_ninep::server::{Ctx, FsResult};
use nf_ninep::{Rlerror, Tattach, NONUNAME};

/// The accounts of the passwd file at `passwd`: (name, uid).
fn accounts(passwd: &Path) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(passwd).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?.parse().ok()?;
            Some((name.to_string(), uid))
        })
        .collect()
}

/// The uid of `user` in the passwd file at `passwd`, if the user exists.
pub fn lookup_uid(passwd: &Path, user: &str) -> Option<u32> {
    accounts(passwd)
        .into_iter()
        .find_map(|(name, uid)| (name == user).then_some(uid))
}

/// The account name of `uid` in the passwd file at `passwd`, if there is one.
pub fn lookup_name(passwd: &Path, uid: u32) -> Option<String> {
    accounts(passwd)
        .into_iter()
        .find_map(|(name, u)| (u == uid).then_some(name))
}

/// The attach check of rules 1–3, with accounts from `/etc/passwd`.
pub fn check_attach(ctx: &Ctx, req: &Tattach) -> FsResult<()> {
    check_attach_with(Path::new("/etc/passwd"), ctx, req)
}

/// The attach check of rules 1–3, with accounts from the passwd file `passwd`.
pub fn check_attach_with(passwd: &Path, ctx: &Ctx, req: &Tattach) -> FsResult<()> {
    if let Some(user) = ctx.user() {
        return check_authenticated(passwd, ctx, req, user);
    }
    match ctx.peer_uid() {
        Some(uid) => check_local(passwd, ctx, req, uid),
        None => Ok(()),
    }
}

/// The uid the attach's user stands for, once [`check_attach`] has let it in: its
/// `n_uname`, else its `uname`'s account, else the transport's user. `None` where the
/// transport identifies nobody (rule 3: the names are only claims) or the name has no
/// account — trees that must know who is asking (`/mem`) refuse those.
pub fn attached_uid(passwd: &Path, ctx: &Ctx, req: &Tattach) -> Option<u32> {
    let transport = match ctx.user() {
        Some(user) => lookup_uid(passwd, user)?,
        None => ctx.peer_uid()?,
    };
    if req.n_uname != NONUNAME {
        return Some(req.n_uname);
    }
    if !req.uname.is_empty() {
        return lookup_uid(passwd, &req.uname);
    }
    Some(transport)
}

/// Rule 1.
fn check_authenticated(passwd: &Path, ctx: &Ctx, req: &Tattach, user: &str) -> FsResult<()> {
    if !req.uname.is_empty() && req.uname != user {
        tracing::warn!(authenticated = user, asked = %req.uname, conn = ctx.conn_id(), "attach refused: a user may only attach as the identity it authenticated as");
        return Err(Rlerror::new(EACCES));
    }
    let Some(uid) = lookup_uid(passwd, user) else {
        tracing::warn!(
            user,
            conn = ctx.conn_id(),
            "attach refused: the authenticated user has no account on this host"
        );
        return Err(Rlerror::new(EACCES));
    };
    if req.n_uname != NONUNAME && req.n_uname != uid {
        tracing::warn!(
            user,
            uid,
            asked = req.n_uname,
            conn = ctx.conn_id(),
            "attach refused: n_uname is not the authenticated user's uid"
        );
        return Err(Rlerror::new(EACCES));
    }
    Ok(())
}

/// Rule 2.
fn check_local(passwd: &Path, ctx: &Ctx, req: &Tattach, uid: u32) -> FsResult<()> {
    if uid == 0 {
        return Ok(());
    }
    let name = lookup_name(passwd, uid);
    let uname_ok = req.uname.is_empty() || name.as_deref() == Some(req.uname.as_str());
    let n_uname_ok = req.n_uname == NONUNAME || req.n_uname == uid;
    if uname_ok && n_uname_ok {
        return Ok(());
    }
    tracing::warn!(
        peer_uid = uid,
        peer_user = name.as_deref().unwrap_or("?"),
        asked = %req.uname,
        asked_uid = req.n_uname,
        conn = ctx.conn_id(),
        "attach refused: a local process may only attach as its own user (only root may attach as anyone)"
    );
    Err(Rlerror::new(EACCES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::server::Cancel;
    use nf_ninep::NOFID;
    use std::sync::Arc;

    fn attach(uname: &str, n_uname: u32) -> Tattach {
        Tattach {
            fid: 0,
            afid: NOFID,
            uname: uname.into(),
            aname: String::new(),
            n_uname,
        }
    }

    #[test]
    fn rules() {
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        std::fs::write(
            &passwd,
            "root:x:0:0::/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/sh\n",
        )
        .unwrap();
        assert_eq!(lookup_uid(&passwd, "ann"), Some(1000));
        let local = Ctx::background(8192);
        assert!(check_attach_with(&passwd, &local, &attach("anyone", 7)).is_ok());
        let ann = Ctx::new(Cancel::new(), 8192, 1, 1).with_user(Some(Arc::from("ann")));
        assert!(check_attach_with(&passwd, &ann, &attach("ann", NONUNAME)).is_ok());
        assert!(check_attach_with(&passwd, &ann, &attach("", 1000)).is_ok());
        assert_eq!(
            check_attach_with(&passwd, &ann, &attach("root", NONUNAME))
                .unwrap_err()
                .ecode,
            EACCES
        );
        assert_eq!(
            check_attach_with(&passwd, &ann, &attach("ann", 0))
                .unwrap_err()
                .ecode,
            EACCES
        );
        let ghost = Ctx::new(Cancel::new(), 8192, 1, 1).with_user(Some(Arc::from("ghost")));
        assert_eq!(
            check_attach_with(&passwd, &ghost, &attach("ghost", NONUNAME))
                .unwrap_err()
                .ecode,
            EACCES
        );

        // Local peers: their own user only; root as anyone.
        assert_eq!(lookup_name(&passwd, 1000).as_deref(), Some("ann"));
        let local = |uid| Ctx::background(8192).with_peer_uid(Some(uid));
        let refused = |ctx: &Ctx, uname: &str, n_uname| {
            check_attach_with(&passwd, ctx, &attach(uname, n_uname))
                .is_err_and(|e| e.ecode == EACCES)
        };
        assert!(check_attach_with(&passwd, &local(1000), &attach("ann", NONUNAME)).is_ok());
        assert!(check_attach_with(&passwd, &local(1000), &attach("", 1000)).is_ok());
        assert!(refused(&local(1000), "root", NONUNAME));
        assert!(refused(&local(1000), "ann", 0));
        assert!(
            refused(&local(4242), "nobody", NONUNAME),
            "uid without an account"
        );
        assert!(check_attach_with(&passwd, &local(4242), &attach("", NONUNAME)).is_ok());
        assert!(check_attach_with(&passwd, &local(0), &attach("ann", 1000)).is_ok());
        assert!(check_attach_with(&passwd, &local(0), &attach("who", 7)).is_ok());

        // Who an attach stands for: only where the transport identifies someone.
        let uid =
            |ctx: &Ctx, uname: &str, n_uname| attached_uid(&passwd, ctx, &attach(uname, n_uname));
        assert_eq!(uid(&Ctx::background(8192), "ann", NONUNAME), None);
        assert_eq!(uid(&local(1000), "", NONUNAME), Some(1000));
        assert_eq!(uid(&local(0), "ann", NONUNAME), Some(1000));
        assert_eq!(uid(&local(0), "", 1000), Some(1000));
        assert_eq!(uid(&local(0), "ghost", NONUNAME), None);
        assert_eq!(uid(&ann, "", NONUNAME), Some(1000));
        assert_eq!(uid(&ghost, "", NONUNAME), None);
    }
}
