"""The kernel interfaces the socket gate (:mod:`.socketgate`) needs and Python's ``os`` lacks:
seccomp's user notifications (and the descriptors they can hand over), ``pidfd_getfd``,
``openat2``, ``setns``, ``close_range`` and ``SIOCUNIXFILE``, through ctypes' own C module.

Standard library only, and nothing is loaded until first use: the exec cache's fast path imports
this module before it spawns (see :mod:`egg_core.execcache`). ``ctypes`` itself is not imported:
its package defines every C type and loader class in Python (with ``struct`` and ``types``),
about 0.7 ms of every cache hit, and this module needs a handful. They are defined here as
``ctypes`` defines them, on ``_ctypes`` (the C module under it), as ``egg_core.spawn`` uses
``_signal`` and the gate ``_socket``. What loads the filters and opens binds packs its few
integers itself; ``struct`` is imported by the listener's own calls, once the sandbox runs.
x86_64 and aarch64 numbers.
"""

from __future__ import annotations

import _ctypes as _c_module
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the C module, to the type checker as what it is to this module: types to subclass
_ctypes: Any = _c_module

MACHINE = os.uname().machine
#: syscall numbers: (x86_64, aarch64)
_NUMBERS = {
    "seccomp": (317, 277),
    "pidfd_open": (434, 434),
    "pidfd_getfd": (438, 438),
    "openat2": (437, 437),
    "setns": (308, 268),
    "close_range": (436, 436),
}
#: the AUDIT_ARCH value of this machine's native ABI (what a notification's ``arch`` says)
NATIVE_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(MACHINE)

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
#: once the supervisor has received a call, the caller waits for the answer killable only: a
#: signal cannot restart (and so repeat) a call the supervisor is already carrying out
SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1 << 5
PR_SET_NO_NEW_PRIVS = 38

#: the structures the listener reads and writes (``struct`` formats, native byte order); they
#: are made when first used, in the gate's own thread: a cache hit starts its sandbox first
_NOTIF = "=QIIiIQ6Q"  # id, pid, flags, nr, arch, instruction pointer, args
_NOTIF_SIZE = 80
_RESP = "=QqiI"  # id, val, error, flags
NOTIF_RECV = 0xC0502100  # SECCOMP_IOCTL_NOTIF_RECV: _IOWR('!', 0, struct seccomp_notif)
NOTIF_SEND = 0xC0182101  # SECCOMP_IOCTL_NOTIF_SEND: _IOWR('!', 1, struct seccomp_notif_resp)
NOTIF_ID_VALID = 0x40082102  # SECCOMP_IOCTL_NOTIF_ID_VALID: _IOW('!', 2, __u64)
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1
_ADDFD = "=QIIII"  # id, flags, srcfd, newfd, newfd_flags
NOTIF_ADDFD = 0x40182103  # SECCOMP_IOCTL_NOTIF_ADDFD: _IOW('!', 3, struct seccomp_notif_addfd)
SECCOMP_ADDFD_FLAG_SETFD = 1  # at the number asked for, as dup2 does (Linux 5.9)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1): the user namespace that owns a namespace
PIDFD_THREAD = os.O_EXCL  # a pidfd for one thread (its descriptor table), Linux 6.9+
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
CLOSE_RANGE_CLOEXEC = 1 << 2
SIOCUNIXFILE = 0x89E0  # SIOCPROTOPRIVATE: an O_PATH descriptor of a bound unix socket's file

# -- the C types this module passes, as ctypes defines them (see the module's docstring)


def _simple_type(name: str, code: str) -> Any:
    """A C type of ``struct``'s ``code`` (``class c_int(_SimpleCData): _type_ = "i"``)."""
    return type(name, (_ctypes._SimpleCData,), {"_type_": code})


c_int = _simple_type("c_int", "i")
c_uint = _simple_type("c_uint", "I")
c_long = _simple_type("c_long", "l")
c_ulong = _simple_type("c_ulong", "L")
c_uint64 = _simple_type("c_uint64", "Q")
c_void_p = _simple_type("c_void_p", "P")
c_char_p = _simple_type("c_char_p", "z")
c_char = _simple_type("c_char", "c")
c_size_t = c_ulong  # LP64: x86_64 and aarch64
addressof = _ctypes.addressof
get_errno = _ctypes.get_errno


