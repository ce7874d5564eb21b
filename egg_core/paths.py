"""Where egg keeps its own files, derived from the environment (never from import-time state)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket


def user_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$HOME``, falling back to the password database when it is unset."""
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    if home:
        return Path(home)
    return Path(os.path.expanduser("~"))


def egg_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$EGG_HOME``, default ``~/.egg``: bases, tools, sessions and caches live here."""
    env = os.environ if environ is None else environ
    configured = env.get("EGG_HOME")
    if configured:
        return Path(os.path.expanduser(configured)).absolute()
    return user_home(env) / ".egg"


def egg_home_problem(path: Path) -> str | None:
    """Why this user cannot use ``path`` as ``$EGG_HOME``, in words that say what to do; None
    when it can (or when it does not exist yet: it is created when first needed).

    Checked once per command, before anything reads or writes there: an unreadable directory
    otherwise surfaced as "internal error: PermissionError" from whichever command touched it
    first, and one that belongs to someone else (root with another user's ``HOME``) would get
    root's files in it — that user's egg could no longer use its own sessions and caches, and
    it could hand root entries of its making. Ownership is required even of root.
    """
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return (
            f"cannot reach $EGG_HOME {path}: {exc.strerror}; set EGG_HOME to a directory of "
            "your own"
        )
    if not stat.S_ISDIR(st.st_mode):
        return f"$EGG_HOME {path} is not a directory; set EGG_HOME to a directory of your own"
    me = os.geteuid()
    if st.st_uid != me:
        return (
            f"$EGG_HOME {path} belongs to {_user(st.st_uid)} and you are {_user(me)}: egg "
            "keeps one user's sessions, caches and tools there; set EGG_HOME to a directory "
            "of your own"
        )
    if not os.access(
        path, os.R_OK | os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids
    ):
        return (
            f"$EGG_HOME {path} is not readable and writable by you (mode "
            f"{stat.filemode(st.st_mode)}): chmod u+rwx {path}, or set EGG_HOME to another "
            "directory"
        )
    return None


def _user(uid: int) -> str:
    """``alice (uid 1000)``, or ``uid 1000`` when it has no name."""
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def expand_user(path: str, home: Path) -> str:
    """Expand a leading ``~`` against ``home`` (not the process's own idea of home)."""
    if path == "~":
        return str(home)
    if path.startswith("~/"):
        return str(home / path[2:])
    return path


#: where a root caller's helpers may live (for root, ownership alone proves nothing)
SYSTEM_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/nix/store/", "/snap/")
#: searched after the caller's PATH, so that a PATH without them still finds system helpers
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def trusted_location(path: str) -> bool:
    """Whether no sandbox can have put ``path`` there (threat H: a helper found on a PATH the
    sandbox can write, a ``bwrap`` planted in the workspace, runs on the host at the next launch).

    The path (resolved) and every directory above it must be owned by root and writable by no
    group and no other user, so only root can change them; for a root caller, who could have
    written anything, the path must also lie in the system's own trees (:data:`SYSTEM_PREFIXES`).
    """
    import stat

    from egg_core import observe

    real = observe.realpath(path)
    if os.geteuid() == 0 and not any((real + "/").startswith(p) for p in SYSTEM_PREFIXES):
        return False
    current = real
    while True:
        try:
            st = observe.lstat(current)  # resolved: no symlink left on the way
        except OSError:
            return False
        if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def host_which(name: str, search_path: str | None = None) -> str | None:
    """Find a program egg itself runs on the host (bwrap, prlimit, strace, git), only where no
    sandbox can have planted it (:func:`trusted_location`).

    The caller's PATH is searched first (absolute entries only: an empty or relative entry means
    "the current directory", which a sandboxed agent can write), then :data:`SYSTEM_DIRS`; a
    candidate in an untrusted place is skipped, never run.
    """
    from egg_core import observe

    entries = search_path if search_path is not None else observe.getenv("PATH", os.defpath)
    directories = [p for p in entries.split(os.pathsep) if os.path.isabs(p)]
    for directory in dict.fromkeys([*directories, *SYSTEM_DIRS]):
        found = observe.which(name, directory)
        if found and trusted_location(found):
            return found
    return None


def untrusted_candidates(name: str, search_path: str | None = None) -> list[str]:
    """Where ``name`` is on PATH but :func:`host_which` will not run it from (for egg doctor)."""
    import shutil

    entries = search_path if search_path is not None else os.environ.get("PATH", os.defpath)
    found = []
    for directory in dict.fromkeys(p for p in entries.split(os.pathsep) if p):
        candidate = shutil.which(name, path=directory)
        if candidate and not (os.path.isabs(candidate) and trusted_location(candidate)):
            found.append(candidate)
    return found


#: how many bytes a unix socket's path may have (``sun_path`` is 108 bytes on Linux, 104 on
#: macOS, the terminating NUL included)
SOCKET_PATH_BYTES = 107 if sys.platform.startswith("linux") else 103


def socket_fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= SOCKET_PATH_BYTES


def socket_directory(preferred: Path, longest_name: str, prefix: str) -> Path | None:
    """None when a socket named up to ``longest_name`` can be bound in ``preferred`` (it fits,
    or :func:`bound_unix_socket` binds it through ``/proc/self/fd``); else — no ``/proc``, a
    deep ``$EGG_HOME`` on macOS — a fresh private (0700) directory in the temporary directory,
    whose path is short, for the caller to use and remove."""
    if socket_fits(preferred / longest_name) or os.path.isdir("/proc/self/fd"):
        return None
    import tempfile

    return Path(tempfile.mkdtemp(prefix=prefix))


def bound_unix_socket(path: Path) -> socket.socket:
    """A stream socket bound at ``path``, however deep: a path too long for ``sun_path`` is
    bound through a descriptor of its directory (``/proc/self/fd/N/NAME``, which the kernel
    resolves to the directory itself), so the socket stays where egg keeps it — in
    ``$EGG_HOME``, hidden from every sandbox — rather than in a short directory of ``/tmp``
    that another sandbox could be given. A socket already at ``path`` (an earlier attempt's) is
    replaced."""
    import socket
    import stat

    try:  # a socket left by an earlier attempt of this launch (asyncio's own path= does this)
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if socket_fits(path):
            sock.bind(str(path))
            return sock
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            sock.bind(f"/proc/self/fd/{fd}/{path.name}")
        finally:
            os.close(fd)
        return sock
    except BaseException:
        sock.close()
        raise
