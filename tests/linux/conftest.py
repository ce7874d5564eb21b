"""Fixtures for the linux-ns integration suite: the real bwrap, as root and as uid 65534.

Every test gets a :class:`Box`: a fresh ``$HOME`` (with planted secrets), a workspace inside it
(the command's working directory) and an ``$EGG_HOME``, all owned by the identity egg runs as.
``box.run(...)`` runs the real ``egg`` command line as that identity (uid 65534 through
``setpriv``); ``box.probe(code)`` runs a Python snippet inside the sandbox and returns the JSON it
reports. Host-side witnesses (:class:`Listener`) record anything that reaches them, so a test can
check both sides: the attempt failed, and nothing arrived.

The boxes live under a directory the sandbox can see as the host does (not ``/tmp``, ``/var/tmp``
or ``/run``, which the sandbox gets private), traversable by uid 65534.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from tests.tmux import Tmux

EGG = str(Path(sys.prefix) / "bin" / "egg")
#: the interpreter the sandboxed probes run with (outside the venv, isolated with -I)
PY = os.path.realpath(sys.executable)
NOBODY = 65534
TIMEOUT = 60
#: where boxes are created: visible in the sandbox exactly as on the host
BOX_PARENTS = ("/home", "/srv", "/var/lib", "/opt")
PRIVATE_IN_SANDBOX = ("/tmp", "/var/tmp", "/run", "/dev", "/proc")


def _unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the linux-ns sandbox needs Linux"
    if shutil.which("bwrap") is None:
        return "bwrap (bubblewrap) is not installed"
    if os.geteuid() != 0:
        return "the suite runs egg as root and as uid 65534 (setpriv): run it as root"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    return None


def skip_without_sandbox(items: list[pytest.Item], here: Path) -> None:
    """Mark the tests below ``here`` skipped, saying why, where the real sandbox cannot run."""
    reason = _unavailable()
    if reason is None:
        return
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip_without_sandbox(items, Path(__file__).parent)


# -- identities --------------------------------------------------------------------------------


@attrs.frozen
class Identity:
    """Who runs ``egg``: root, or uid/gid 65534 with no supplementary groups."""

    name: str
    uid: int
    gid: int

    def wrap(self, argv: Sequence[str]) -> list[str]:
        if self.uid == 0:
            return list(argv)
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            *argv,
        ]


IDENTITIES = {"root": Identity("root", 0, 0), "nobody": Identity("nobody", NOBODY, NOBODY)}


@pytest.fixture(params=list(IDENTITIES))
def identity(request: pytest.FixtureRequest) -> Identity:
    """Parametrizes a test over root and uid 65534 (narrow it with ``indirect``)."""
    return IDENTITIES[request.param]


# -- boxes -------------------------------------------------------------------------------------


@attrs.frozen
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """The last stdout line, parsed (what a probe reported)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, f"no output (exit {self.returncode}); stderr:\n{self.stderr}"
        return json.loads(lines[-1])


PRELUDE = r"""
import ctypes, errno, json, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)

def attempt(fn, *args):
    '''"ok", or the errno name the attempt failed with.'''
    try:
        fn(*args)
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else repr(exc)
    return "ok"

def syscall(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result

def read(path):
    with open(path, "rb") as handle:
        return handle.read()

def write(path, data=b"sandbox was here\n"):
    with open(path, "ab") as handle:
        handle.write(data)

def connect(family, address, kind=socket.SOCK_STREAM, payload=b"hello from the sandbox"):
    sock = socket.socket(family, kind)
    sock.settimeout(3)
    try:
        sock.connect(address)
        sock.sendall(payload)
    finally:
        sock.close()

def report(**values):
    print(json.dumps(values), flush=True)
"""


