//! Node files over the project's 9P client: the native half of `ninefold.files`.
//!
//! Every call names its file as `ADDR:/path` ([`nf_link::addr`]), attaches with
//! [`nf_ninep_client::connect::attach`] and uses the [`nf_ninep_client`] calls the `nf` file
//! commands use. Blocking 9P traffic runs with the GIL released. The Python module
//! (`ninefold/files.py`) wraps [`RemoteFile`] in the `io` classes.
//!
//! Errors: a server's errno becomes the `OSError` subclass Python gives that errno
//! (`FileNotFoundError`, `PermissionError`, …) with the target as its filename; a
//! server that cannot be reached is a `ConnectionError` (`TimeoutError` past the
//! timeout) naming the address; a target that cannot be parsed is a `ValueError`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nf_link::addr::{is_remote, parse_target, AddrError, Target};
use nf_link::tls::TlsFiles;
use nf_ninep::errno::{EACCES, EISDIR};
use nf_ninep::{LOpenFlags, QidType};
use nf_ninep_client::connect::{ConnectError, ConnectOptions};
use nf_ninep_client::{base_name, ClientError, CopyError, File, FileCopyError, Root, Stat};
use pyo3::exceptions::{
    PyConnectionError, PyConnectionRefusedError, PyOSError, PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// What went wrong, built without the GIL and made a Python exception after.
enum Fail {
    /// The target string cannot be understood.
    Addr(AddrError),
    /// Attaching to the server failed.
    Connect {
        /// The server's address.
        addr: String,
        /// The user attached as.
        user: String,
        /// Why (boxed: a TLS error is large).
        err: Box<ConnectError>,
    },
    /// The server (or the connection) failed a call.
    Client(ClientError),
    /// A local file failed.
    Local(PathBuf, io::Error),
    /// Bad arguments.
    Usage(String),
    /// A directory opened as a file.
    IsDir,
}

impl From<ClientError> for Fail {
    fn from(e: ClientError) -> Self {
        Fail::Client(e)
    }
}

/// `OSError(errno, message, filename)`: Python picks the subclass for the errno.
fn os_error(errno: i32, msg: String, filename: &str) -> PyErr {
    PyOSError::new_err((errno, msg, filename.to_string()))
}

/// A client error about `target` as the Python exception users expect.
fn client_err(e: &ClientError, target: &str) -> PyErr {
    let msg = format!("{target}: {e}");
    match e {
        ClientError::Remote { errno, .. } => os_error(
            i32::try_from(*errno).unwrap_or(i32::MAX),
            e.to_string(),
            target,
        ),
        ClientError::Connect { error, .. } if error.kind() == io::ErrorKind::ConnectionRefused => {
            PyConnectionRefusedError::new_err(msg)
        }
        ClientError::TimedOut { .. } => PyTimeoutError::new_err(msg),
        ClientError::Io(io) if io.kind() == io::ErrorKind::TimedOut => PyTimeoutError::new_err(msg),
        ClientError::Connect { .. }
        | ClientError::Io(_)
        | ClientError::Disconnected { .. }
        | ClientError::Decode(_)
        | ClientError::VersionRefused { .. }
        | ClientError::UnexpectedReply { .. } => PyConnectionError::new_err(msg),
        ClientError::BadPath { .. } => PyValueError::new_err(msg),
        _ => PyOSError::new_err(msg),
    }
}

impl Fail {
    /// The Python exception, its message naming `target`.
    fn into_py(self, target: &str) -> PyErr {
        match self {
            Fail::Addr(e) if e.given == target => PyValueError::new_err(e.to_string()),
            Fail::Addr(e) => PyValueError::new_err(format!("{target:?}: {e}")),
            Fail::Usage(msg) => PyValueError::new_err(msg),
            Fail::IsDir => os_error(
                EISDIR as i32,
                format!("{target} is a directory; use ninefold.files.ls to list it"),
                target,
            ),
            Fail::Local(path, e) => {
                let shown = path.display().to_string();
                match e.raw_os_error() {
                    Some(errno) => os_error(errno, format!("local file {shown}: {e}"), &shown),
                    None => PyOSError::new_err(format!("local file {shown}: {e}")),
                }
            }
            Fail::Client(e) => client_err(&e, target),
            Fail::Connect { addr, user, err } => match *err {
                ConnectError::Client(c) if c.errno() == Some(EACCES) => os_error(
                    EACCES as i32,
                    format!(
                        "the 9P server {addr} refused to let this process attach as user \
                         {user:?}: over a local socket only your own user is accepted (root \
                         may attach as anyone), over TLS only your certificate's ({c})"
                    ),
                    target,
                ),
                ConnectError::Client(c) => {
                    // A connect error names the address already (once is enough).
                    let msg = match &c {
                        ClientError::Connect { .. } | ClientError::Resolve { .. } => c.to_string(),
                        _ => format!("reaching the 9P server {addr}: {c}"),
                    };
                    match &c {
                        ClientError::Remote { errno, .. } => {
                            os_error(i32::try_from(*errno).unwrap_or(i32::MAX), msg, target)
                        }
                        ClientError::TimedOut { .. } => PyTimeoutError::new_err(msg),
                        ClientError::Connect { error, .. }
                            if error.kind() == io::ErrorKind::ConnectionRefused =>
                        {
                            PyConnectionRefusedError::new_err(msg)
                        }
                        _ => PyConnectionError::new_err(msg),
                    }
                }
                ConnectError::NoCertificate { .. } => PyValueError::new_err(format!(
                    "{addr} needs a client certificate: pass cert=, key= and ca="
                )),
                other => {
                    PyConnectionError::new_err(format!("reaching the 9P server {addr}: {other}"))
                }
            },
        }
    }
}

/// How to connect, from the keyword arguments every function takes.
fn options(
    user: Option<String>,
    timeout: Option<f64>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
) -> PyResult<ConnectOptions> {
    let timeout = match timeout {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => {
            return Err(PyValueError::new_err(format!(
                "timeout must be a positive number of seconds, not {t}"
            )))
        }
    };
    let tls = match (cert, key, ca) {
        (None, None, None) => None,
        (Some(cert), Some(key), Some(ca)) => Some(TlsFiles { cert, key, ca }),
        _ => {
            return Err(PyValueError::new_err(
                "a client certificate needs all of cert=, key= and ca= (PEM files)",
            ))
        }
    };
    Ok(ConnectOptions::new(user, tls, timeout))
}

/// Parses `target` and attaches to its server (a connection kept from an earlier
/// call where there is one: [`crate::conns`]).
fn open_root(target: &str, opts: &ConnectOptions) -> Result<(Arc<Root>, Target), Fail> {
    let t = parse_target(target).map_err(Fail::Addr)?;
    let root = crate::conns::attach_kept(&t.addr, opts).map_err(|err| Fail::Connect {
        addr: t.addr.to_string(),
        user: opts.user.clone(),
        err: Box::new(err),
    })?;
    Ok((root, t))
}

/// A remote file open for reading or writing: one 9P fid, a position, and the
/// largest piece one message moves. `ninefold.files.open` wraps it in `io` classes.
#[pyclass(module = "ninefold._native", name = "RemoteFile")]
pub(crate) struct RemoteFile {
    /// The open file; `None` once closed.
    file: Mutex<Option<File>>,
    /// The target it was opened as, for messages.
    target: String,
    /// Most bytes one read or write moves.
    chunk: u32,
}

impl RemoteFile {
    fn lock(&self) -> MutexGuard<'_, Option<File>> {
        self.file.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the open file with the GIL released.
    fn with_file<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut File) -> Result<T, ClientError> + Send,
    ) -> PyResult<T> {
        let out = py.detach(|| self.lock().as_mut().map(f));
        match out {
            None => Err(PyValueError::new_err(format!(
                "I/O operation on closed file {}",
                self.target
            ))),
            Some(r) => r.map_err(|e| client_err(&e, &self.target)),
        }
    }
}

