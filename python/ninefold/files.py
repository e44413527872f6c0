"""Files on ninefold node servers, over the project's own 9P client.

Every file is named ``ADDR:/path``, as the ``nf`` file commands name them:

* ``unix:/run/ninefold/nf.sock:/fs/data.csv`` -- the server on that unix socket;
* ``tcp:host:5640:/fs/data.csv`` -- plain tcp;
* ``tls:host:564:/fs/data.csv`` -- TLS with a client certificate (``cert=``,
  ``key=``, ``ca=``);
* ``:/fs/data.csv`` or ``/fs/data.csv`` -- the local server (``$NF_ADDR``, else the
  default socket of ``nf serve``).

Through a gateway (``nf gateway``) a member's files are ``GW:/n/MEMBER/...``.

::

    import ninefold as nf
    with nf.files.open("unix:/tmp/n.sock:/fs/notes.txt", "w") as f:
        f.write("hello\\n")
    for line in nf.files.open("unix:/tmp/n.sock:/fs/notes.txt"):
        print(line, end="")
    nf.files.cp("unix:/tmp/n.sock:/fs/notes.txt", "./notes.txt")

Every function takes the same keyword arguments for the connection:

* ``user`` -- the user to attach as (default: the account running this process; with
  a certificate, whoever it names). Over a local socket only your own user is
  accepted, unless you are root.
* ``timeout`` -- seconds to wait for the server to connect and to answer each request
  (default: 10 s to connect, replies as long as they take).
* ``cert``, ``key``, ``ca`` -- PEM files for ``tls:`` addresses.

Calls reuse one connection per server and identity (up to 16 are kept; a forked
child makes its own), and an open file holds its connection until it is closed.

Errors are the exceptions Python's own files raise: a missing file is
:class:`FileNotFoundError`, a refused one :class:`PermissionError`, and so on, each
with the target as its ``filename``; a server that cannot be reached is a
:class:`ConnectionError` (:class:`TimeoutError` when it does not answer in time)
naming the address; a target that cannot be parsed is a :class:`ValueError`.
"""

import io as _io
from typing import List, NamedTuple, Optional, Union

from . import _native

__all__ = ["FileStat", "RemoteRawFile", "cp", "ls", "open", "stat"]

_builtin_open = open


class FileStat(NamedTuple):
    """The attributes of a remote file, as :func:`stat` and ``ls(detail=True)`` give.

    The ``st_*`` properties let code written for :func:`os.stat` results read it.
    """

    name: str
    """The file's name (the last component of its path)."""
    size: int
    """Size in bytes."""
    mode: int
    """The full mode: type bits and permissions (as ``st_mode``)."""
    uid: int
    """Owner's uid on the server."""
    gid: int
    """Group's gid on the server."""
    nlink: int
    """Number of hard links."""
    mtime_ns: int
    """Last modification, in nanoseconds since the epoch."""
    is_dir: bool
    """True for a directory."""
    is_symlink: bool
    """True for a symbolic link (links are not followed)."""

    @property
    def mtime(self) -> float:
        """Last modification, in seconds since the epoch."""
        return self.mtime_ns / 1e9

    @property
    def permissions(self) -> int:
        """The permission bits (``mode & 0o7777``)."""
        return self.mode & 0o7777

    @property
    def st_mode(self) -> int:
        """As :attr:`os.stat_result.st_mode`."""
        return self.mode

    @property
    def st_size(self) -> int:
        """As :attr:`os.stat_result.st_size`."""
        return self.size

    @property
    def st_uid(self) -> int:
        """As :attr:`os.stat_result.st_uid`."""
        return self.uid

    @property
    def st_gid(self) -> int:
        """As :attr:`os.stat_result.st_gid`."""
        return self.gid

    @property
    def st_nlink(self) -> int:
        """As :attr:`os.stat_result.st_nlink`."""
        return self.nlink

    @property
    def st_mtime(self) -> float:
        """As :attr:`os.stat_result.st_mtime`."""
        return self.mtime

    @property
    def st_mtime_ns(self) -> int:
        """As :attr:`os.stat_result.st_mtime_ns`."""
        return self.mtime_ns


def _stat_of(name: str, t) -> FileStat:
    size, mode, uid, gid, nlink, sec, nsec, is_dir, is_symlink = t
    return FileStat(name, size, mode, uid, gid, nlink, sec * 1_000_000_000 + nsec, is_dir, is_symlink)


def _name_of(target: str) -> str:
    path = target.rsplit(":", 1)[-1] if not target.startswith("/") else target
    parts = [p for p in path.split("/") if p]
    return parts[-1] if parts else "/"


