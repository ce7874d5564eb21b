"""Attacks on the socket gate (plugins/platforms/linux/socketgate.py and gate_filter.py) from an
adversarial review: each test attempts a way around the gate that once worked, as root and as
uid 65534, and checks the host side too — nothing arrives."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from tests.linux.conftest import EGG, PRELUDE, PY, Box, Listen, Listener
from tests.linux.test_syscalls import _i386_abi_works


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


#: ``int80(number, a, b, c, d)``: an i386 system call from this 64-bit process; LOW is memory
#: below 4 GiB for its pointers
INT80 = r"""
import mmap, struct
CODE = bytes.fromhex("53 89f8 89f3 4189c9 89d1 4489ca 4489c6 cd80 4863c0 5b c3")
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(CODE)
int80 = ctypes.CFUNCTYPE(ctypes.c_long, *[ctypes.c_long] * 5)(
    ctypes.addressof(ctypes.c_char.from_buffer(page)))
low = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40)  # MAP_32BIT
LOW = ctypes.addressof(ctypes.c_char.from_buffer(low))
"""

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


@pytest.mark.skipif(
    not _i386_abi_works(), reason="this kernel runs no i386 code: nothing to walk around"
)
def test_the_i386_socketcall_makes_no_unix_datagram_socket(box: Box, listen: Listen) -> None:
    # i386's socketcall() carries socketpair's arguments in memory, where a filter cannot look:
    # a 64-bit process reaches it with int 0x80, and sends from the pair with the native sendto
    path = box.home / ".local" / "state" / "i386" / "log.sock"
    server = datagram_listener(box, listen, path)

    found = box.probe(
        f"HOST = {str(path)!r}\n" + INT80 + SEND + "def args(offset, *values):\n"
        "    low.seek(offset); low.write(struct.pack('<%dI' % len(values), *values))\n"
        "    return LOW + offset\n"
        "def fds():\n"
        "    return list(struct.unpack_from('<ii', low, 64))\n"
        # with the arguments at every offset: libseccomp compares socketpair's type with the
        # low bits of socketcall's second argument, the pointer to them
        "def socketcall_pair(kind):\n"
        "    seen = set()\n"
        "    for offset in range(128, 144):\n"
        "        result = int80(102, 8, args(offset, 1, kind, 0, LOW + 64), 0, 0)\n"
        "        seen.add(pair(fds() if result == 0 else result))\n"
        "    return ' '.join(sorted(seen))\n"
        "def direct_pair(kind):\n"
        "    result = int80(360, 1, kind, 0, LOW + 64)\n"
        "    return pair(fds() if result == 0 else result)\n"
        "report(control=int80(20, 0, 0, 0, 0) == os.getpid(),"
        " socketcall_pair=socketcall_pair(socket.SOCK_DGRAM),"
        " socketcall_raw_pair=socketcall_pair(socket.SOCK_RAW),"
        " socketcall_socket=made(int80(102, 1, args(128, 1, socket.SOCK_DGRAM, 0), 0, 0)),"
        " socket=made(int80(359, 1, socket.SOCK_DGRAM, 0, 0)),"
        " raw_socket=made(int80(359, 1, socket.SOCK_RAW, 0, 0)),"
        " pair=direct_pair(socket.SOCK_DGRAM), raw_pair=direct_pair(socket.SOCK_RAW))"
    )

    assert found.pop("control") is True
    refused = {"EACCES", "EPERM"}
    assert set(found.values()) <= refused, found
    assert server.received_nothing()


def test_a_rule_named_socket_the_sandbox_could_put_there_grants_nothing(
    box: Box, listen: Listen
) -> None:
    # a rule names a socket in the workspace, which the sandbox writes: the name is the
    # sandbox's to fill — a symlink to any host socket, a hard link of or the very host socket
    # beside it (one mount: links cross no other) — and egg, looking the name up on the host,
    # would grant whatever it finds there
    victim = stream_listener(box, listen, box.home / ".ide" / "victim.sock")
    beside = stream_listener(box, listen, box.workspace / "beside.sock")
    named = box.workspace / "later.sock"
    box.config({"fs": [f"ro:{named}"]})

    found = box.probe(
        f"named, victim, beside = {str(named)!r}, {str(victim.address)!r},"
        f" {str(beside.address)!r}\n"
        "def planted(plant, source, *targets):\n"
        "    if os.path.lexists(named): os.unlink(named)\n"
        "    plant(source, named)\n"
        "    return [attempt(connect, socket.AF_UNIX, t) for t in (named, *targets)]\n"
        "report(symlink=planted(os.symlink, victim, victim),"
        " hardlink=planted(os.link, beside, beside), moved=planted(os.rename, beside))"
    )

    assert found == {
        "symlink": ["EACCES", "EACCES"],
        "hardlink": ["EACCES", "EACCES"],
        "moved": ["EACCES"],
    }
    assert victim.received_nothing()
    assert beside.received_nothing()
    explained = box.run("explain").stdout
    assert f"not {named}: a rule names it, but the sandbox can write its directory" in explained


def test_binding_a_socket_bound_on_the_host_does_not_make_its_file_the_sandboxs(box: Box) -> None:
    # a service the user grants hands out connections (a broker passing accepted sockets to
    # workers, as prefork servers do): an accepted socket carries its listener's file, and a
    # bind() on it fails — but the gate, which learns a sandbox's own sockets at bind, took
    # that file for one the sandbox bound, and let it connect to the listener there
    victim_path = box.home / ".ide" / "victim.sock"
    broker_path = box.home / "run" / "broker.sock"
    listeners = []
    for path in (victim_path, broker_path):
        box.mkdir(path.parent)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen(4)
        os.chmod(path, 0o777)
        listeners.append(server)
    victim, broker = listeners
    client = socket.socket(socket.AF_UNIX)

    def hand_on() -> None:
        conn, _ = broker.accept()
        client.connect(str(victim_path))
        accepted, _ = victim.accept()  # bears the victim listener's file
        with conn, accepted:
            socket.send_fds(conn, [b"x"], [accepted.fileno()])

    threading.Thread(target=hand_on, daemon=True).start()
    box.config({"fs": [f"ro:{broker_path}"]})

    try:
        found = box.probe(
            f"c = socket.socket(socket.AF_UNIX); c.connect({str(broker_path)!r})\n"
            "_, fds, _, _ = socket.recv_fds(c, 1, 1)\n"
            "got = socket.socket(fileno=fds[0])\n"
            "report(name=got.getsockname() != '', bind=attempt(got.bind, 'x.sock'),"
            f" victim=attempt(connect, socket.AF_UNIX, {str(victim_path)!r}))"
        )
        victim.setblocking(False)
        reached = attempt_accept(victim)
    finally:
        for sock in (victim, broker, client):
            sock.close()

    assert found == {"name": True, "bind": "EINVAL", "victim": "EACCES"}
    assert not reached


def attempt_accept(server: socket.socket) -> bool:
    """Whether a connection is waiting on ``server`` (non-blocking)."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