#[pymethods]
impl RemoteFile {
    /// At most `n` bytes (and at most one message's worth) from the position, which
    /// moves past them; empty at end of file.
    fn read<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        let count = u32::try_from(n).unwrap_or(u32::MAX).min(self.chunk);
        let data = self.with_file(py, |f| {
            let data = f.read_chunk(f.position(), count)?;
            f.seek_to(f.position() + data.len() as u64);
            Ok(data)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Writes (the start of) `data` at the position with one message; returns the
    /// bytes the server took, and moves past them.
    fn write(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<usize> {
        self.with_file(py, move |f| {
            let n = f.write_at(&data, f.position())?;
            f.seek_to(f.position() + n as u64);
            Ok(n)
        })
    }

    /// Moves the position to `pos` bytes from the start.
    fn seek(&self, py: Python<'_>, pos: u64) -> PyResult<u64> {
        self.with_file(py, |f| {
            f.seek_to(pos);
            Ok(pos)
        })
    }

    /// The position.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_file(py, |f| Ok(f.position()))
    }

    /// The file's size now, asked of the server.
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_file(py, |f| Ok(f.stat()?.size()))
    }

    /// Closes the file (clunks its fid); closing again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.detach(|| self.lock().take().map(File::close));
        match r {
            Some(Err(e)) => Err(client_err(&e, &self.target)),
            _ => Ok(()),
        }
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
    }

