//! Starting a session: version negotiation and attach.

use std::ops::Deref;

use crate::error::ClientError;
use crate::fid::Fid;
use crate::Client;
use nf_link::Transport;
use nf_ninep::frame::{encode_frame, FrameDecoder};
use nf_ninep::message::*;
use nf_ninep::types::{NOFID, NONUNAME, NOTAG};
use nf_ninep::version::{MIN_MSIZE, VERSION};

/// Sends `Tversion` and reads `Rversion` directly on the transport (before the reader
/// thread starts); returns the negotiated msize.
pub(crate) fn version(t: &dyn Transport, msize: u32) -> Result<u32, ClientError> {
    let mut out = Vec::new();
    let msg = Tmessage::from(Tversion {
        msize,
        version: VERSION.to_string(),
    });
    encode_frame(NOTAG, &msg, msize.max(MIN_MSIZE), &mut out).map_err(|source| {
        ClientError::Encode {
            op: "version",
            source,
        }
    })?;
    t.send(&out)?;
    let decoder = FrameDecoder::new(msize.max(MIN_MSIZE));
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    let reply = loop {
        if let Some((frame, _)) = decoder.decode::<Rmessage>(&buf[..filled])? {
            break frame.body;
        }
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match t.recv(&mut buf[filled..])? {
            0 => {
                return Err(ClientError::Disconnected {
                    reason: String::from(
                        "the server closed the connection during version negotiation",
                    ),
                })
            }
            n => filled += n,
        }
    };
    match reply {
        Rmessage::Rversion(r)
            if r.version == VERSION && r.msize >= MIN_MSIZE && r.msize <= msize =>
        {
            Ok(r.msize)
        }
        Rmessage::Rversion(r) => Err(ClientError::VersionRefused {
            answered: r.version,
            msize: r.msize,
        }),
        Rmessage::Rlerror(e) => Err(ClientError::Remote {
            op: "version",
            path: String::new(),
            errno: e.ecode,
        }),
        other => Err(ClientError::UnexpectedReply {
            op: "version",
            got: other.msg_type().name(),
        }),
    }
}

/// The root of an attached tree: every path operation starts here. Dereferences to its
/// [`Fid`].
#[derive(Debug)]
pub struct Root {
    fid: Fid,
}

impl Deref for Root {
    type Target = Fid;

    fn deref(&self) -> &Fid {
        &self.fid
    }
}

impl Client {
    /// Attaches as user `uname` to the tree `aname` (`""` for the default tree).
    pub fn attach(&self, uname: &str, aname: &str) -> Result<Root, ClientError> {
        self.attach_as(uname, aname, NONUNAME)
    }

    /// Attaches with a numeric uid as well (`NONUNAME` for none).
    pub fn attach_as(&self, uname: &str, aname: &str, n_uname: u32) -> Result<Root, ClientError> {
        let fid = self.new_fid();
        let msg = Tattach {
            fid,
            afid: NOFID,
            uname: uname.to_string(),
            aname: aname.to_string(),
            n_uname,
        };
        let pick = |r| match r {
            Rmessage::Rattach(a) => Some(a.qid),
            _ => None,
        };
        let qid = self
            .request_within("attach", msg, pick, Some(self.handshake_timeout()))
            .map_err(|e| e.at(aname))?;
        Ok(Root {
            fid: Fid::new(self.clone(), fid, qid, String::from("/")),
        })
    }
}
