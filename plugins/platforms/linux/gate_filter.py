"""The socket gate's system-call filters, compiled with libseccomp and cached as BPF.

Two filters, loaded in the child that becomes bubblewrap (so every process of the sandbox, and
bubblewrap itself, runs under them; see :mod:`.socketgate`):

- the *native* one sends ``connect`` and ``bind`` to egg's supervisor as user notifications
  (the supervisor holds the listener; without it they fail), and refuses every unix socket but a
  stream or seqpacket one (``socket``/``socketpair`` of ``AF_UNIX``) with EACCES: a datagram
  socket names its destination in every ``sendmsg``, in memory a filter cannot read, so it could
  reach any host socket without a ``connect`` — and ``SOCK_RAW`` is one too (the kernel makes an
  ``AF_UNIX``, ``SOCK_RAW`` socket a datagram socket), so the filter names what it lets through,
  not what it refuses;
- it also sends egg the loading of a seccomp filter (``prctl(PR_SET_SECCOMP)``, ``seccomp(
  SECCOMP_SET_MODE_FILTER)``): bubblewrap's last step before it runs the command is loading the
  sandbox's own filter, so egg exec's cache hit holds the command there until egg admits it
  (:meth:`.socketgate.Gate.release`); otherwise egg lets every load go on at once;
- the *compat* one covers the i386 and x32 ABIs of an x86_64 machine: there ``connect`` and
  ``bind`` are refused (EPERM) outright, as are datagram unix sockets and i386's
  ``socketcall(SOCKETPAIR)`` (whose arguments are in memory) — the supervisor carries out calls
  of the native ABI only.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # egg exec's fast path reads the cached filters: nothing more is imported
    from pathlib import Path

AF_UNIX = 1
#: the unix socket types a sandbox may make: SOCK_STREAM and SOCK_SEQPACKET (whose sends ignore
#: any address); every other type is refused, SOCK_DGRAM and SOCK_RAW among them
UNIX_TYPES = (1, 5)
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC
SYS_SOCKETPAIR = 8  # socketcall()'s number for socketpair (linux/net.h)
PR_SET_SECCOMP = 22
SECCOMP_SET_MODE_FILTER = 1
FILTER_VERSION = "6"  # 5: built as a binary tree; 6: a filter's loading is egg's to let go


def build(compat: bool) -> bytes | None:
    """One of the two filters as BPF; None for ``compat`` on a machine without other ABIs."""
    import tempfile

    import pyseccomp as sc

    filt = sc.SyscallFilter(sc.ALLOW)
    filt.set_attr(sc.Attr.ACT_BADARCH, sc.ALLOW)
    try:  # a binary tree of syscall numbers, as the sandbox's main filter (seccomp.py)
        filt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except (OSError, ValueError, RuntimeError, AttributeError):
        pass
    if compat:
        if os.uname().machine != "x86_64":
            return None
        for arch in (sc.Arch.X86, sc.Arch.X32):
            filt.add_arch(arch)
        filt.remove_arch(sc.Arch.NATIVE)
        refuse = sc.ERRNO(errno.EPERM)
        for name in ("connect", "bind"):
            filt.add_rule(refuse, name)
        # i386's socketcall(SOCKETPAIR) carries its family and type in memory: libseccomp
        # compares the rules below with the pointer to them there, so it is refused whole
        # (socketcall(SOCKET) is, by the sandbox's main filter: seccomp.py)
        filt.add_rule(sc.ERRNO(errno.EACCES), "socketcall", sc.Arg(0, sc.EQ, SYS_SOCKETPAIR))
    else:
        for name in ("connect", "bind"):
            filt.add_rule(sc.NOTIFY, name)
        # both take their first argument as an int: compared on its low 32 bits, as the kernel
        filt.add_rule(sc.NOTIFY, "prctl", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, PR_SET_SECCOMP))
        filt.add_rule(
            sc.NOTIFY, "seccomp", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, SECCOMP_SET_MODE_FILTER)
        )
    # the kernel reads the family as an int: compared on its low 32 bits, or 1 << 32 | AF_UNIX
    # would pass as another family and still make a unix socket
    unix = sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, AF_UNIX)
    for kind in range(SOCK_TYPE_MASK + 1):
        if kind in UNIX_TYPES:
            continue
        other = sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind)
        for name in ("socket", "socketpair"):
            try:
                filt.add_rule(sc.ERRNO(errno.EACCES), name, unix, other)
            except (OSError, ValueError, RuntimeError):
                continue  # not a system call of this architecture
    with tempfile.TemporaryFile() as handle:
        filt.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def cache_key() -> str:
    import hashlib

    text = f"{FILTER_VERSION}|{os.uname().machine}|{AF_UNIX}|{UNIX_TYPES}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def program_files(cache_dir: Path) -> list[Path] | None:
    """The cached filters in ``cache_dir`` (``$EGG_HOME/cache``, which no sandbox sees), native
    first, compiled on first use; None when they cannot be kept there."""
    found: list[Path] = []
    for compat in (False, True):
        path = cache_dir / f"gate-{'compat' if compat else 'native'}-{cache_key()}.bpf"
        if _read(path) is None:
            data = build(compat)
            if data is None:
                continue
            if not _write(path, data):
                return None
        found.append(path)
    return found


def programs(cache_dir: Path | None) -> list[bytes]:
    """The filters to load, native first (from the cache when it can be used)."""
    files = program_files(cache_dir) if cache_dir is not None else None
    if files is not None:
        loaded = [_read(path) for path in files]
        if all(data is not None for data in loaded):
            return [data for data in loaded if data is not None]
    built = [build(False), build(True)]
    return [data for data in built if data]


def read_programs(paths: list[str]) -> list[bytes] | None:
    """Filters kept by :func:`program_files` (egg exec's cache); None if one is unreadable."""
    loaded = [_read(path) for path in paths]
    if any(data is None for data in loaded):
        return None
    return [data for data in loaded if data is not None]


def _read(path: str | Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data if data and len(data) % 8 == 0 else None


def _write(path: Path, data: bytes) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        return False
    return True