    /// Most bytes one read or write message moves (a good buffer size).
    #[getter]
    fn chunk(&self) -> u32 {
        self.chunk
    }

    /// The target it was opened as.
    #[getter]
    fn target(&self) -> &str {
        &self.target
    }
}

/// Opens `target` (`ADDR:/path`): `mode` `"r"` to read, `"w"` to replace (made if
/// missing), `"a"` to write after the end (made if missing).
#[pyfunction]
#[pyo3(signature = (target, mode, user=None, timeout=None, cert=None, key=None, ca=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn files_open(
    py: Python<'_>,
    target: &str,
    mode: &str,
    user: Option<String>,
    timeout: Option<f64>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
) -> PyResult<RemoteFile> {
    let opts = options(user, timeout, cert, key, ca)?;
    let append = match mode {
        "r" => None,
        "w" => Some(false),
        "a" => Some(true),
        other => {
            return Err(PyValueError::new_err(format!(
                "mode must be 'r', 'w' or 'a', not {other:?}"
            )))
        }
    };
    let file = py
        .detach(|| -> Result<File, Fail> {
            let (root, t) = open_root(target, &opts)?;
            match append {
                None => {
                    let file = root.open(&t.path, LOpenFlags::RDONLY)?;
                    if file.qid().ty.contains(QidType::DIR) {
                        return Err(Fail::IsDir);
                    }
                    Ok(file)
                }
                Some(append) => {
                    let mut file = root.open_for_write(&t.path, append)?;
                    if append {
                        // Writes land at the end anyway; the position says where.
                        let size = file.stat()?.size();
                        file.seek_to(size);
                    }
                    Ok(file)
                }
            }
        })
        .map_err(|e| e.into_py(target))?;
    Ok(RemoteFile {
        chunk: file.chunk(),
        file: Mutex::new(Some(file)),
        target: target.to_string(),
    })
}

/// `(size, mode, uid, gid, nlink, mtime_sec, mtime_nsec, is_dir, is_symlink)`.
type StatTuple = (u64, u32, u32, u32, u64, u64, u64, bool, bool);

fn stat_tuple(s: &Stat) -> StatTuple {
    (
        s.size(),
        s.attr.mode,
        s.attr.uid,
        s.attr.gid,
        s.attr.nlink,
        s.attr.mtime.sec,
        s.attr.mtime.nsec,
        s.is_dir(),
        s.is_symlink(),
    )
}

/// The attributes of `target` as a tuple (see [`StatTuple`]).
#[pyfunction]
#[pyo3(signature = (target, user=None, timeout=None, cert=None, key=None, ca=None))]
pub(crate) fn files_stat(
    py: Python<'_>,
    target: &str,
    user: Option<String>,
    timeout: Option<f64>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
) -> PyResult<StatTuple> {
    let opts = options(user, timeout, cert, key, ca)?;
    py.detach(|| -> Result<StatTuple, Fail> {
        let (root, t) = open_root(target, &opts)?;
        Ok(stat_tuple(&root.stat(&t.path)?))
    })
    .map_err(|e| e.into_py(target))
}

/// One entry of a listing: its name, and (when asked) its attributes.
type Listed = (String, Option<StatTuple>);

/// The entries of directory `target`, sorted by name (a file lists itself by its
/// name); with `detail`, each with its attributes.
#[pyfunction]
#[pyo3(signature = (target, detail=false, user=None, timeout=None, cert=None, key=None, ca=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn files_ls(
    py: Python<'_>,
    target: &str,
    detail: bool,
    user: Option<String>,
    timeout: Option<f64>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
) -> PyResult<Vec<Listed>> {
    let opts = options(user, timeout, cert, key, ca)?;
    py.detach(|| -> Result<Vec<Listed>, Fail> {
        let (root, t) = open_root(target, &opts)?;
        let top = root.stat(&t.path)?;
        if !top.is_dir() {
            let name = base_name(&t.path).unwrap_or(&t.path).to_string();
            return Ok(vec![(name, detail.then(|| stat_tuple(&top)))]);
        }
        let mut names: Vec<String> = root.readdir(&t.path)?.into_iter().map(|e| e.name).collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let s = match detail {
                    true => {
                        let full = format!("{}/{name}", t.path.trim_end_matches('/'));
                        Some(stat_tuple(&root.stat(&full)?))
                    }
                    false => None,
                };
                Ok((name, s))
            })
            .collect()
    })
    .map_err(|e| e.into_py(target))
}

/// A copy's failure, naming which side: `(side, fail)` (boxed: a result's error is
/// better small).
type CopyFail = Box<(String, Fail)>;