def create_string_buffer(data: bytes) -> Any:
    """A mutable C buffer holding ``data``, which stays put (ctypes' function of that name)."""
    buffer = (c_char * len(data))()
    buffer.raw = data
    return buffer


#: a C function of libc that sets errno for :func:`get_errno` (a function of ctypes' ``CDLL``
#: with ``use_errno``)
_Function: Any = type(
    "_Function",
    (_ctypes.CFuncPtr,),
    {"_flags_": _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO, "_restype_": c_int},
)


class _Libc:
    """What ``ctypes.CDLL(None, use_errno=True)`` gives: the process's own C library."""

    def __init__(self) -> None:
        self._handle = _ctypes.dlopen(None, _ctypes.RTLD_LOCAL)
        self.syscall = self._function("syscall", c_long)
        self.ioctl = self._function("ioctl", c_int, (c_int, c_ulong, c_void_p))
        self.prctl = self._function("prctl", c_int)
        self.connect = self._function("connect", c_int, (c_int, c_char_p, c_uint))

    def _function(self, name: str, restype: type, argtypes: tuple[type, ...] | None = None) -> Any:
        function = _Function((name, self))
        function.restype = restype
        if argtypes is not None:
            function.argtypes = argtypes
        return function


_libc: _Libc | None = None


def _lib() -> _Libc:
    global _libc
    if _libc is None:
        _libc = _Libc()
    return _libc


def _native(value: int, size: int) -> bytes:
    """``value`` as an unsigned C integer of ``size`` bytes, in this machine's byte order."""
    return value.to_bytes(size, sys.byteorder)


def _number(name: str) -> int:
    pair = _NUMBERS[name]
    if MACHINE == "x86_64":
        return pair[0]
    if MACHINE == "aarch64":
        return pair[1]
    raise OSError(38, f"the socket gate does not know {MACHINE}'s system calls")


def _check(result: int) -> int:
    if result < 0:
        err = get_errno()
        raise OSError(err, os.strerror(err))
    return result


