//! [`Fid`]: a client-side handle on a server fid, clunked when dropped.

use crate::error::ClientError;
use crate::Client;
use nf_ninep::message::*;
use nf_ninep::types::Qid;

/// A fid of this client's connection: names one file on the server.
///
/// Dropping it clunks it (waiting for the answer, ignoring errors); [`Fid::clunk`] does
/// the same and reports the error.
pub struct Fid {
    client: Client,
    num: u32,
    qid: Qid,
    path: String,
    live: bool,
}

impl std::fmt::Debug for Fid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fid")
            .field("num", &self.num)
            .field("path", &self.path)
            .field("qid", &self.qid)
            .finish()
    }
}

impl Fid {
    pub(crate) fn new(client: Client, num: u32, qid: Qid, path: String) -> Fid {
        Fid {
            client,
            num,
            qid,
            path,
            live: true,
        }
    }

    /// The fid number on the wire.
    pub fn number(&self) -> u32 {
        self.num
    }

    /// The file's qid when the fid was made (walk, attach, open).
    pub fn qid(&self) -> Qid {
        self.qid
    }

    /// The path this fid was reached by (for messages).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The connection.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn set_qid(&mut self, qid: Qid) {
        self.qid = qid;
    }

    /// Releases the fid on the server.
    pub fn clunk(mut self) -> Result<(), ClientError> {
        self.live = false;
        self.send_clunk()
    }

    fn send_clunk(&self) -> Result<(), ClientError> {
        self.client
            .request("clunk", Tclunk { fid: self.num }, |r| match r {
                Rmessage::Rclunk(_) => Some(()),
                _ => None,
            })
            .map_err(|e| e.at(&self.path))
    }

    /// Forgets the fid without clunking it (after `Tremove`, which clunks on the server).
    pub(crate) fn forget(mut self) {
        self.live = false;
    }
}

impl Drop for Fid {
    fn drop(&mut self) {
        if self.live {
            let _ = self.send_clunk();
        }
    }
}