/// Copies one file, as `nf cp` does: `src` and `dst` are each a local path or
/// `ADDR:/path` (at least one remote); a destination that is a directory (or ends with
/// `/`) gets the source's name inside it. Returns the bytes copied.
#[pyfunction]
#[pyo3(signature = (src, dst, user=None, timeout=None, cert=None, key=None, ca=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn files_cp(
    py: Python<'_>,
    src: &str,
    dst: &str,
    user: Option<String>,
    timeout: Option<f64>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
) -> PyResult<u64> {
    let opts = options(user, timeout, cert, key, ca)?;
    py.detach(|| copy(src, dst, &opts))
        .map_err(|f| f.1.into_py(&f.0))
}

/// [`files_cp`] without the GIL.
fn copy(src: &str, dst: &str, opts: &ConnectOptions) -> Result<u64, CopyFail> {
    let at = |side: &str| {
        let side = side.to_string();
        move |e: Fail| Box::new((side, e))
    };
    let copy_err = |side: &str, local: &Path| {
        let side = side.to_string();
        let local = local.to_path_buf();
        move |e: CopyError| match e {
            CopyError::Remote(c) => Box::new((side, Fail::Client(c))),
            CopyError::Local { source, .. } => {
                Box::new((local.display().to_string(), Fail::Local(local, source)))
            }
            other => Box::new((side, Fail::Usage(other.to_string()))),
        }
    };
    match (is_remote(src), is_remote(dst)) {
        (false, false) => Err(Box::new((
            dst.to_string(),
            Fail::Usage(format!(
                "cp({src:?}, {dst:?}): neither is remote; name one as ADDR:/path or :/path"
            )),
        ))),
        (true, false) => {
            let (root, t) = open_root(src, opts).map_err(at(src))?;
            let mut file = root
                .open(&t.path, LOpenFlags::RDONLY)
                .map_err(|e| Box::new((src.to_string(), e.into())))?;
            if file.qid().ty.contains(QidType::DIR) {
                return Err(Box::new((src.to_string(), Fail::IsDir)));
            }
            let to = Path::new(dst);
            let to = if to.is_dir() || dst.ends_with('/') {
                to.join(base_name(&t.path).map_err(|e| Box::new((src.to_string(), e.into())))?)
            } else {
                to.to_path_buf()
            };
            let mut out = std::fs::File::create(&to)
                .map_err(|e| Box::new((to.display().to_string(), Fail::Local(to.clone(), e))))?;
            file.copy_to_ahead(&mut out, nf_ninep_client::READ_AHEAD)
                .map_err(copy_err(src, &to))
        }
        (false, true) => {
            let from = Path::new(src);
            let mut input = std::fs::File::open(from)
                .map_err(|e| Box::new((src.to_string(), Fail::Local(from.to_path_buf(), e))))?;
            let (root, t) = open_root(dst, opts).map_err(at(dst))?;
            let remote = |e: ClientError| Box::new((dst.to_string(), Fail::Client(e)));
            let to = root.copy_destination(&t.path, src).map_err(remote)?;
            let mut file = root.open_for_write(&to, false).map_err(remote)?;
            let n = file
                .copy_from_behind(&mut input, nf_ninep_client::WRITE_BEHIND)
                .map_err(copy_err(dst, from))?;
            file.close().map_err(remote)?;
            Ok(n)
        }
        (true, true) => {
            let (src_root, s) = open_root(src, opts).map_err(at(src))?;
            let (dst_root, d) = open_root(dst, opts).map_err(at(dst))?;
            let mut from = src_root
                .open(&s.path, LOpenFlags::RDONLY)
                .map_err(|e| Box::new((src.to_string(), e.into())))?;
            if from.qid().ty.contains(QidType::DIR) {
                return Err(Box::new((src.to_string(), Fail::IsDir)));
            }
            let remote = |e: ClientError| Box::new((dst.to_string(), Fail::Client(e)));
            let to = dst_root
                .copy_destination(&d.path, &s.path)
                .map_err(remote)?;
            let mut out = dst_root.open_for_write(&to, false).map_err(remote)?;
            let n = from
                .copy_to_file(&mut out, nf_ninep_client::WRITE_BEHIND)
                .map_err(|e| match e {
                    FileCopyError::Source(e) => Box::new((src.to_string(), Fail::Client(e))),
                    FileCopyError::Destination(e) => remote(e),
                    other => Box::new((dst.to_string(), Fail::Usage(other.to_string()))),
                })?;
            out.close().map_err(remote)?;
            Ok(n)
        }
    }
}

/// Adds the classes and functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RemoteFile>()?;
    m.add_function(wrap_pyfunction!(files_open, m)?)?;
    m.add_function(wrap_pyfunction!(files_stat, m)?)?;
    m.add_function(wrap_pyfunction!(files_ls, m)?)?;
    m.add_function(wrap_pyfunction!(files_cp, m)?)?;
    Ok(())
}