class Program:
    """A BPF program held in memory that stays put across fork (for a child to load)."""

    def __init__(self, bpf: bytes) -> None:
        if not bpf or len(bpf) % 8:
            raise ValueError("a BPF program is a whole number of 8-byte instructions")
        self.code = create_string_buffer(bpf)
        # struct sock_fprog { unsigned short len; struct sock_filter *filter; } (LP64)
        self.fprog = create_string_buffer(
            _native(len(bpf) // 8, 2) + bytes(6) + _native(addressof(self.code), 8)
        )

    def load(self, flags: int = 0) -> int:
        """Install the filter on the calling thread (after ``no_new_privs``); returns the
        listener's descriptor when ``flags`` asks for one, else 0."""
        lib = _lib()
        return _check(
            lib.syscall(
                _number("seccomp"),
                c_ulong(SECCOMP_SET_MODE_FILTER),
                c_ulong(flags),
                c_void_p(addressof(self.fprog)),
            )
        )


def no_new_privs() -> None:
    _check(_lib().prctl(PR_SET_NO_NEW_PRIVS, c_ulong(1), c_ulong(0), c_ulong(0), 0))


class Notification:
    """One system call a sandboxed thread is waiting in (``struct seccomp_notif``)."""

    __slots__ = ("arch", "args", "id", "nr", "pid")

    def __init__(self, raw: bytes) -> None:
        import struct

        fields = struct.unpack(_NOTIF, raw)
        self.id, self.pid, _, self.nr, self.arch = fields[:5]
        self.args = fields[6:]


def ready_to_serve() -> None:
    """Make what the listener's calls need (``struct``, the C buffers of a notification and of
    an answer) before the sandbox's first call, not while it waits for its answer."""
    import struct

    for size in (_NOTIF_SIZE, struct.calcsize(_RESP), struct.calcsize(_ADDFD)):
        c_char * size  # (ctypes keeps each array type it made)


def receive(listener: int) -> Notification:
    """The next call waiting (blocks; ENOENT when the caller went away before it was read)."""
    buf = create_string_buffer(bytes(_NOTIF_SIZE))
    _check(_lib().ioctl(listener, NOTIF_RECV, buf))
    return Notification(buf.raw)


def respond(listener: int, ident: int, value: int = 0, error: int = 0, cont: bool = False) -> bool:
    """Answer a call: its return ``value``, or ``error`` (an errno), or let the kernel carry it
    out as asked (``cont``: only where the outcome is not a security decision). False when the
    caller went away meanwhile."""
    import struct

    flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE if cont else 0
    buf = create_string_buffer(struct.pack(_RESP, ident, value, -error if error else 0, flags))
    if _lib().ioctl(listener, NOTIF_SEND, buf) < 0:
        if get_errno() == 2:  # ENOENT: the call is over (the thread died)
            return False
        _check(-1)
    return True


def add_fd(listener: int, ident: int, fd: int, number: int) -> None:
    """Give the caller of a waiting call a copy of egg's descriptor ``fd`` as its descriptor
    ``number`` (what it held there is closed, as ``dup2`` does; not close-on-exec)."""
    import struct

    buf = create_string_buffer(struct.pack(_ADDFD, ident, SECCOMP_ADDFD_FLAG_SETFD, fd, number, 0))
    _check(_lib().ioctl(listener, NOTIF_ADDFD, buf))


def still_waiting(listener: int, ident: int) -> bool:
    """Whether the call is still waiting: so that a pid read from it still names its thread."""
    value = c_uint64(ident)
    return bool(_lib().ioctl(listener, NOTIF_ID_VALID, addressof(value)) == 0)


def pidfd_open(pid: int, flags: int = 0) -> int:
    return _check(_lib().syscall(_number("pidfd_open"), c_int(pid), c_uint(flags)))


def pidfd_getfd(pidfd: int, fd: int) -> int:
    """A descriptor for the same open file as ``fd`` in the process of ``pidfd``: acting on it
    acts on that process's socket (no copy, nothing it can swap afterwards)."""
    return _check(_lib().syscall(_number("pidfd_getfd"), c_int(pidfd), c_int(fd), c_uint(0)))


def openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
    """``openat2`` with ``resolve`` flags (RESOLVE_IN_ROOT: ``dirfd`` is the root for the walk,
    ``..`` and absolute symlinks included)."""
    # struct open_how { __u64 flags; __u64 mode; __u64 resolve; }
    how = create_string_buffer(
        _native(flags | os.O_CLOEXEC, 8) + _native(0, 8) + _native(resolve, 8)
    )
    return _check(
        _lib().syscall(
            _number("openat2"),
            c_int(dirfd),
            c_char_p(path),
            c_void_p(addressof(how)),
            c_size_t(len(how.raw)),
        )
    )


def cloexec_from(first: int) -> None:
    """Mark every descriptor numbered ``first`` or above close-on-exec, in one call
    (``close_range`` with CLOSE_RANGE_CLOEXEC, Linux 5.11). OSError on an older kernel, or where
    a filter refuses it."""
    _check(
        _lib().syscall(
            _number("close_range"), c_uint(first), c_uint(0xFFFFFFFF), c_uint(CLOSE_RANGE_CLOEXEC)
        )
    )


def setns(fd: int, kind: int) -> None:
    """Move the calling thread into the namespace ``fd`` (``os.setns``, Python 3.12)."""
    _check(_lib().syscall(_number("setns"), c_int(fd), c_int(kind)))


def unix_file(sock: int) -> int:
    """An O_PATH descriptor of the file a bound unix socket was bound at — the file itself, not
    a name that could have been swapped. EPERM without CAP_NET_ADMIN over the socket's network
    namespace; ENOENT while it is unbound."""
    return _check(_lib().ioctl(sock, SIOCUNIXFILE, None))


def connect(sock: int, address: bytes) -> int:
    """``connect`` with a raw socket address; 0 or the errno."""
    if _lib().connect(sock, address, len(address)) == 0:
        return 0
    return int(get_errno())
