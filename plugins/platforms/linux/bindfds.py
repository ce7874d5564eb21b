"""Bind mounts from open descriptors: what egg decided to mount is what bwrap mounts.

egg decides each bind of a host path when it prepares a launch, on the path as it is then (its
real path, judged by the trust analysis). bwrap resolves the path again when it mounts, later:
a sandbox that can write a directory on the way (another session's workspace holding this one's,
a ``rw:`` rule of its own) could swap a directory for a symlink in between, and a ``--bind``
would follow it — ``ln -s / sub`` made the host's ``/`` writable in a replay.

So right before each spawn every bind's source is opened (``O_PATH``) with no symlink allowed
anywhere on the way (``openat2(RESOLVE_NO_SYMLINKS)``: a real path holds none, so one found now
was planted after the decision), and bwrap is given the descriptor (``--bind-fd``/``--ro-bind-fd``,
bubblewrap 0.10, and Debian's and Ubuntu's 0.8/0.9 through their CVE-2024-42472 fix). bwrap
mounts it by path and checks the mount is the descriptor's inode, failing the launch otherwise:
a swap after the open is refused too. A source that changed is one line and no launch; a
``-try`` source that is gone is left out, as bwrap would have.

Standard library and :mod:`.gate_abi` only: the exec cache's fast path uses it.
"""

from __future__ import annotations

import errno
import fcntl
import os

from . import gate_abi

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Sequence

#: bwrap's bind options and what each becomes; the second item says whether it is a "-try"
_BY_DESCRIPTOR = {
    "--bind": ("--bind-fd", False),
    "--ro-bind": ("--ro-bind-fd", False),
    "--bind-try": ("--bind-fd", True),
    "--ro-bind-try": ("--ro-bind-fd", True),
}
AT_FDCWD = -100
#: the descriptors handed to bwrap are at or above this (the spawn dup2s its own below it)
FD_FLOOR = 10
RESOLVE_NO_SYMLINKS = 0x04
_MARKER = b"--ro-bind-fd"
_support: dict[tuple[str, int, int, int], bool] = {}


class PinFailed(OSError):
    """The binds could not be given to bwrap as descriptors: nothing may be started."""


class SourceChanged(PinFailed):
    """A bind's source is no longer what the launch decided to mount."""


