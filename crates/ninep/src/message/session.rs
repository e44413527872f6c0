//! Session messages: version, auth, attach, flush, and the error reply `Rlerror`.

use crate::errno;
use crate::types::Qid;
use crate::wire::wire_struct;

/// Proposes msize and protocol version: `msize[4] version[s]`. Must use tag `NOTAG`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tversion {
    /// Largest frame the client will send or accept, header included.
    pub msize: u32,
    /// Protocol the client speaks, e.g. `"9P2000.L"`.
    pub version: String,
}
wire_struct!(Tversion { msize, version });

/// Accepts a version: `msize[4] version[s]` (version `"unknown"` refuses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rversion {
    /// Negotiated msize: at most the client's.
    pub msize: u32,
    /// Protocol the server will speak, or `"unknown"`.
    pub version: String,
}
wire_struct!(Rversion { msize, version });

/// Starts authentication: `afid[4] uname[s] aname[s] n_uname[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tauth {
    /// New fid over which the authentication protocol will run.
    pub afid: u32,
    /// User name.
    pub uname: String,
    /// Tree to attach to.
    pub aname: String,
    /// Numeric uid, preferred over `uname` unless `NONUNAME`.
    pub n_uname: u32,
}
wire_struct!(Tauth {
    afid,
    uname,
    aname,
    n_uname
});

/// Returns the auth file's qid: `aqid[13]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rauth {
    /// Qid of the authentication file (type `AUTH`).
    pub aqid: Qid,
}
wire_struct!(Rauth { aqid });

/// Attaches a user to a tree: `fid[4] afid[4] uname[s] aname[s] n_uname[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tattach {
    /// New fid that will name the root of the tree.
    pub fid: u32,
    /// Authenticated afid, or `NOFID`.
    pub afid: u32,
    /// User name.
    pub uname: String,
    /// Tree to attach to.
    pub aname: String,
    /// Numeric uid, preferred over `uname` unless `NONUNAME`.
    pub n_uname: u32,
}
wire_struct!(Tattach {
    fid,
    afid,
    uname,
    aname,
    n_uname
});

/// Returns the root's qid: `qid[13]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rattach {
    /// Qid of the tree's root.
    pub qid: Qid,
}
wire_struct!(Rattach { qid });

/// Aborts the request with tag `oldtag`: `oldtag[2]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tflush {
    /// Tag of the request to abort.
    pub oldtag: u16,
}
wire_struct!(Tflush { oldtag });

/// The flush is done; `oldtag` will get no other reply: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rflush;
wire_struct!(Rflush {});

/// Failure reply to any request: `ecode[4]`, a Linux errno.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rlerror {
    /// Linux errno value (see [`crate::errno`]).
    pub ecode: u32,
}
wire_struct!(Rlerror { ecode });

impl Rlerror {
    /// An error reply carrying `ecode`.
    pub const fn new(ecode: u32) -> Self {
        Rlerror { ecode }
    }
}

impl From<&std::io::Error> for Rlerror {
    /// Maps the I/O error to a Linux errno (see [`errno::from_io_error`]); `EIO` by default.
    fn from(err: &std::io::Error) -> Self {
        Rlerror::new(errno::from_io_error(err))
    }
}

impl From<std::io::Error> for Rlerror {
    /// Same as the `&io::Error` conversion.
    fn from(err: std::io::Error) -> Self {
        Rlerror::from(&err)
    }
}