#: what each bind() is called on: one socket, a new socket each time, a file (not a socket)
BOUND = {
    "one": "one",
    "many": "socket.socket(socket.AF_UNIX)",
    "file": "open('taken.sock.txt', 'wb')",
}


@pytest.mark.parametrize("sockets", list(BOUND))
def test_binds_that_fail_never_use_up_eggs_descriptors(box: Box, sockets: str) -> None:
    # egg keeps each socket bind() is called on until the bind shows: binds that fail (the
    # name is taken, the descriptor is no socket) left one descriptor each in egg, until egg
    # had none left and every connect of the sandbox failed (EBADF) — the proxy's too; egg
    # runs here with 4,096
    found = box.run(
        "--nofile=4096:4096",
        EGG,
        "exec",
        "--",
        PY,
        "-I",
        "-c",
        PRELUDE + "import struct\ntaken = socket.socket(socket.AF_UNIX); taken.bind('taken.sock')\n"
        "one = socket.socket(socket.AF_UNIX)\n"
        "address = struct.pack('=H', socket.AF_UNIX) + b'taken.sock\\0'\n"
        "failed = 0\n"
        "for _ in range(6000):\n"
        f"    s = {BOUND[sockets]}\n"
        "    failed += libc.bind(s.fileno(), address, len(address)) != 0\n"
        "    if s is not one: s.close()\n"
        "time.sleep(0.5)\n"
        "served = socket.socket(socket.AF_UNIX); served.bind('own.sock'); served.listen(1)\n"
        "report(failed=failed, own=attempt(connect, socket.AF_UNIX, 'own.sock'))",
        egg=shutil.which("prlimit") or "prlimit",
    )

    assert found.returncode == 0, found.stderr
    assert found.json() == {"failed": 6000, "own": "ok"}


def test_connects_that_never_end_never_use_up_eggs_descriptors(box: Box) -> None:
    # a blocking connect waits in one of egg's workers (64) or in their queue, holding the
    # socket and its target there: 2,500 threads connecting to the sandbox's own listener that
    # never accepts held 5,000 descriptors in egg (4,096 here), and every connect then failed
    found = box.run(
        "--nofile=4096:4096",
        EGG,
        "exec",
        "--",
        PY,
        "-I",
        "-c",
        PRELUDE + "import struct, threading\n"
        "threading.stack_size(1 << 18)\n"
        "full = socket.socket(socket.AF_UNIX); full.bind('full.sock'); full.listen(0)\n"
        "address = struct.pack('=H', socket.AF_UNIX) + b'full.sock\\0'\n"
        "answers = []\n"
        "def wait():\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    answers.append(libc.connect(s.fileno(), address, len(address)) and ctypes.get_errno())\n"
        "for _ in range(2500):\n"
        "    threading.Thread(target=wait, daemon=True).start()\n"
        "time.sleep(2)\n"
        "served = socket.socket(socket.AF_UNIX); served.bind('own.sock'); served.listen(1)\n"
        "report(own=attempt(connect, socket.AF_UNIX, 'own.sock'),"
        " refused=sorted({errno.errorcode.get(a, a) for a in answers if a}))\n"
        "os._exit(0)",
        egg=shutil.which("prlimit") or "prlimit",
    )

    assert found.returncode == 0, found.stderr
    assert found.json() == {"own": "ok", "refused": ["EAGAIN"]}