class RemoteRawFile(_io.RawIOBase):
    """An open remote file as an unbuffered binary stream (:class:`io.RawIOBase`).

    :func:`open` returns it wrapped in :class:`io.BufferedReader` or
    :class:`io.BufferedWriter` (and :class:`io.TextIOWrapper` for text); use it
    directly (``buffering=0``) for one 9P message per call. Reads and writes move a
    position; ``seek`` works from the start, the position, or the end (the size the
    server reports now).
    """

    def __init__(self, native, mode: str):
        """Wraps ``native`` (a ``_native.RemoteFile``) opened with ``mode`` (r, w, a)."""
        super().__init__()
        self._f = native
        self._mode = mode

    @property
    def name(self) -> str:
        """The target the file was opened as."""
        return self._f.target

    @property
    def mode(self) -> str:
        """The mode it was opened with (``"rb"``, ``"wb"`` or ``"ab"``)."""
        return self._mode + "b"

    @property
    def chunk(self) -> int:
        """Most bytes one 9P message moves."""
        return self._f.chunk

    def readable(self) -> bool:
        """True if opened for reading."""
        return self._mode == "r"

    def writable(self) -> bool:
        """True if opened for writing or appending."""
        return self._mode in ("w", "a")

    def seekable(self) -> bool:
        """True: the position can be set (a stream or pipe on the server ignores it)."""
        return True

    def readinto(self, b) -> int:
        """Reads up to ``len(b)`` bytes (one message) into ``b``; 0 at end of file."""
        self._checkClosed()
        if not self.readable():
            raise _io.UnsupportedOperation(f"{self.name} is not open for reading")
        # Released on return, so a caller may resize `b` at once (RawIOBase.read does).
        with memoryview(b) as whole, whole.cast("B") as view:
            data = self._f.read(len(view))
            view[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        """At most ``size`` bytes (one message's worth); all to end of file if negative.

        Unlike ``RawIOBase.read``, nothing of ``size`` bytes is allocated up front, so a
        huge ``size`` reads one message instead of failing with ``MemoryError``.
        """
        self._checkClosed()
        if not self.readable():
            raise _io.UnsupportedOperation(f"{self.name} is not open for reading")
        if size is None or size < 0:
            return self.readall()
        return self._f.read(min(size, self._f.chunk))

    def readall(self) -> bytes:
        """Reads from the position to end of file, one message's worth at a time."""
        self._checkClosed()
        if not self.readable():
            raise _io.UnsupportedOperation(f"{self.name} is not open for reading")
        parts = []
        while True:
            data = self._f.read(self._f.chunk)
            if not data:
                return b"".join(parts)
            parts.append(data)

    def write(self, b) -> int:
        """Writes (the start of) ``b`` with one message; returns the bytes written."""
        self._checkClosed()
        if not self.writable():
            raise _io.UnsupportedOperation(f"{self.name} is not open for writing")
        return self._f.write(bytes(b))

    def seek(self, offset: int, whence: int = _io.SEEK_SET) -> int:
        """Moves the position, as :meth:`io.IOBase.seek`; returns the new position."""
        self._checkClosed()
        if whence == _io.SEEK_SET:
            pos = offset
        elif whence == _io.SEEK_CUR:
            pos = self._f.tell() + offset
        elif whence == _io.SEEK_END:
            pos = self._f.size() + offset
        else:
            raise ValueError(f"whence must be 0, 1 or 2, not {whence!r}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        return self._f.seek(pos)

    def tell(self) -> int:
        """The position."""
        self._checkClosed()
        return self._f.tell()

    def close(self) -> None:
        """Closes the file on the server; closing again does nothing."""
        if not self.closed:
            try:
                self._f.close()
            finally:
                super().close()

    def __repr__(self) -> str:
        return f"<ninefold.files.RemoteRawFile {self.name!r} mode={self.mode!r}>"


def _conn(user, timeout, cert, key, ca):
    return {
        "user": user,
        "timeout": None if timeout is None else float(timeout),
        "cert": None if cert is None else str(cert),
        "key": None if key is None else str(key),
        "ca": None if ca is None else str(ca),
    }


def open(  # noqa: A001 - the name users expect
    target: str,
    mode: str = "r",
    buffering: int = -1,
    *,
    user: Optional[str] = None,
    timeout: Optional[float] = None,
    cert=None,
    key=None,
    ca=None,
    encoding: Optional[str] = None,
    errors: Optional[str] = None,
    newline: Optional[str] = None,
):
    """Opens the remote file ``target`` (``ADDR:/path``) and returns a file object.

    ``mode`` is ``"r"`` (read, the default), ``"w"`` (write, replacing the content;
    the file is made with mode 0644 if missing) or ``"a"`` (write after the end, made
    if missing), with ``"b"`` for bytes or ``"t"`` for text (the default). Text is
    UTF-8 unless ``encoding`` says otherwise; ``errors`` and ``newline`` are as for
    the built-in :func:`open`.

    The object is what the built-in :func:`open` gives: :class:`io.TextIOWrapper` for
    text, :class:`io.BufferedReader` / :class:`io.BufferedWriter` for bytes, or with
    ``buffering=0`` (bytes only) the :class:`RemoteRawFile` itself. It reads, writes,
    iterates by line and closes as files do, and is a context manager. Buffers are
    one 9P message large unless ``buffering`` gives a size.

    Raises :class:`FileNotFoundError` for a missing file (in read mode, or a missing
    directory on the way), :class:`IsADirectoryError` for a directory,
    :class:`PermissionError` when the server refuses, :class:`ConnectionError` /
    :class:`TimeoutError` when it cannot be reached, :class:`ValueError` for a target
    or mode that cannot be understood.
    """
    if not isinstance(target, str):
        raise TypeError(f"target must be a str 'ADDR:/path', not {type(target).__name__}")
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, not {type(mode).__name__}")
    kinds = set(mode)
    base = [c for c in mode if c in "rwa"]
    if len(base) != 1 or not kinds <= set("rwabt") or len(mode) != len(kinds) or {"b", "t"} <= kinds:
        raise ValueError(f"invalid mode {mode!r} (use r, w or a, with b for bytes or t for text)")
    binary = "b" in kinds
    if binary and (encoding is not None or errors is not None or newline is not None):
        raise ValueError("binary mode takes no encoding, errors or newline")
    if buffering == 0 and not binary:
        raise ValueError("unbuffered (buffering=0) needs binary mode")
    if buffering == 1 and binary:
        buffering = -1
    native = _native.files_open(target, base[0], **_conn(user, timeout, cert, key, ca))
    raw = RemoteRawFile(native, base[0])
    if buffering == 0:
        return raw
    try:
        size = buffering if buffering > 1 else raw.chunk
        buffered = _io.BufferedReader(raw, size) if raw.readable() else _io.BufferedWriter(raw, size)
        if binary:
            return buffered
        text = _io.TextIOWrapper(
            buffered,
            encoding=encoding or "utf-8",
            errors=errors,
            newline=newline,
            line_buffering=buffering == 1,
        )
        text.mode = mode
        return text
    except BaseException:
        raw.close()
        raise


def stat(
    target: str,
    *,
    user: Optional[str] = None,
    timeout: Optional[float] = None,
    cert=None,
    key=None,
    ca=None,
) -> FileStat:
    """The attributes of ``target`` (``ADDR:/path``) as a :class:`FileStat`.

    A symbolic link's own attributes, not its target's. Raises
    :class:`FileNotFoundError` if it does not exist.
    """
    t = _native.files_stat(target, **_conn(user, timeout, cert, key, ca))
    return _stat_of(_name_of(target), t)


def ls(
    target: str,
    *,
    detail: bool = False,
    user: Optional[str] = None,
    timeout: Optional[float] = None,
    cert=None,
    key=None,
    ca=None,
) -> Union[List[str], List[FileStat]]:
    """The entries of the directory ``target`` (``ADDR:/path``), sorted by name.

    Names only (without ``.`` and ``..``), as :func:`os.listdir`; with
    ``detail=True`` a :class:`FileStat` per entry (``name``, ``is_dir``, ``size``, …).
    A file that is not a directory lists itself, as ``ls`` does. Raises
    :class:`FileNotFoundError` if ``target`` does not exist.
    """
    entries = _native.files_ls(target, detail, **_conn(user, timeout, cert, key, ca))
    if detail:
        return [_stat_of(name, t) for name, t in entries]
    return [name for name, _ in entries]


def cp(
    src: str,
    dst: str,
    *,
    user: Optional[str] = None,
    timeout: Optional[float] = None,
    cert=None,
    key=None,
    ca=None,
) -> int:
    """Copies one file, as ``nf cp`` does; returns the bytes copied.

    ``src`` and ``dst`` are each a local path or ``ADDR:/path`` (``:/path`` for the
    local server); at least one must be remote, and both may be (on the same server
    or two). A destination that is a directory, or ends with ``/``, gets the source's
    name inside it; an existing destination file is replaced. Local paths may be
    :class:`os.PathLike`. Raises :class:`ValueError` when neither side is remote.
    """
    import os as _os

    src = _os.fspath(src)
    dst = _os.fspath(dst)
    return _native.files_cp(src, dst, **_conn(user, timeout, cert, key, ca))
