"""Turn an effective policy into bubblewrap arguments. No namespace or mount code of our own.

Mount order is the policy's order (shallow paths first, the more restrictive rule last at equal
depth), because a later mount covers an earlier one. egg's own protections ($EGG_HOME, the config
chain, the launcher) are mounted after every user rule, so no ``rw:`` can reopen them. Denied
directories become empty tmpfs mounts that are made read-only at the very end, after any deeper
rule has created its mount point inside them.

Paths are resolved on the host before they are handed to bwrap: a rule on a symlink applies to what
the symlink points at (a denied symlink hides its target), a dangling symlink or a missing path is
skipped (there is nothing to expose or hide), and nothing here raises on a strange path.
"""

from __future__ import annotations

import glob
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from egg_core.policy import NEED_FULL, EffectivePolicy, FsEntry

#: what a program needs to run when ``deny:/`` (jail mode) hides everything else
JAIL_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SANDBOX_HOSTNAME = "egg"
#: where the host-side network sockets appear inside the sandbox
NET_DIR_INSIDE = "/run/egg-net"


@attrs.frozen
class PathFact:
    """What a path is on the host, after following symlinks."""

    real: str
    kind: str  # "dir" | "file" | "missing"


def probe(path: str) -> PathFact:
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return PathFact(real, "missing")
    return PathFact(real, "dir" if stat.S_ISDIR(mode) else "file")


@attrs.frozen(kw_only=True)
class BwrapRequest:
    """The inputs of :func:`build_args` that are not in the policy."""

    argv: Sequence[str]
    empty_file: str
    tty: bool = False
    seccomp_fd: int | None = None
    status_fd: int | None = None
    net_dir: str | None = None  # host dir holding the proxy/port sockets, bound at NET_DIR_INSIDE
    extra_ro: Sequence[str] = ()  # host paths the launch itself needs (the bridge's Python)


def build_args(policy: EffectivePolicy, request: BwrapRequest, bwrap: str = "bwrap") -> list[str]:
    """The full ``bwrap ... -- argv`` command line for ``policy``."""
    args = [
        bwrap,
        "--die-with-parent",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        SANDBOX_HOSTNAME,
    ]
    if not request.tty:
        # No controlling terminal to inject into (TIOCSTI is also denied by seccomp); interactive
        # sessions keep theirs because agents are TUIs.
        args.append("--new-session")
    if policy.network_need != NEED_FULL:
        args.append("--unshare-net")
    if policy.jail:
        for path in (*JAIL_SYSTEM_PATHS, *request.extra_ro):
            args += ["--ro-bind-try", path, path]
    else:
        args += ["--ro-bind", "/", "/"]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    # /run holds the host's control sockets (system and session D-Bus, systemd, container
    # engines): connect() works through a read-only mount, so the whole tree is replaced.
    args += ["--tmpfs", "/run"]
    if policy.network_need == NEED_FULL:
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/") and os.path.isfile(resolv):
            args += ["--ro-bind", resolv, resolv]
    remount: list[str] = []
    for entry in policy.fs:
        args += _entry_args(entry, request.empty_file, remount)
    if policy.jail:
        for path in (policy.cwd, policy.home):
            if probe(path).kind == "missing" or not _exposed(path, policy):
                args += ["--dir", path]
    for entry in policy.protected:
        args += _entry_args(entry, request.empty_file, remount)
    if request.net_dir:
        args += ["--ro-bind", request.net_dir, NET_DIR_INSIDE]
    for path in remount:
        args += ["--remount-ro", path]
    args += ["--chdir", policy.cwd]
    if request.seccomp_fd is not None:
        args += ["--seccomp", str(request.seccomp_fd)]
    if request.status_fd is not None:
        args += ["--json-status-fd", str(request.status_fd)]
    return [*args, "--", *request.argv]


def _exposed(path: str, policy: EffectivePolicy) -> bool:
    return any(
        e.mode in ("rw", "ro", "rw-prefix", "deny-write")
        and (path == e.path or path.startswith(e.path.rstrip("/") + "/"))
        for e in policy.fs
    )


def _entry_args(entry: FsEntry, empty_file: str, remount: list[str]) -> list[str]:
    if entry.path == "/":
        return []  # jail mode (deny:/) and rw:/ are handled by the root mount
    fact = probe(entry.path)
    if fact.kind == "missing":
        return []
    real = fact.real
    if entry.mode == "rw":
        return ["--bind", real, real]
    if entry.mode in ("ro", "deny-write"):
        return ["--ro-bind", real, real]
    if entry.mode == "rw-prefix":
        result = ["--bind", real, real]
        for sibling in prefix_siblings(entry.path):
            sib = probe(sibling)
            if sib.kind != "missing" and sib.real != real:
                result += ["--bind", sib.real, sib.real]
        return result
    # deny
    if fact.kind == "dir":
        remount.append(real)
        return ["--tmpfs", real]
    return ["--ro-bind", empty_file, real]


def prefix_siblings(path: str) -> list[str]:
    """``~/.claude`` -> ``~/.claude.json``, ``~/.claude.json.backup``...: same-prefix neighbours."""
    parent, name = os.path.split(path.rstrip("/"))
    pattern = os.path.join(glob.escape(parent), glob.escape(name) + "?*")
    return sorted(glob.glob(pattern, include_hidden=True))


def empty_file(directory: Path) -> str:
    """A read-only empty regular file to mount over denied files (created once, then reused)."""
    path = directory / "empty"
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_uid == os.getuid():
            return str(path)
        os.unlink(path)
    except FileNotFoundError:
        pass
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = directory / f".empty.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    os.close(fd)
    os.replace(tmp, path)
    return str(path)


def python_paths() -> list[str]:
    """Where this Python lives, for running the network bridge inside a jail."""
    return sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)})
