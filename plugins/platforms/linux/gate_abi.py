"""The kernel interfaces the socket gate (:mod:`.socketgate`) needs and Python's ``os`` lacks:
seccomp's user notifications, ``pidfd_getfd``, ``openat2`` and ``SIOCUNIXFILE``, through ctypes.

Standard library only, and nothing is loaded until first use: the exec cache's fast path imports
this module before it spawns (see :mod:`egg_core.execcache`). x86_64 and aarch64 numbers.
"""

from __future__ import annotations

import ctypes
import os
import struct

MACHINE = os.uname().machine
#: syscall numbers: (x86_64, aarch64)
_NUMBERS = {
    "seccomp": (317, 277),
    "pidfd_open": (434, 434),
    "pidfd_getfd": (438, 438),
    "openat2": (437, 437),
}
#: the AUDIT_ARCH value of this machine's native ABI (what a notification's ``arch`` says)
NATIVE_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(MACHINE)

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
#: once the supervisor has received a call, the caller waits for the answer killable only: a
#: signal cannot restart (and so repeat) a call the supervisor is already carrying out
SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1 << 5
PR_SET_NO_NEW_PRIVS = 38

_NOTIF = struct.Struct("=QIIiIQ6Q")  # id, pid, flags, nr, arch, instruction pointer, args
_RESP = struct.Struct("=QqiI")  # id, val, error, flags
NOTIF_RECV = 0xC0502100  # SECCOMP_IOCTL_NOTIF_RECV: _IOWR('!', 0, struct seccomp_notif)
NOTIF_SEND = 0xC0182101  # SECCOMP_IOCTL_NOTIF_SEND: _IOWR('!', 1, struct seccomp_notif_resp)
NOTIF_ID_VALID = 0x40082102  # SECCOMP_IOCTL_NOTIF_ID_VALID: _IOW('!', 2, __u64)
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1

PIDFD_THREAD = os.O_EXCL  # a pidfd for one thread (its descriptor table), Linux 6.9+
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
SIOCUNIXFILE = 0x89E0  # SIOCPROTOPRIVATE: an O_PATH descriptor of a bound unix socket's file

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.ioctl.restype = ctypes.c_int
        _libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)
        _libc.prctl.restype = ctypes.c_int
        _libc.connect.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        _libc.connect.restype = ctypes.c_int
    return _libc


def _number(name: str) -> int:
    pair = _NUMBERS[name]
    if MACHINE == "x86_64":
        return pair[0]
    if MACHINE == "aarch64":
        return pair[1]
    raise OSError(38, f"the socket gate does not know {MACHINE}'s system calls")


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


class Program:
    """A BPF program held in memory that stays put across fork (for a child to load)."""

    def __init__(self, bpf: bytes) -> None:
        if not bpf or len(bpf) % 8:
            raise ValueError("a BPF program is a whole number of 8-byte instructions")
        self.code = ctypes.create_string_buffer(bpf, len(bpf))
        # struct sock_fprog { unsigned short len; struct sock_filter *filter; }
        self.fprog = ctypes.create_string_buffer(
            struct.pack("HxxxxxxP", len(bpf) // 8, ctypes.addressof(self.code))
        )

    def load(self, flags: int = 0) -> int:
        """Install the filter on the calling thread (after ``no_new_privs``); returns the
        listener's descriptor when ``flags`` asks for one, else 0."""
        lib = _lib()
        return _check(
            lib.syscall(
                _number("seccomp"),
                ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
                ctypes.c_ulong(flags),
                ctypes.c_void_p(ctypes.addressof(self.fprog)),
            )
        )


def no_new_privs() -> None:
    _check(
        _lib().prctl(
            PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), 0
        )
    )


class Notification:
    """One system call a sandboxed thread is waiting in (``struct seccomp_notif``)."""

    __slots__ = ("arch", "args", "id", "nr", "pid")

    def __init__(self, raw: bytes) -> None:
        fields = _NOTIF.unpack(raw)
        self.id, self.pid, _, self.nr, self.arch = fields[:5]
        self.args = fields[6:]


def receive(listener: int) -> Notification:
    """The next call waiting (blocks; ENOENT when the caller went away before it was read)."""
    buf = ctypes.create_string_buffer(_NOTIF.size)
    _check(_lib().ioctl(listener, NOTIF_RECV, buf))
    return Notification(buf.raw)


def respond(listener: int, ident: int, value: int = 0, error: int = 0, cont: bool = False) -> bool:
    """Answer a call: its return ``value``, or ``error`` (an errno), or let the kernel carry it
    out as asked (``cont``: only where the outcome is not a security decision). False when the
    caller went away meanwhile."""
    flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE if cont else 0
    buf = ctypes.create_string_buffer(_RESP.pack(ident, value, -error if error else 0, flags))
    if _lib().ioctl(listener, NOTIF_SEND, buf) < 0:
        if ctypes.get_errno() == 2:  # ENOENT: the call is over (the thread died)
            return False
        _check(-1)
    return True


def still_waiting(listener: int, ident: int) -> bool:
    """Whether the call is still waiting: so that a pid read from it still names its thread."""
    value = ctypes.c_uint64(ident)
    return bool(_lib().ioctl(listener, NOTIF_ID_VALID, ctypes.addressof(value)) == 0)


def pidfd_open(pid: int, flags: int = 0) -> int:
    return _check(_lib().syscall(_number("pidfd_open"), ctypes.c_int(pid), ctypes.c_uint(flags)))


def pidfd_getfd(pidfd: int, fd: int) -> int:
    """A descriptor for the same open file as ``fd`` in the process of ``pidfd``: acting on it
    acts on that process's socket (no copy, nothing it can swap afterwards)."""
    return _check(
        _lib().syscall(
            _number("pidfd_getfd"), ctypes.c_int(pidfd), ctypes.c_int(fd), ctypes.c_uint(0)
        )
    )


def openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
    """``openat2`` with ``resolve`` flags (RESOLVE_IN_ROOT: ``dirfd`` is the root for the walk,
    ``..`` and absolute symlinks included)."""
    how = ctypes.create_string_buffer(struct.pack("QQQ", flags | os.O_CLOEXEC, 0, resolve))
    return _check(
        _lib().syscall(
            _number("openat2"),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(path),
            ctypes.c_void_p(ctypes.addressof(how)),
            ctypes.c_size_t(len(how.raw)),
        )
    )


def unix_file(sock: int) -> int:
    """An O_PATH descriptor of the file a bound unix socket was bound at — the file itself, not
    a name that could have been swapped. EPERM without CAP_NET_ADMIN over the socket's network
    namespace; ENOENT while it is unbound."""
    return _check(_lib().ioctl(sock, SIOCUNIXFILE, None))


def connect(sock: int, address: bytes) -> int:
    """``connect`` with a raw socket address; 0 or the errno."""
    if _lib().connect(sock, address, len(address)) == 0:
        return 0
    return ctypes.get_errno()
