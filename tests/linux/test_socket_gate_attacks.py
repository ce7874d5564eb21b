"""Attacks on the socket gate (plugins/platforms/linux/socketgate.py and gate_filter.py) from an
adversarial review: each test attempts a way around the gate that once worked, as root and as
uid 65534, and checks the host side too — nothing arrives."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tests.linux.conftest import Box, Listen, Listener


def datagram_listener(box: Box, listen: Listen, path: Path) -> Listener:
    box.mkdir(path.parent)
    server = listen(socket.AF_UNIX, str(path), kind=socket.SOCK_DGRAM)
    os.chmod(path, 0o777)
    return server


def stream_listener(box: Box, listen: Listen, path: Path) -> Listener:
    box.mkdir(path.parent)
    server = listen(socket.AF_UNIX, str(path))
    os.chmod(path, 0o777)
    os.chown(path, box.identity.uid, box.identity.gid)  # the user's own: it may hard-link it
    return server


SEND = (
    "def send(fd):\n"
    "    s = socket.socket(fileno=fd)\n"
    "    try:\n"
    "        s.sendto(b'from the sandbox', HOST)\n"
    "    finally:\n"
    "        s.close()\n"
    "def made(fd):\n"
    "    '''EACCES (or another errno name) when no socket was made, else what sending did'''\n"
    "    if fd < 0:\n"
    "        return errno.errorcode.get(-fd, str(-fd))\n"
    "    return 'made, send: ' + attempt(send, fd)\n"
    "def pair(fds):\n"
    "    return made(fds[0]) if isinstance(fds, list) else made(fds)\n"
)


def test_a_raw_unix_socket_is_a_datagram_socket_and_is_refused(box: Box, listen: Listen) -> None:
    # the kernel makes AF_UNIX + SOCK_RAW a datagram socket ("BSD has it"): it names its
    # destination in each sendto, like SOCK_DGRAM
    path = box.home / ".local" / "state" / "raw" / "log.sock"
    server = datagram_listener(box, listen, path)

    found = box.probe(
        f"HOST = {str(path)!r}\n" + SEND + "def sock(kind):\n"
        "    try: return made(socket.socket(socket.AF_UNIX, kind).detach())\n"
        "    except OSError as exc: return errno.errorcode[exc.errno]\n"
        "def both(kind):\n"
        "    try: return made(socket.socketpair(socket.AF_UNIX, kind)[0].detach())\n"
        "    except OSError as exc: return errno.errorcode[exc.errno]\n"
        "report(raw=sock(socket.SOCK_RAW), raw_nonblocking=sock(socket.SOCK_RAW |"
        " socket.SOCK_NONBLOCK), raw_pair=both(socket.SOCK_RAW), stream=sock(socket.SOCK_STREAM),"
        " seqpacket=sock(socket.SOCK_SEQPACKET))"
    )

    assert found == {
        "raw": "EACCES",
        "raw_nonblocking": "EACCES",
        "raw_pair": "EACCES",
        "stream": "made, send: ENOTSUP",
        "seqpacket": "made, send: ENOTCONN",
    }
    assert server.received_nothing()


def test_a_unix_family_with_its_high_bits_set_is_still_refused_a_datagram_socket(
    box: Box, listen: Listen
) -> None:
    # the kernel reads socket()'s family as an int: 1 << 32 | AF_UNIX is AF_UNIX to it, so
    # the filter must compare the low 32 bits only
    path = box.home / ".local" / "state" / "high" / "log.sock"
    server = datagram_listener(box, listen, path)

    found = box.probe(
        f"HOST = {str(path)!r}\n" + SEND + "low = ctypes.create_string_buffer(8)\n"
        "def call(number, *args):\n"
        "    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])\n"
        "    return result if result >= 0 else -ctypes.get_errno()\n"
        "def both(family):\n"
        "    result = call(53, family, socket.SOCK_DGRAM, 0, ctypes.addressof(low))\n"
        "    return made(result if result < 0 else int.from_bytes(low.raw[:4], 'little'))\n"
        "report(socket=made(call(41, 1 << 32 | 1, socket.SOCK_DGRAM, 0)),"
        " high_word=made(call(41, 0xFFFFFFFF00000001, socket.SOCK_DGRAM, 0)),"
        " socketpair=both(1 << 32 | 1))"
    )

    assert found == {"socket": "EACCES", "high_word": "EACCES", "socketpair": "EACCES"}
    assert server.received_nothing()
