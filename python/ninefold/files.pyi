"""Type stubs for ninefold.files: node files over 9P (see files.py for the docs)."""

import io
import os
from typing import List, Literal, NamedTuple, Optional, Union, overload

_Path = Union[str, os.PathLike]

class FileStat(NamedTuple):
    name: str
    size: int
    mode: int
    uid: int
    gid: int
    nlink: int
    mtime_ns: int
    is_dir: bool
    is_symlink: bool
    @property
    def mtime(self) -> float: ...
    @property
    def permissions(self) -> int: ...
    @property
    def st_mode(self) -> int: ...
    @property
    def st_size(self) -> int: ...
    @property
    def st_uid(self) -> int: ...
    @property
    def st_gid(self) -> int: ...
    @property
    def st_nlink(self) -> int: ...
    @property
    def st_mtime(self) -> float: ...
    @property
    def st_mtime_ns(self) -> int: ...

class RemoteRawFile(io.RawIOBase):
    @property
    def name(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def chunk(self) -> int: ...

_TextMode = Literal["r", "w", "a", "rt", "wt", "at", "tr", "tw", "ta"]
_ReadBin = Literal["rb", "br"]
_WriteBin = Literal["wb", "bw", "ab", "ba"]

@overload
def open(
    target: str, mode: _TextMode = "r", buffering: int = -1, *, user: Optional[str] = None,
    timeout: Optional[float] = None, cert: Optional[_Path] = None, key: Optional[_Path] = None,
    ca: Optional[_Path] = None, encoding: Optional[str] = None, errors: Optional[str] = None,
    newline: Optional[str] = None,
) -> io.TextIOWrapper: ...
@overload
def open(
    target: str, mode: _ReadBin, buffering: int = -1, *, user: Optional[str] = None,
    timeout: Optional[float] = None, cert: Optional[_Path] = None, key: Optional[_Path] = None,
    ca: Optional[_Path] = None, encoding: None = None, errors: None = None, newline: None = None,
) -> Union[io.BufferedReader, RemoteRawFile]: ...
@overload
def open(
    target: str, mode: _WriteBin, buffering: int = -1, *, user: Optional[str] = None,
    timeout: Optional[float] = None, cert: Optional[_Path] = None, key: Optional[_Path] = None,
    ca: Optional[_Path] = None, encoding: None = None, errors: None = None, newline: None = None,
) -> Union[io.BufferedWriter, RemoteRawFile]: ...
def stat(
    target: str, *, user: Optional[str] = None, timeout: Optional[float] = None,
    cert: Optional[_Path] = None, key: Optional[_Path] = None, ca: Optional[_Path] = None,
) -> FileStat: ...
@overload
def ls(
    target: str, *, detail: Literal[False] = False, user: Optional[str] = None,
    timeout: Optional[float] = None, cert: Optional[_Path] = None, key: Optional[_Path] = None,
    ca: Optional[_Path] = None,
) -> List[str]: ...
@overload
def ls(
    target: str, *, detail: Literal[True], user: Optional[str] = None,
    timeout: Optional[float] = None, cert: Optional[_Path] = None, key: Optional[_Path] = None,
    ca: Optional[_Path] = None,
) -> List[FileStat]: ...
def cp(
    src: _Path, dst: _Path, *, user: Optional[str] = None, timeout: Optional[float] = None,
    cert: Optional[_Path] = None, key: Optional[_Path] = None, ca: Optional[_Path] = None,
) -> int: ...
