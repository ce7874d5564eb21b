"""Per-launch directories of ``egg exec``: ``$EGG_HOME/run/exec-*``, hidden from every sandbox.

Each holds what one launch must undo when it ends — the agent settings snapshot above all
(:mod:`egg_core.snapshot`) — and an ``owner`` file naming the process that will undo it: its pid
and its start time, so a reused pid is never mistaken for the owner. A directory whose owner is
gone was left by an ``egg exec`` that was killed; the next egg command restores what it holds and
removes it (:func:`orphans`).

Standard library only: the exec cache's fast path creates and checks these too.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "exec-"
OWNER = "owner"


def run_root(egg_home: str) -> str:
    return os.path.join(egg_home, "run")


def egg_home_of(environ: Mapping[str, str]) -> str:
    """``$EGG_HOME`` as :func:`egg_core.paths.egg_home` finds it, without pathlib (fast path)."""
    home = environ.get("EGG_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".egg")


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None
    when there is no such process, or only its zombie (it has ended; nobody reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) <= 19 or fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def alive(pid: int) -> bool:
    """A running process (not a zombie) has this pid."""
    return start_time(pid) is not None


def create(egg_home: str) -> str:
    """A fresh 0700 launch directory owned by this process."""
    root = run_root(egg_home)
    os.makedirs(root, mode=0o700, exist_ok=True)
    pid = os.getpid()
    while True:
        path = os.path.join(root, f"{PREFIX}{pid}-{os.urandom(4).hex()}")
        try:
            os.mkdir(path, 0o700)
            break
        except FileExistsError:
            continue
    with open(os.path.join(path, OWNER), "w") as handle:
        handle.write(f"{pid} {start_time(pid) or ''}\n")
    return path


def owner_alive(path: str) -> bool:
    try:
        with open(os.path.join(path, OWNER)) as handle:
            pid_text, _, started = handle.read().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False  # no owner recorded: nobody will clean it up but us
    now = start_time(pid)
    return now is not None and (not started or now == started)


def orphans(egg_home: str) -> list[str]:
    """Launch directories whose ``egg exec`` died before cleaning up."""
    root = run_root(egg_home)
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(root, name)
        if name.startswith(PREFIX) and os.path.isdir(path) and not owner_alive(path):
            found.append(path)
    return found


def finish(path: str, egg_home: str) -> None:
    """End a launch: put the agent's settings back (threat H), saying on stderr what changed
    and keeping what could not be restored for ``egg doctor``; then remove the directory."""
    from egg_core import snapshot

    lines = snapshot.restore(os.path.join(path, "settings"), then_forget=True)
    if lines:
        import sys

        from egg_core import guardlog
        from egg_core.sanitize import visible

        for line in lines:
            print(f"egg: {visible(line)}", file=sys.stderr)
        guardlog.record(egg_home, snapshot.failures(lines))
    remove(path)


def remove(path: str) -> None:
    """Remove a launch directory: egg's own files, and the home layer the sandbox saw as its
    $HOME (any shape: see :func:`egg_core.hostfs.remove_tree`). A directory holding no more
    than egg's own two entries (its owner file and an emptied settings directory: a plain
    ``egg exec``) goes with an unlink and two rmdirs, which never follow anything; whatever
    else it holds is the tree walk's."""
    try:
        os.rmdir(os.path.join(path, "settings"))
    except OSError:
        pass
    try:
        os.unlink(os.path.join(path, OWNER))
        os.rmdir(path)
        return
    except OSError:
        pass
    from egg_core import hostfs

    hostfs.remove_tree(path)
