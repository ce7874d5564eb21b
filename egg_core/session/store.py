"""Session directories: ``$EGG_HOME/sessions/<id>/`` and what lives in them.

``egg.sock`` (0600) the daemon's socket, ``egg.token`` (0600) the secret every client proves,
``egg.pid`` the daemon's pid, ``egg.meta`` (JSON) what runs there and how it ended, ``egg.log``
the daemon's own log, and the feature files (``audit.log.gz``, ``network.log``, ``chat.*``,
``settings/``). The directory is 0700: another user gets nothing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

import attrs

from egg_core.errors import UnknownNameError

DAEMON_MODULE = "egg_core.session.daemon"


@attrs.frozen
class SessionPaths:
    """Where one session's files are."""

    directory: Path

    @property
    def id(self) -> str:
        return self.directory.name

    @property
    def sock(self) -> Path:
        return self.directory / "egg.sock"

    @property
    def token(self) -> Path:
        return self.directory / "egg.token"

    @property
    def pid(self) -> Path:
        return self.directory / "egg.pid"

    @property
    def meta(self) -> Path:
        return self.directory / "egg.meta"

    @property
    def log(self) -> Path:
        return self.directory / "egg.log"

    @property
    def spec(self) -> Path:
        return self.directory / "spec.json"

    @property
    def audit(self) -> Path:
        return self.directory / "audit.log.gz"

    @property
    def network_log(self) -> Path:
        return self.directory / "network.log"

    @property
    def trace_log(self) -> Path:
        """``egg run --trace``: strace's record of the command's syscalls."""
        return self.directory / "trace.log"

    @property
    def settings(self) -> Path:
        return self.directory / "settings"

    @property
    def shared(self) -> Path:
        """Visible inside the sandbox (the browser-open shim writes here)."""
        return self.directory / "shared"

    @property
    def browser_log(self) -> Path:
        return self.directory / "browser.log"


def sessions_root(egg_home: Path) -> Path:
    return egg_home / "sessions"


def live_marker(paths: SessionPaths) -> Path:
    """``sessions/.live/<id>`` holds the daemon's pid while it runs: one directory listing tells
    any egg command whether a session died without cleaning up (see recover_crashed_sessions)."""
    return paths.directory.parent / ".live" / paths.id


def mark_live(paths: SessionPaths) -> None:
    marker = live_marker(paths)
    marker.parent.mkdir(mode=0o700, exist_ok=True)
    marker.write_text(str(os.getpid()))


def clear_live(paths: SessionPaths) -> None:
    live_marker(paths).unlink(missing_ok=True)


def create_session(egg_home: Path) -> SessionPaths:
    """A fresh session directory (0700) with its token (0600). A ``$EGG_HOME`` too deep for
    the session's socket is one line, before anything is made."""
    from egg_core.errors import EggError
    from egg_core.paths import SOCKET_PATH_BYTES, socket_fits

    root = sessions_root(egg_home)
    longest = root / "12345678" / "egg.sock"
    if not socket_fits(longest):
        raise EggError(
            f"$EGG_HOME is too deep for a session's socket: {longest} would be "
            f"{len(os.fsencode(longest))} bytes, and a unix socket's path holds at most "
            f"{SOCKET_PATH_BYTES}; set EGG_HOME to a shorter directory"
        )
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(egg_home, os.stat(egg_home).st_mode & 0o700 | 0o700)
    for _ in range(100):
        candidate = root / secrets.token_hex(4)
        try:
            candidate.mkdir(mode=0o700)
        except FileExistsError:
            continue
        paths = SessionPaths(candidate)
        fd = os.open(paths.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
        return paths
    raise OSError("could not allocate a session id")


def read_token(paths: SessionPaths) -> bytes:
    return paths.token.read_bytes().strip()


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_meta(paths: SessionPaths, **changes: Any) -> dict[str, Any]:
    meta = {**read_json(paths.meta), **changes}
    write_json(paths.meta, meta)
    return meta


def daemon_pid(paths: SessionPaths) -> int | None:
    try:
        return int(paths.pid.read_text().strip())
    except (OSError, ValueError):
        return None


def daemon_alive(paths: SessionPaths) -> bool:
    """The daemon process of this session is running (and is ours, not a reused pid)."""
    pid = daemon_pid(paths)
    if pid is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return DAEMON_MODULE.encode() in cmdline and str(paths.directory).encode() in cmdline


@attrs.frozen
class SessionRecord:
    paths: SessionPaths
    meta: dict[str, Any] = attrs.field(eq=False)
    alive: bool

    @property
    def state(self) -> str:
        if self.alive:
            return "running"
        return str(self.meta.get("state", "unknown"))


def list_sessions(egg_home: Path) -> list[SessionRecord]:
    root = sessions_root(egg_home)
    if not root.is_dir():
        return []
    records = []
    for directory in sorted(root.iterdir()):
        if not directory.is_dir() or directory.name.startswith("."):
            continue
        paths = SessionPaths(directory)
        records.append(SessionRecord(paths, read_json(paths.meta), daemon_alive(paths)))
    records.sort(key=lambda r: (r.meta.get("started", 0), r.paths.id))
    return records


#: what a session id looks like (allocate_session's: eight hex digits)
SESSION_ID = re.compile(r"[0-9a-f]{8}")


def session_by_id(egg_home: Path, ident: str) -> SessionPaths | None:
    """The session whose id is exactly ``ident``, or None: no name or prefix is looked up (a
    front that takes an id from a request must not search the sessions' directories, which a
    sandbox can fill, nor let a session named like another's id stand in for it)."""
    if not SESSION_ID.fullmatch(ident):
        return None
    directory = sessions_root(egg_home) / ident
    return SessionPaths(directory) if directory.is_dir() else None


def find_session(egg_home: Path, ident: str) -> SessionPaths:
    """The session named ``ident`` (``egg run --name``: a running one first, else the newest
    with that name), or whose id is ``ident`` or starts with it; one clear error otherwise."""
    root = sessions_root(egg_home)
    if not ident or "/" in ident or ident.startswith("."):
        raise UnknownNameError(f"no session {ident!r}")
    named = [r for r in list_sessions(egg_home) if r.meta.get("name") == ident]
    if named:
        live = [r for r in named if r.alive]
        return (live or named)[-1].paths
    exact = root / ident
    if exact.is_dir():
        return SessionPaths(exact)
    matches = sorted(p for p in root.glob(f"{ident}*") if p.is_dir()) if root.is_dir() else []
    if not matches:
        raise UnknownNameError(f"no session {ident!r} (egg ls lists them)")
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise UnknownNameError(f"session id {ident!r} is ambiguous: {names}")
    return SessionPaths(matches[0])


def log(paths: SessionPaths, message: str) -> None:
    """One time-stamped entry in the session's own log (``egg.log``), which a user reads in a
    terminal and egg quotes in errors: the message (a path, what the sandbox said) goes through
    :func:`egg_core.sanitize.visible`, its lines kept (a traceback)."""
    from egg_core.sanitize import visible

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    with open(paths.log, "a", encoding="utf-8") as handle:
        handle.write(f"{stamp} {visible(message, multiline=True)}\n")


def now() -> float:
    return time.time()
