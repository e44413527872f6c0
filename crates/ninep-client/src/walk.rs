//! Walking paths: any number of names, sent 16 to a `Twalk`.

use crate::error::ClientError;
use crate::fid::Fid;
use nf_ninep::errno::ENOENT;
use nf_ninep::message::*;
use nf_ninep::types::MAXWELEM;

/// The names of a `/`-separated path; empty elements and `.` are dropped.
pub(crate) fn split(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|n| !n.is_empty() && *n != ".")
        .map(str::to_string)
        .collect()
}

/// `base` and `names` joined, for messages.
pub(crate) fn join(base: &str, names: &[String]) -> String {
    let mut out = base.trim_end_matches('/').to_string();
    for n in names {
        out.push('/');
        out.push_str(n);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The parent's names and the last name of `path`, for operations that make or
/// remove a name.
pub(crate) fn parent_and_name(
    op: &'static str,
    path: &str,
) -> Result<(Vec<String>, String), ClientError> {
    let mut names = split(path);
    match names.pop() {
        Some(name) if name != ".." => Ok((names, name)),
        _ => Err(ClientError::BadPath {
            op,
            path: path.to_string(),
            reason: "needs a last element that is a name (not empty, `.` or `..`)",
        }),
    }
}

impl Fid {
    /// Walks `names` from this fid to a new fid (clones it for no names).
    pub fn walk_names<S: AsRef<str>>(&self, names: &[S]) -> Result<Fid, ClientError> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
        let client = self.client().clone();
        let newfid = client.new_fid();
        let shown = join(self.path(), &names);
        let mut walked: Option<Fid> = None;
        let chunks: Vec<&[String]> = if names.is_empty() {
            vec![&[]]
        } else {
            names.chunks(MAXWELEM).collect()
        };
        for (i, chunk) in chunks.into_iter().enumerate() {
            let from = walked.as_ref().map_or(self.number(), Fid::number);
            let msg = Twalk {
                fid: from,
                newfid,
                wnames: chunk.to_vec(),
            };
            let wqids = client
                .request("walk", msg, |r| match r {
                    Rmessage::Rwalk(w) => Some(w.wqids),
                    _ => None,
                })
                .map_err(|e| e.at(&shown))?;
            if wqids.len() < chunk.len() {
                // A partial walk carries no errno (walk(5)); walking the failed name
                // alone from where the walk stopped gets the server's reason.
                let failed = i * MAXWELEM + wqids.len();
                let errno = self
                    .walk_names(&names[..failed])
                    .and_then(|stop| stop.walk_names(&names[failed..=failed]))
                    .err()
                    .and_then(|e| e.errno())
                    .unwrap_or(ENOENT);
                return Err(ClientError::Remote {
                    op: "walk",
                    path: join(self.path(), &names[..=failed]),
                    errno,
                });
            }
            let qid = wqids.last().copied().unwrap_or(self.qid());
            match walked.as_mut() {
                Some(fid) => fid.set_qid(qid),
                None => walked = Some(Fid::new(client.clone(), newfid, qid, shown.clone())),
            }
        }
        Ok(walked.expect("at least one walk message was sent"))
    }

    /// Walks a `/`-separated path relative to this fid.
    pub fn walk(&self, path: &str) -> Result<Fid, ClientError> {
        self.walk_names(&split(path))
    }

    /// A second fid naming the same file.
    pub fn clone_fid(&self) -> Result<Fid, ClientError> {
        self.walk_names::<&str>(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_and_join() {
        assert_eq!(split("/a//b/./c/"), ["a", "b", "c"]);
        assert_eq!(split("../x"), ["..", "x"]);
        assert_eq!(join("/", &split("a/b")), "/a/b");
        assert_eq!(join("/", &[]), "/");
        assert!(parent_and_name("mkdir", "/").is_err());
        assert!(parent_and_name("mkdir", "a/..").is_err());
        assert_eq!(
            parent_and_name("mkdir", "/a/b").unwrap(),
            (vec!["a".to_string()], "b".to_string())
        );
    }
}
