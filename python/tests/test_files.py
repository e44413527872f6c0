"""ninefold.files against a real ``nf serve``, and through a real ``nf gateway``.

The ``nf`` binary is ``$NF_BIN``, else ``target/release/nf``, else ``target/debug/nf``
of this repository (``cargo build --release -p nf-cli``). Servers run on unix sockets
in a temporary directory and are killed when the tests end.
"""

import io
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import ninefold as nf

REPO = pathlib.Path(__file__).resolve().parents[2]
# Every wait here ends in well under a second; this only keeps a broken run from hanging.
BOUND = 30.0


def nf_bin() -> str:
    """The nf binary: $NF_BIN, else this repository's release build, else its debug."""
    given = os.environ.get("NF_BIN")
    if given:
        if not os.access(given, os.X_OK):
            pytest.fail(f"NF_BIN={given} is not an executable file", pytrace=False)
        return given
    for kind in ("release", "debug"):
        p = REPO / "target" / kind / "nf"
        if os.access(p, os.X_OK):
            return str(p)
    pytest.fail(
        f"no nf binary: set NF_BIN or build it with `cargo build --release -p nf-cli` in {REPO}",
        pytrace=False,
    )


def wait_until(what, ready, proc):
    """Waits (bounded) until ``ready()``; fails naming ``what`` if ``proc`` dies or time runs out."""
    deadline = time.monotonic() + BOUND
    while not ready():
        if proc.poll() is not None:
            out = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            pytest.fail(f"{what} exited with status {proc.returncode}: {out}", pytrace=False)
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not come up within {BOUND} s", pytrace=False)
        time.sleep(0.02)