@attrs.define
class Box:
    """One test's host-side world, and how to run egg in it as ``identity``."""

    identity: Identity
    root: Path
    home: Path
    workspace: Path
    egg_home: Path
    secret: str
    extra_env: dict[str, str] = attrs.Factory(dict)

    # -- files

    def chown(self, path: Path) -> None:
        os.chown(path, self.identity.uid, self.identity.gid, follow_symlinks=False)

    def write(self, path: Path | str, content: str | bytes = "", mode: int = 0o644) -> Path:
        """Create ``path`` (relative: under home) with its parents, owned by the identity."""
        target = self.home / path if not Path(path).is_absolute() else Path(path)
        self.mkdir(target.parent)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        target.chmod(mode)
        self.chown(target)
        return target

    def mkdir(self, path: Path | str, mode: int = 0o755) -> Path:
        target = self.home / path if not Path(path).is_absolute() else Path(path)
        missing = []
        probe = target
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for directory in reversed(missing):
            directory.mkdir(mode=mode)
            self.chown(directory)
        return target

    def witness(self, name: str) -> Path:
        """Where a planted command leaves its mark if it ever runs *on the host*: a directory the
        identity can write on the host and the sandbox sees read-only (not under the workspace
        or the home), so a mark found there was made outside the sandbox, by either identity."""
        return self.root / "witness" / name

    def config(self, config: Mapping[str, Any] | str, path: Path | None = None) -> Path:
        """Write an egg.yaml (default: the workspace's)."""
        text = config if isinstance(config, str) else yaml.safe_dump(dict(config))
        return self.write(path or self.workspace / "egg.yaml", text)

    # -- running egg

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "EGG_HOME": str(self.egg_home),
            "USER": self.identity.name,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            # the proxy's resolver and connector are always the test seam's, so no test can
            # look up or reach anything but loopback, even by mistake (tests replace it)
            "EGG_TEST_NETWORK": "unused.example.com=93.184.216.34@127.0.0.1:9",
        }
        if os.environ.get("EGG_TEST_MUTANT"):  # a mutation tier: a build with a check taken out
            env["PYTHONPATH"] = os.environ["EGG_TEST_MUTANT"]
        env.update(self.extra_env)
        env.update(extra or {})
        return env

    def command(self, *args: str, egg: str = EGG) -> list[str]:
        return self.identity.wrap([egg, *args])

    def run(
        self,
        *args: str,
        config: Mapping[str, Any] | str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = TIMEOUT,
        stdin: str | None = None,
        egg: str = EGG,
        within: Sequence[str] = (),
    ) -> Result:
        """Run ``egg ARGS`` as the identity; with ``config``, write the workspace's egg.yaml.

        ``within`` is a command prefix run as the test's own user around the identity's egg:
        a private mount namespace, say, where a host path exists for this run alone."""
        if config is not None:
            self.config(config)
        proc = subprocess.run(
            [*within, *self.command(*args, egg=egg)],
            env=self.env(env),
            cwd=cwd or self.workspace,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def exec(self, *command: str, options: Sequence[str] = (), **kwargs: Any) -> Result:
        """``egg exec [OPTIONS] -- COMMAND``."""
        return self.run("exec", *options, "--", *command, **kwargs)

    def py(self, code: str, **kwargs: Any) -> Result:
        """Run Python (with the probe helpers) inside the sandbox."""
        return self.exec(PY, "-I", "-c", PRELUDE + code, **kwargs)

    def probe(self, code: str, **kwargs: Any) -> Any:
        """Run a probe inside the sandbox; it must exit 0; returns what it ``report()``-ed."""
        result = self.py(code, **kwargs)
        assert result.returncode == 0, (
            f"probe failed (exit {result.returncode})\nstdout:\n{result.stdout}\n"
            f"stderr:\n{result.stderr}"
        )
        return result.json()


@pytest.fixture(scope="session")
def boxes_dir() -> Iterator[Path]:
    """A directory that the sandbox sees as the host does, traversable by uid 65534."""
    configured = os.environ.get("EGG_LINUX_TEST_DIR")
    candidates = [configured] if configured else list(BOX_PARENTS)
    parent = next(
        (
            c
            for c in candidates
            if os.path.isdir(c)
            and os.access(c, os.W_OK)
            and not any(
                os.path.realpath(c) == p or os.path.realpath(c).startswith(p + "/")
                for p in PRIVATE_IN_SANDBOX
            )
        ),
        None,
    )
    if parent is None:
        pytest.fail(f"no directory for test boxes among {candidates} (set EGG_LINUX_TEST_DIR)")
    path = Path(tempfile.mkdtemp(prefix="egg-linux-tests-", dir=parent))
    path.chmod(0o755)
    walk = path
    while walk != walk.parent:
        assert os.stat(walk).st_mode & 0o001, f"{walk} is not traversable by uid {NOBODY}"
        walk = walk.parent
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def box(identity: Identity, boxes_dir: Path) -> Iterator[Box]:
    """A fresh home with secrets, a workspace and an $EGG_HOME, owned by ``identity``.

    Narrow a test to one identity with ``@pytest.mark.parametrize("identity", ["root"],
    indirect=True)``.
    """
    root = Path(tempfile.mkdtemp(prefix=f"{identity.name}-", dir=boxes_dir))
    root.chmod(0o755)
    home = root / "home"
    box = Box(
        identity=identity,
        root=root,
        home=home,
        workspace=home / "project",
        egg_home=home / ".egg",
        secret=f"EGG-TEST-SECRET-{secrets.token_hex(8)}",
    )
    box.mkdir(home)
    box.mkdir(box.workspace)
    box.mkdir(box.egg_home, mode=0o700)
    box.mkdir(root / "witness")
    box.mkdir(".cache")
    box.mkdir(".ssh", mode=0o700)
    box.write(".ssh/id_ed25519", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{box.secret}\n", 0o600)
    box.write(".aws/credentials", f"[default]\naws_secret_access_key = {box.secret}\n", 0o600)
    box.write(".netrc", f"machine example.com password {box.secret}\n", 0o600)
    box.write(".bash_history", f"export TOKEN={box.secret}\n", 0o600)
    box.write(".gitconfig", "[user]\n\tname = Egg Test\n\temail = egg@example.com\n")
    box.write(".bashrc", "# host bashrc\n")
    box.write(".profile", "# host profile\n")
    yield box
    shutil.rmtree(root, ignore_errors=True)


# -- the user's terminal: a real tmux ----------------------------------------------------------


@pytest.fixture
def pane(box: Box) -> Iterator[Tmux]:
    """A tmux server as the box's identity, whose panes say TERM=tmux-256color (as tmux's own
    default does): the user's terminal."""
    base = box.mkdir(box.root / "tmux", mode=0o700)
    server = Tmux(
        base,
        box.env({"TERM": "xterm-256color"}),
        wrap=box.identity.wrap,
        config='set -g default-terminal "tmux-256color"\n',
    )
    box.chown(server.config)
    yield server
    server("kill-server")


def until_cached(launch: Callable[[], Result], tries: int = 5) -> list[Result]:
    """Runs of ``launch`` (an ``egg exec`` with ``EGG_EXEC_CACHE=debug``) until one is a cache
    hit, at most ``tries``. A run in a fresh home is not kept (the agent's files appear as egg
    looks), and on a shared machine another may not be either, when something it looked at
    changed meanwhile (each says why): a hit must come, not on a given run."""
    runs: list[Result] = []
    while len(runs) < tries and not (
        runs and "egg: exec cache hit" in runs[-1].stderr.splitlines()
    ):
        runs.append(launch())
    return runs


def only_session(box: Box) -> str:
    """The id of the one session the box has, once it has one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [p.name for p in (box.egg_home / "sessions").glob("????????")]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no session started")


# -- host-side witnesses -----------------------------------------------------------------------


class Listener:
    """A host socket that records every connection or datagram that reaches it.

    ``echo`` answers each stream connection with ``pong:`` + what it read (the allow path);
    otherwise the listener only records. ``hits`` lists what arrived: b"" for a connection that
    sent nothing, else the bytes.
    """

    def __init__(
        self,
        family: int,
        address: Any,
        kind: int = socket.SOCK_STREAM,
        echo: bool = False,
    ) -> None:
        self.sock = socket.socket(family, kind)
        if family != socket.AF_UNIX:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(address)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.kind = kind
        self.echo = echo
        self.hits: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> Any:
        return self.sock.getsockname()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_DGRAM:
                    data, _ = self.sock.recvfrom(65536)
                    self.hits.append(data)
                    continue
                conn, _ = self.sock.accept()
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(65536)
                except OSError:
                    data = b""
                self.hits.append(data)
                if self.echo:
                    try:
                        conn.sendall(b"pong:" + data)
                    except OSError:
                        pass

    def received_nothing(self) -> bool:
        """Stop listening, collect what is queued, and say whether anything ever arrived.

        Call it after the sandbox has exited: whatever reached the socket by then is queued in
        the kernel (loopback delivery is synchronous), so no grace period is needed.
        """
        self.close()
        return not self.hits

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(2)
        self.sock.setblocking(False)
        try:
            while True:
                if self.kind == socket.SOCK_DGRAM:
                    self.hits.append(self.sock.recvfrom(65536)[0])
                    continue
                conn, _ = self.sock.accept()
                with conn:
                    conn.settimeout(0.5)
                    try:
                        self.hits.append(conn.recv(65536))
                    except OSError:
                        self.hits.append(b"")
        except OSError:
            pass
        self.sock.close()


Listen = Callable[..., Listener]


@pytest.fixture
def listen() -> Iterator[Listen]:
    """``listen(family, address, kind=..., echo=...)`` -> a :class:`Listener`, closed afterwards."""
    opened: list[Listener] = []

    def factory(
        family: int = socket.AF_INET,
        address: Any = ("127.0.0.1", 0),
        kind: int = socket.SOCK_STREAM,
        echo: bool = False,
    ) -> Listener:
        listener = Listener(family, address, kind, echo)
        opened.append(listener)
        return listener

    yield factory
    for listener in opened:
        listener.close()
