"""Which file a unix socket of egg's own network namespace is bound at, from the kernel's socket
diagnostics (NETLINK_SOCK_DIAG, ``UDIAG_SHOW_VFS``): the socket gate's answer when
``SIOCUNIXFILE`` needs a capability egg lacks — a sandbox sharing the host's network
(``network: *``) run by an unprivileged user.

The kernel names the file by device and inode; egg then opens the name the socket was bound
with, as the binder sees it, and keeps it only if it is that very file.
"""

from __future__ import annotations

import os
import socket
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class View(Protocol):
        """What this module needs of where a thread stands (the gate's ``socketgate.View``):
        a path resolved as the thread would, to an O_PATH descriptor."""

        def resolve(self, path: bytes) -> int: ...


SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
UDIAG_SHOW_VFS = 0x02
UNIX_DIAG_VFS = 1
NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: len, type, flags, seq, pid
_REQUEST = struct.Struct("=BBHIIIII")  # unix_diag_req
_MESSAGE = struct.Struct("=BBBBIII")  # unix_diag_msg


def vfs_identity(sock_inode: int) -> tuple[int, int] | None:
    """(device, inode) of the file the socket with this sockfs inode is bound at; None when it
    is not bound to a path or is not in this network namespace. Both as the kernel reports
    them: the inode's low 32 bits."""
    request = _REQUEST.pack(
        socket.AF_UNIX, 0, 0, 0xFFFFFFFF, sock_inode, UDIAG_SHOW_VFS, NO_COOKIE, NO_COOKIE
    )
    header = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as diag:  # NETLINK_SOCK_DIAG
        diag.settimeout(2)
        diag.send(header + request)
        reply = diag.recv(8192)
    if len(reply) < _HEADER.size:
        return None
    length, kind, _, _, _ = _HEADER.unpack_from(reply)
    if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY:
        return None
    offset = _HEADER.size + _MESSAGE.size
    end = min(length, len(reply))
    while offset + 4 <= end:
        size, attr = struct.unpack_from("=HH", reply, offset)
        if size < 4:
            break
        if attr == UNIX_DIAG_VFS and size >= 12:
            inode, device = struct.unpack_from("=II", reply, offset + 4)
            return device, inode
        offset += (size + 3) & ~3
    return None


def bound_file(sock: int, view: View) -> int | None:
    """An O_PATH descriptor of the file ``sock`` is bound at, found through its bound name as
    its binder saw it (``view``) and checked against the kernel's identity; None when it is
    unbound or cannot be confirmed."""
    try:
        identity = vfs_identity(os.fstat(sock).st_ino)
        name = socket.socket(fileno=os.dup(sock))
        try:
            bound = name.getsockname()
        finally:
            name.close()
    except OSError:
        return None
    if identity is None or not isinstance(bound, str) or not bound:
        return None
    try:
        held = view.resolve(os.fsencode(bound))
    except OSError:
        return None
    st = os.fstat(held)
    if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino & 0xFFFFFFFF) == (
        _major(identity[0]),
        _minor(identity[0]),
        identity[1],
    ):
        return held
    os.close(held)
    return None


def _major(dev: int) -> int:
    """The kernel's own dev_t (what sock_diag reports, unencoded): major above bit 20."""
    return dev >> 20


def _minor(dev: int) -> int:
    return dev & 0xFFFFF