def stop(proc):
    """Kills ``proc`` and reaps it."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=BOUND)
    except subprocess.TimeoutExpired:
        pass


class Node:
    """A running ``nf serve`` exporting ``export`` at ``/fs``, on a unix socket."""

    def __init__(self, base: pathlib.Path, name: str):
        self.dir = base / name
        self.export = self.dir / "export"
        self.export.mkdir(parents=True)
        os.chmod(self.export, 0o777)
        self.socket = self.dir / "n.sock"
        self.proc = subprocess.Popen(
            [
                nf_bin(), "serve", "-f",
                "--unix", str(self.socket),
                "--export", str(self.export),
                "--xcpu-dir", str(self.dir / "xcpu"),
                "--mem-registry", str(self.dir / "mem"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "NF_LOG": "warn"},
        )
        wait_until(f"nf serve on {self.socket}", self.socket.exists, self.proc)

    @property
    def addr(self) -> str:
        """``unix:SOCKET``."""
        return f"unix:{self.socket}"

    def at(self, path: str) -> str:
        """``unix:SOCKET:/fs/PATH``: a file in the export."""
        return f"{self.addr}:/fs/{path.lstrip('/')}"


@pytest.fixture(scope="module")
def base():
    d = pathlib.Path(tempfile.mkdtemp(prefix="nf-pyfiles-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def node(base):
    n = Node(base, "node1")
    yield n
    stop(n.proc)


@pytest.fixture(scope="module")
def node2(base):
    n = Node(base, "node2")
    yield n
    stop(n.proc)


@pytest.fixture(scope="module")
def gateway(base, node, node2):
    """``nf gateway`` with node1 and node2 as members; yields its ``unix:`` address."""
    config = base / "gateway.toml"
    config.write_text(
        "".join(
            f'[[member]]\nname = "{name}"\naddr = "{n.addr}"\n'
            for name, n in (("node1", node), ("node2", node2))
        )
    )
    sock = base / "gw.sock"
    proc = subprocess.Popen(
        [nf_bin(), "gateway", "-f", "--config", str(config), "--unix", str(sock)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "NF_LOG": "warn"},
    )
    gw = f"unix:{sock}"

    def members_up():
        if not sock.exists():
            return False
        try:
            with nf.files.open(f"{gw}:/status", timeout=5) as f:
                return "members 2 up 2" in f.read()
        except OSError:
            return False

    wait_until("nf gateway with 2 members up", members_up, proc)
    yield gw
    stop(proc)


# --- reading and writing ---------------------------------------------------------


def test_binary_write_then_read_back(node):
    data = bytes(range(256)) * 9000  # over 2 MiB: several 9P messages each way
    with nf.files.open(node.at("bin.dat"), "wb") as f:
        assert isinstance(f, io.BufferedWriter)
        f.write(data[:1000])
        f.write(data[1000:])
    assert (node.export / "bin.dat").read_bytes() == data
    with nf.files.open(node.at("bin.dat"), "rb") as f:
        assert isinstance(f, io.BufferedReader)
        assert f.read(10) == data[:10]
        assert f.read(5) == data[10:15]
        assert f.read() == data[15:]
        assert f.read() == b""
    assert f.closed


def test_text_write_read_and_line_iteration(node):
    lines = ["first line\n", "zweite Zeile — ü\n", "third without newline"]
    with nf.files.open(node.at("text.txt"), "w") as f:
        assert isinstance(f, io.TextIOWrapper)
        for line in lines:
            f.write(line)
    assert (node.export / "text.txt").read_text(encoding="utf-8") == "".join(lines)
    with nf.files.open(node.at("text.txt")) as f:
        assert f.readline() == lines[0]
        assert list(f) == lines[1:]
    with nf.files.open(node.at("text.txt"), "r") as f:
        assert f.read() == "".join(lines)
    with nf.files.open(node.at("text.txt"), "rb") as f:
        assert [line for line in f] == [line.encode() for line in lines]


def test_text_with_another_encoding(node):
    with nf.files.open(node.at("latin.txt"), "w", encoding="latin-1") as f:
        f.write("café\n")
    assert (node.export / "latin.txt").read_bytes() == b"caf\xe9\n"
    with nf.files.open(node.at("latin.txt"), encoding="latin-1") as f:
        assert f.read() == "café\n"


def test_write_replaces_and_append_appends(node):
    (node.export / "log.txt").write_text("old content that is long\n")
    with nf.files.open(node.at("log.txt"), "w") as f:
        f.write("one\n")
    assert (node.export / "log.txt").read_text() == "one\n"
    with nf.files.open(node.at("log.txt"), "a") as f:
        f.write("two\n")
    with nf.files.open(node.at("log.txt"), "ab") as f:
        f.write(b"three\n")
    assert (node.export / "log.txt").read_text() == "one\ntwo\nthree\n"
    with nf.files.open(node.at("fresh-append.txt"), "a") as f:
        f.write("made by append\n")
    assert (node.export / "fresh-append.txt").read_text() == "made by append\n"


def test_unbuffered_raw_file_and_seek(node):
    (node.export / "seek.bin").write_bytes(b"0123456789")
    with nf.files.open(node.at("seek.bin"), "rb", buffering=0) as f:
        assert isinstance(f, nf.files.RemoteRawFile)
        assert f.readable() and not f.writable()
        assert f.seek(-3, io.SEEK_END) == 7
        assert f.read() == b"789"
        f.seek(2)
        assert f.read(3) == b"234"
        assert f.tell() == 5
        # A huge size reads what there is, without allocating the size first.
        assert f.read(1 << 50) == b"56789"
        buf = bytearray(4)
        f.seek(0)
        assert f.readinto(buf) == 4 and buf == b"0123"
        buf.extend(b"!")  # the view readinto took is released
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")


def test_bad_modes_are_value_errors(node):
    for mode in ("x", "rw", "rbb", "rbt", ""):
        with pytest.raises(ValueError, match="mode"):
            nf.files.open(node.at("text.txt"), mode)
    with pytest.raises(ValueError, match="encoding"):
        nf.files.open(node.at("text.txt"), "rb", encoding="utf-8")


# --- ls, stat, cp ----------------------------------------------------------------


def test_ls(node):
    d = node.export / "listing"
    (d / "sub").mkdir(parents=True)
    (d / "b.txt").write_text("bb")
    (d / "a.txt").write_text("a")
    assert nf.files.ls(node.at("listing")) == ["a.txt", "b.txt", "sub"]
    detail = nf.files.ls(node.at("listing"), detail=True)
    assert [(e.name, e.is_dir) for e in detail] == [("a.txt", False), ("b.txt", False), ("sub", True)]
    assert [e.size for e in detail[:2]] == [1, 2]
    assert nf.files.ls(node.at("listing/a.txt")) == ["a.txt"]
    assert "fs" in nf.files.ls(f"{node.addr}:/")


def test_stat_fields(node):
    p = node.export / "stat-me.txt"
    p.write_bytes(b"x" * 1234)
    os.chmod(p, 0o640)
    os.utime(p, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    local = os.stat(p)
    s = nf.files.stat(node.at("stat-me.txt"))
    assert s.name == "stat-me.txt"
    assert s.size == s.st_size == 1234
    assert s.mode == local.st_mode and s.permissions == 0o640
    assert (s.uid, s.gid, s.nlink) == (local.st_uid, local.st_gid, local.st_nlink)
    assert s.mtime_ns == 1_700_000_000_123_456_789
    assert s.mtime == pytest.approx(1_700_000_000.123456789)
    assert not s.is_dir and not s.is_symlink
    d = nf.files.stat(node.at("/"))
    assert d.is_dir and d.st_mode & 0o170000 == 0o040000


def test_cp_both_directions_and_remote_to_remote(node, node2, tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    src = tmp_path / "up.bin"
    src.write_bytes(data)
    assert nf.files.cp(src, node.at("up.bin")) == len(data)
    assert (node.export / "up.bin").read_bytes() == data
    back = tmp_path / "down.bin"
    assert nf.files.cp(node.at("up.bin"), str(back)) == len(data)
    assert back.read_bytes() == data
    # Into a local directory: under the source's name.
    (tmp_path / "into").mkdir()
    nf.files.cp(node.at("up.bin"), str(tmp_path / "into"))
    assert (tmp_path / "into" / "up.bin").read_bytes() == data
    # Remote to remote, on one server and across two; into a remote directory.
    assert nf.files.cp(node.at("up.bin"), node.at("copy.bin")) == len(data)
    assert (node.export / "copy.bin").read_bytes() == data
    (node2.export / "incoming").mkdir()
    assert nf.files.cp(node.at("up.bin"), node2.at("incoming/")) == len(data)
    assert (node2.export / "incoming" / "up.bin").read_bytes() == data
    # Replacing a longer file leaves exactly the copy.
    (node.export / "short.txt").write_text("short")
    nf.files.cp(node.at("short.txt"), node.at("copy.bin"))
    assert (node.export / "copy.bin").read_text() == "short"


def test_cp_errors(node, tmp_path):
    with pytest.raises(ValueError, match="neither is remote"):
        nf.files.cp(tmp_path / "a", tmp_path / "b")
    with pytest.raises(FileNotFoundError) as e:
        nf.files.cp(tmp_path / "does-not-exist", node.at("x"))
    assert "does-not-exist" in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        nf.files.cp(node.at("no-such-source"), tmp_path / "y")
    assert "no-such-source" in str(e.value)
    assert not (tmp_path / "y").exists()


# --- errors ----------------------------------------------------------------------


def test_missing_file_is_file_not_found(node):
    target = node.at("nope/missing.txt")
    with pytest.raises(FileNotFoundError) as e:
        nf.files.open(target)
    assert e.value.filename == target
    assert "missing.txt" in str(e.value) or "nope" in str(e.value)
    with pytest.raises(FileNotFoundError):
        nf.files.stat(node.at("missing.txt"))
    with pytest.raises(FileNotFoundError):
        nf.files.ls(node.at("missing-dir"))
    # Writing into a directory that does not exist.
    with pytest.raises(FileNotFoundError):
        nf.files.open(node.at("no-dir/new.txt"), "w")


def test_directory_opened_to_read_is_a_directory_error(node):
    (node.export / "adir").mkdir(exist_ok=True)
    with pytest.raises(IsADirectoryError) as e:
        nf.files.open(node.at("adir"))
    assert "adir" in str(e.value)
    with pytest.raises(IsADirectoryError):
        nf.files.open(node.at("adir"), "w")


def test_file_as_a_directory_is_not_a_directory_error(node):
    (node.export / "plain.txt").write_text("x")
    with pytest.raises(NotADirectoryError):
        nf.files.open(node.at("plain.txt/inside"))


def test_bad_targets_are_value_errors():
    for bad in ("ftp:host:/x", "tcp:host:/x", "unix:/tmp/a.sock", "relative/path", ":nopath"):
        with pytest.raises(ValueError) as e:
            nf.files.open(bad)
        assert bad in str(e.value)
        with pytest.raises(ValueError):
            nf.files.stat(bad)


def test_unreachable_servers_are_connection_errors(base):
    missing = base / "nobody-here.sock"
    with pytest.raises(ConnectionError) as e:
        nf.files.open(f"unix:{missing}:/x", timeout=5)
    assert str(missing) in str(e.value)
    # A tcp port nobody listens on.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(ConnectionError) as e:
        nf.files.ls(f"tcp:127.0.0.1:{port}:/", timeout=5)
    assert f"127.0.0.1:{port}" in str(e.value)


def test_a_listener_that_never_answers_times_out(base):
    # Accepts connections (the backlog) but never speaks 9P.
    s = socket.socket(socket.AF_UNIX)
    path = str(base / "silent.sock")
    s.bind(path)
    s.listen(4)
    try:
        with pytest.raises(TimeoutError) as e:
            nf.files.stat(f"unix:{path}:/x", timeout=0.5)
        assert path in str(e.value)
    finally:
        s.close()


def test_tls_without_certificate_is_a_value_error():
    with pytest.raises(ValueError, match="cert"):
        nf.files.stat("tls:127.0.0.1:1:/x", cert="/c.pem")


@pytest.mark.skipif(os.geteuid() != 0, reason="attaching as another user needs root")
def test_permission_denied_as_another_user(node):
    p = node.export / "secret.txt"
    p.write_text("root only")
    os.chown(p, 0, 0)
    os.chmod(p, 0o600)
    with pytest.raises(PermissionError) as e:
        nf.files.open(node.at("secret.txt"), user="nobody")
    assert e.value.filename == node.at("secret.txt")
    with nf.files.open(node.at("secret.txt"), user="root") as f:
        assert f.read() == "root only"


# --- through the gateway ---------------------------------------------------------


def test_read_write_through_the_gateway(gateway, node, node2):
    assert nf.files.ls(f"{gateway}:/n") == ["node1", "node2"]
    for name, n in (("node1", node), ("node2", node2)):
        target = f"{gateway}:/n/{name}/fs/via-gateway.txt"
        with nf.files.open(target, "w") as f:
            f.write(f"written to {name} through the gateway\n")
            f.write("second line\n")
        assert (n.export / "via-gateway.txt").read_text() == (
            f"written to {name} through the gateway\nsecond line\n"
        )
        with nf.files.open(target, "a") as f:
            f.write("appended\n")
        with nf.files.open(target) as f:
            assert list(f) == [f"written to {name} through the gateway\n", "second line\n", "appended\n"]
        assert nf.files.stat(target).size == len(f"written to {name} through the gateway\n") + 21
    data = os.urandom(2 * 1024 * 1024 + 5)
    (node.export / "big.bin").write_bytes(data)
    with nf.files.open(f"{gateway}:/n/node1/fs/big.bin", "rb") as f:
        assert f.read() == data
    # Member to member through the gateway.
    assert nf.files.cp(f"{gateway}:/n/node1/fs/big.bin", f"{gateway}:/n/node2/fs/big.bin") == len(data)
    assert (node2.export / "big.bin").read_bytes() == data
    with pytest.raises(FileNotFoundError):
        nf.files.open(f"{gateway}:/n/node1/fs/not-there")
    with pytest.raises(FileNotFoundError):
        nf.files.open(f"{gateway}:/n/no-such-member/fs/x")


def test_threads_share_files_and_connections(node):
    """Blocking 9P calls release the GIL; one raw file may be read from many threads."""
    import threading

    (node.export / "shared.bin").write_bytes(bytes(range(256)) * 4096)
    raw = nf.files.open(node.at("shared.bin"), "rb", buffering=0)
    got, errors = [], []

    def reader(k):
        try:
            with nf.files.open(node.at("shared.bin"), "rb") as f:
                assert f.read() == bytes(range(256)) * 4096
            for _ in range(50):
                data = raw.read(100)
                if data:
                    got.append(len(data))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
    assert not any(t.is_alive() for t in threads), "a reader hung"
    assert errors == []
    # 8 threads x 50 reads of 100 bytes, each moving the one position past its bytes.
    assert sum(got) == 8 * 50 * 100
    assert raw.tell() == 8 * 50 * 100
    raw.close()


def _server_connections(node) -> int:
    """Connections the node's server holds on its unix socket (less its listener)."""
    with open("/proc/net/unix") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return sum(1 for r in rows if len(r) > 7 and r[7] == str(node.socket)) - 1


def test_calls_reuse_one_connection_per_identity(node):
    """A loop of calls pays one connect and attach, and keeps it for the next call."""
    (node.export / "reuse.txt").write_text("again\n")
    # A timeout no other test uses: a connection of its own (the options are the key).
    opts = {"timeout": 29.5}
    before = _server_connections(node)
    for _ in range(30):
        assert nf.files.stat(node.at("reuse.txt"), **opts).size == 6
        with nf.files.open(node.at("reuse.txt"), "r", **opts) as f:
            assert f.read() == "again\n"
    assert _server_connections(node) == before + 1


def test_a_forked_child_makes_its_own_connection(node):
    """After fork the parent's kept connection has no reader thread in the child."""
    import warnings

    (node.export / "forked.txt").write_text("child\n")
    opts = {"timeout": 28.5}
    assert nf.files.stat(node.at("forked.txt"), **opts).size == 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            with nf.files.open(node.at("forked.txt"), "r", **opts) as f:
                ok = f.read() == "child\n"
        except BaseException:  # noqa: BLE001 - the exit status says it
            ok = False
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + BOUND
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on the parent's connection")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
