"""Session processes a test left behind, found through the test's own ``$EGG_HOME``.

A session daemon runs ``python -m egg_core.session.daemon $EGG_HOME/sessions/ID`` and its
sandbox's ``bwrap`` mounts ``$EGG_HOME/sessions/ID/shared``, so both name the session directory
on their command line. Matching that exact directory (never a process name) means another test
run on the same host, with its own ``$EGG_HOME``, can never trip a test here, nor be killed by it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

import attrs

#: how long a session may take to end after its test (``egg kill`` returns before it has ended)
GRACE = 15.0
#: directory names no test's $EGG_HOME is found below
_NEVER_HOMES = frozenset({"sessions", "site-packages", "node_modules", ".git"})


@attrs.frozen
class Leftover:
    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.command[:300]}"


def session_roots(directories: Iterable[Path]) -> list[Path]:
    """The ``sessions`` directories of every ``$EGG_HOME`` under ``directories`` (a test's
    ``tmp_path``, a box's root, an ``$EGG_HOME`` itself) that has started a session."""
    found: list[Path] = []
    for directory in directories:
        for top, dirs, _ in os.walk(directory):
            if "sessions" in dirs:
                found.append(Path(top) / "sessions")
            # no session directory holds another $EGG_HOME, nor does a symlink lead to one, nor
            # the big trees some tests build (a virtualenv, a repository, npm's packages)
            dirs[:] = [
                d
                for d in dirs
                if d not in _NEVER_HOMES and not os.path.islink(os.path.join(top, d))
            ]
    return sorted(set(found))


def _live(pid: str) -> bool:
    """Not a zombie: a process that ended but was not reaped (this container's init may never
    reap what it inherits) is gone for every purpose here."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def processes_of(roots: Iterable[Path]) -> list[Leftover]:
    """Live processes whose command line names one of ``roots`` or a path under it."""
    needles = [os.fsencode(f"{root}{end}") for root in roots for end in ("/", "\0")]
    if not needles:
        return []
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if any(needle in cmdline for needle in needles) and _live(name):
            found.append(Leftover(int(name), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def wait_gone(roots: Iterable[Path], timeout: float = GRACE) -> list[Leftover]:
    """What is still running after ``timeout`` seconds (at once when nothing runs)."""
    roots = list(roots)
    deadline = time.monotonic() + timeout
    while True:
        left = processes_of(roots)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def kill(leftovers: Iterable[Leftover]) -> None:
    """SIGKILL what a test left (its sandboxes die with their daemon: --die-with-parent)."""
    for leftover in leftovers:
        try:
            os.kill(leftover.pid, signal.SIGKILL)
        except OSError:
            pass
