//! The files of `/xcpu/N/` (other than `fs/` and the output streams): each open holds
//! the session ([`super::session::Hold`]), and each is readable and writable by the
//! session's user only.

use std::sync::{Mutex, PoisonError};

use nf_ninep::errno::{EACCES, EFBIG, ENOENT};
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Ctx, FsError, FsResult};
use nf_ninep_trees::synthetic::{slice_at, wants_read, wants_write, FileNode, OpenFile};

use super::ctl::{self, MAX_SETTING};
use super::fanout::Op;
use super::session::{Hold, SessionRef};

/// What a session file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `ctl`: commands in, the session id out.
    Ctl,
    /// `argv`.
    Argv,
    /// `env`.
    Env,
    /// `exec`.
    Exec,
    /// `stdin`: write only.
    Stdin,
    /// `wait`: blocks until the job ends, then its exit.
    Wait,
    /// `state`.
    State,
    /// `id`.
    Id,
    /// `clones`: the nodes the session was handed on to, once everything reached them.
    Clones,
}

impl Kind {
    /// Every kind, with its file name.
    pub const ALL: [(Kind, &'static str); 9] = [
        (Kind::Ctl, "ctl"),
        (Kind::Argv, "argv"),
        (Kind::Env, "env"),
        (Kind::Exec, "exec"),
        (Kind::Stdin, "stdin"),
        (Kind::Wait, "wait"),
        (Kind::State, "state"),
        (Kind::Id, "id"),
        (Kind::Clones, "clones"),
    ];

    fn mode(self) -> u32 {
        match self {
            Kind::Ctl | Kind::Argv | Kind::Env | Kind::Exec => 0o600,
            Kind::Stdin => 0o200,
            Kind::Wait | Kind::State | Kind::Id | Kind::Clones => 0o400,
        }
    }

    fn may_read(self) -> bool {
        self != Kind::Stdin
    }

    fn may_write(self) -> bool {
        matches!(
            self,
            Kind::Ctl | Kind::Argv | Kind::Env | Kind::Exec | Kind::Stdin
        )
    }
}

/// One file of a session.
pub struct SessionFile {
    /// Which.
    pub kind: Kind,
    /// Whose.
    pub session: SessionRef,
}

impl FileNode for SessionFile {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        self.kind.mode()
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.session.owner())
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if (wants_read(flags) && !self.kind.may_read())
            || (wants_write(flags) && !self.kind.may_write())
        {
            return Err(FsError::Errno(EACCES));
        }
        let hold = self.session.hold()?;
        let buf = match self.kind {
            Kind::Argv | Kind::Env | Kind::Exec if !flags.contains(LOpenFlags::TRUNC) => {
                self.setting(&self.session.job.lock().settings).clone()
            }
            _ => String::new(),
        };
        if self.kind == Kind::Stdin {
            self.session.stdin.update(|st| st.writers += 1);
        }
        Ok(Box::new(SessionOpen {
            kind: self.kind,
            session: self.session.clone(),
            buf: Mutex::new(buf.into_bytes()),
            _hold: hold,
        }))
    }
}

impl SessionFile {
    fn setting<'a>(&self, s: &'a ctl::Settings) -> &'a String {
        match self.kind {
            Kind::Argv => &s.argv,
            Kind::Env => &s.env,
            _ => &s.exec,
        }
    }
}

struct SessionOpen {
    kind: Kind,
    session: SessionRef,
    /// A setting file's content as this open has written it.
    buf: Mutex<Vec<u8>>,
    _hold: Hold,
}

impl SessionOpen {
    /// Stores a setting written through this open (the whole content so far).
    fn write_setting(&self, offset: u64, data: &[u8]) -> FsResult<u32> {
        let mut buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        let end = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(data.len()))
            .filter(|&e| e <= MAX_SETTING)
            .ok_or(FsError::Errno(EFBIG))?;
        let start = end - data.len();
        if start == 0 {
            // A write at the start says the value anew (`echo x > argv` through a
            // kernel client truncates with a no-op setattr, then writes at 0).
            buf.clear();
        }
        if buf.len() < end {
            buf.resize(end, 0);
        }
        buf[start..end].copy_from_slice(data);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let kind = self.kind;
        self.session.job.update(|j| {
            if j.phase != super::session::Phase::New {
                return Err(FsError::Errno(nf_ninep::errno::EBUSY));
            }
            let slot = match kind {
                Kind::Argv => &mut j.settings.argv,
                Kind::Env => &mut j.settings.env,
                _ => &mut j.settings.exec,
            };
            slot.clone_from(&text);
            Ok(())
        })?;
        // `env` is handed on as it was at `clone`; later writes stay on this node, so
        // every node can be given its own (a rank).
        let name = match kind {
            Kind::Argv => Some("argv"),
            Kind::Exec => Some("exec"),
            _ => None,
        };
        if let Some(name) = name {
            self.session.forward(|| Op::Set(name, text.clone()));
        }
        Ok(data.len() as u32)
    }
}

impl OpenFile for SessionOpen {
    fn read(&self, ctx: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        let text = match self.kind {
            Kind::Ctl | Kind::Id => format!("{}\n", self.session.id),
            Kind::State => self.session.state_text(),
            Kind::Argv | Kind::Env | Kind::Exec => {
                let s = &self.session.job.lock().settings;
                match self.kind {
                    Kind::Argv => s.argv.clone(),
                    Kind::Env => s.env.clone(),
                    _ => s.exec.clone(),
                }
            }
            Kind::Wait => {
                if offset > 0 {
                    // The exit was read whole by the first read of this open.
                    let done = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
                    return Ok(slice_at(&done, offset, count));
                }
                let exit = self.session.wait_exit(ctx)?.ok_or(FsError::Errno(ENOENT))?;
                let text = format!("{exit}\n").into_bytes();
                *self.buf.lock().unwrap_or_else(PoisonError::into_inner) = text.clone();
                return Ok(slice_at(&text, 0, count));
            }
            Kind::Clones => {
                if offset > 0 {
                    let done = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
                    return Ok(slice_at(&done, offset, count));
                }
                if !ctx.may_block() {
                    return Err(FsError::WouldBlock);
                }
                let text = self
                    .session
                    .fanout
                    .get()
                    .map(|f| f.listing())
                    .unwrap_or_default()
                    .into_bytes();
                *self.buf.lock().unwrap_or_else(PoisonError::into_inner) = text.clone();
                return Ok(slice_at(&text, 0, count));
            }
            Kind::Stdin => return Err(FsError::Errno(EACCES)),
        };
        Ok(slice_at(text.as_bytes(), offset, count))
    }

    fn write(&self, ctx: &Ctx, offset: u64, data: &[u8]) -> FsResult<u32> {
        match self.kind {
            Kind::Ctl => {
                let text = String::from_utf8_lossy(data);
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let cmd = ctl::parse(line).map_err(|r| {
                        self.session.job.update(|j| j.error = Some(r.why.clone()));
                        FsError::Errno(r.errno)
                    })?;
                    self.session.0.control(cmd, line)?;
                }
                Ok(data.len() as u32)
            }
            Kind::Argv | Kind::Env | Kind::Exec => self.write_setting(offset, data),
            Kind::Stdin => self.session.write_stdin(ctx, data),
            Kind::Wait | Kind::State | Kind::Id | Kind::Clones => Err(FsError::Errno(EACCES)),
        }
    }
}

impl Drop for SessionOpen {
    fn drop(&mut self) {
        if self.kind == Kind::Stdin {
            self.session.stdin.update(|st| {
                st.writers -= 1;
                if st.writers == 0 {
                    st.eof = true;
                }
            });
        }
    }
}
