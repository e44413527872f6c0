//! Who may attach: the user named in `Tattach` is checked against the identity the
//! transport authenticated.
//!
//! 1. A connection whose transport authenticated nobody (a unix socket, loopback tcp,
//!    the shared-memory channel) is local: this host's operating system already decided
//!    who may connect (the socket's file mode), so any `uname` is accepted, as diod does
//!    without authentication. Remote listening without authentication is refused at
//!    start-up (see [`crate::serve`]), so every such connection is local.
//! 2. A connection whose transport authenticated user `U` (a TLS client certificate's
//!    common name) may attach only as `U`: `uname` must be `U` or empty, and
//!    `n_uname`, when given, must be `U`'s uid.
//! 3. `U` must be a known user: an account in this host's `/etc/passwd` (its uid is
//!    what `n_uname` is checked against). An unknown user is refused.
//!
//! Refusals answer `EACCES` and are logged with the names involved.
//!
//! The tree then runs with this server's own permissions: users are authenticated and
//! mapped, not impersonated (no `setuid`).

use std::path::Path;

use nf_ninep::errno::EACCES;
use nf_ninep::server::{Ctx, FsResult};
use nf_ninep::{Rlerror, Tattach, NONUNAME};

/// The uid of `user` in the passwd file at `passwd`, if the user exists.
pub fn lookup_uid(passwd: &Path, user: &str) -> Option<u32> {
    let text = std::fs::read_to_string(passwd).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let uid = fields.nth(1)?;
        (name == user).then(|| uid.parse().ok()).flatten()
    })
}

/// The attach check of rules 1–3, with accounts from `/etc/passwd`.
pub fn check_attach(ctx: &Ctx, req: &Tattach) -> FsResult<()> {
    check_attach_with(Path::new("/etc/passwd"), ctx, req)
}

/// The attach check of rules 1–3, with accounts from the passwd file `passwd`.
pub fn check_attach_with(passwd: &Path, ctx: &Ctx, req: &Tattach) -> FsResult<()> {
    let Some(user) = ctx.user() else {
        return Ok(());
    };
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
    }
}