def supported(bwrap: str) -> bool:
    """Whether this bwrap takes ``--bind-fd`` (read from its own option table, once per binary:
    a version number cannot say it, as distributions backport the option)."""
    try:
        st = os.stat(bwrap)
    except OSError:
        return False
    key = (bwrap, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _support:
        try:
            with open(bwrap, "rb") as binary:
                _support[key] = _MARKER in binary.read()
        except OSError:
            _support[key] = False
    return _support[key]


#: bwrap's options (bubblewrap 0.8 to 0.11) by how many arguments each takes, so that the
#: command line is read as bwrap reads it: no argument of another option (a ``--symlink``'s
#: target, which a home's entry spells) is ever taken for a bind or for the end of the options
_TAKING = (
    "--help --version --unshare-all --share-net --unshare-user --unshare-user-try --unshare-ipc"
    " --unshare-pid --unshare-net --unshare-uts --unshare-cgroup --unshare-cgroup-try"
    " --disable-userns --assert-userns-disabled --clearenv --new-session --die-with-parent"
    " --as-pid-1 --level-prefix",
    "--args --argv0 --userns --userns2 --pidns --uid --gid --hostname --chdir --unsetenv"
    " --lock-file --sync-fd --remount-ro --exec-label --file-label --proc --dev --tmpfs --mqueue"
    " --dir --seccomp --add-seccomp-fd --block-fd --userns-block-fd --info-fd --json-status-fd"
    " --cap-add --cap-drop --perms --size --overlay-src --tmp-overlay --ro-overlay",
    "--setenv --bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try --bind-fd"
    " --ro-bind-fd --file --bind-data --ro-bind-data --symlink --chmod",
    "--overlay",
)
_ARITY = {option: count for count, words in enumerate(_TAKING) for option in words.split()}
#: options that mount a host path by its name, or read more options from elsewhere (``--args``):
#: egg never gives them, and could not pin them
_UNPINNED = frozenset({"--args", "--dev-bind", "--dev-bind-try", "--overlay-src", "--overlay"})


def options(argv: Sequence[str], bwrap: str) -> list[int]:
    """Where each of bwrap's options is in ``argv`` (see :func:`read_options`)."""
    return read_options(argv, bwrap)[0]


def read_options(argv: Sequence[str], bwrap: str) -> tuple[list[int], int]:
    """Where each of bwrap's options is in ``argv``, and where its command starts (its ``--``,
    or the first word that is no option): from the first word that is ``bwrap`` (a wrapper
    before it — ``prlimit ... --``, the cgroup join, strace — has options and a ``--`` of its
    own) to bwrap's own ``--``, each option skipping the arguments it takes. Raises
    :class:`PinFailed` for a command line bwrap would read otherwise (no bwrap in it, an option
    this table does not know, an option egg cannot pin)."""
    try:
        index = list(argv).index(bwrap) + 1
    except ValueError:
        raise PinFailed(errno.EINVAL, f"{bwrap} is not in the sandbox's command line") from None
    found = []
    while index < len(argv):
        word = argv[index]
        if word == "--" or not word.startswith("-"):
            break  # bwrap's command starts here
        arity = _ARITY.get(word)
        if arity is None or word in _UNPINNED or index + arity >= len(argv):
            raise PinFailed(errno.EINVAL, f"bwrap's command line has {word}, which egg cannot pin")
        found.append(index)
        index += 1 + arity
    return found, index


def pin(argv: Sequence[str], bwrap: str) -> tuple[list[str], list[int]]:
    """``argv`` with every bind of a host path made a bind of a descriptor, and the descriptors
    (inheritable, for the spawn to pass and the caller to close after it). ``bwrap`` is the
    word of ``argv`` that runs bwrap (see :func:`options`). Raises :class:`SourceChanged`
    (every descriptor closed) when a source has a symlink on its way or is gone, which the
    decision did not see, and :class:`PinFailed` when ``argv`` cannot be read or a source
    cannot be opened (each in one line: the caller says it and starts nothing)."""
    out = list(argv)
    fds: list[int] = []
    dropped: list[int] = []
    binds = [index for index in options(argv, bwrap) if argv[index] in _BY_DESCRIPTOR]
    room_for(len(binds))
    try:
        for index in binds:
            option = _BY_DESCRIPTOR[argv[index]]
            fd = _open(argv[index + 1], optional=option[1])
            if fd is None:
                dropped.append(index)
                continue
            fds.append(fd)
            out[index : index + 2] = [option[0], str(fd)]
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    for index in reversed(dropped):
        del out[index : index + 3]
    return out, fds


#: binds a launch may open without a look at the descriptor limit (egg holds a few dozen
#: descriptors of its own, and a soft limit below 256 is rare)
FEW_BINDS = 64


def room_for(count: int) -> None:
    """Let this process hold ``count`` more descriptors (a home of many entries is a bind each):
    the soft limit raised toward the hard one. A launch of a few binds does not look (``resource``
    is imported only then: 0.15 ms of every cache hit otherwise)."""
    if count <= FEW_BINDS:
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    try:
        opened = len(os.listdir("/proc/self/fd"))
    except OSError:
        opened = 0
    if opened + wanted > soft and soft != resource.RLIM_INFINITY:
        limit = opened + wanted
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
        except (OSError, ValueError):
            pass  # the opens then say what is short


def _open(source: str, optional: bool) -> int | None:
    try:
        fd = gate_abi.openat2(AT_FDCWD, os.fsencode(source), os.O_PATH, RESOLVE_NO_SYMLINKS)
    except OSError as exc:
        if exc.errno == errno.ENOENT and optional:
            return None
        if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EXDEV):
            what = "gone" if exc.errno == errno.ENOENT else "reached through a symlink now"
            raise SourceChanged(
                exc.errno,
                f"{source} changed while the sandbox was being set up ({what}); nothing was "
                "started",
            ) from None
        raise _cannot(source, exc) from None
    if fd < FD_FLOOR:  # below it the spawn puts descriptors of its own (the command's stderr)
        try:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD, FD_FLOOR)
        except OSError as exc:
            raise _cannot(source, exc) from None
        finally:
            os.close(fd)
        fd = moved
    os.set_inheritable(fd, True)
    return fd


def _cannot(source: str, exc: OSError) -> PinFailed:
    """Why ``source`` cannot be handed to bwrap, in one line."""
    why = f"cannot open {source} to bind it: {exc.strerror}"
    if exc.errno in (errno.EMFILE, errno.ENFILE, errno.EINVAL):
        # each bind holds a descriptor until bwrap has mounted it
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        why += f" (every bind takes a descriptor; this process may have {soft}, at most {hard})"
    return PinFailed(exc.errno, f"{why}; nothing was started")
