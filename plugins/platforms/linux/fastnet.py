"""Run a cached linux-ns launch whose network is an allowlist (``egg exec --agent claude``).

The full path's launch serves the proxy on unix sockets in its launch directory's ``net`` (the
sandbox sees it at ``/run/egg-net``) and runs the command under the bridge, a Python program
inside the sandbox that listens on the namespace's loopback and relays to them. Starting that
interpreter in the sandbox is most of what a network costs a launch (6 ms of a 30 ms hit, after
bwrap's set-up and before the command: nothing overlaps it).

A cached launch has no bridge. Once bwrap has made the sandbox's network namespace (its pid 1
exists), a process forked from egg enters it — through the user namespace that owns it, whose
owner egg's user is — and makes the listeners there, on the ports the bridge would have
listened on, and hands them back; a child process of egg's (:mod:`egg_core.netchild`) serves
them under the cached rules for as long as the launch lasts. The command is let go only after
that (:func:`fastrun.run`'s ``inside``), so its first connection finds them listening. The
sandbox sees what the bridge gave it: ``127.0.0.1:PORT`` (and ``[::1]:PORT``) answering. The
launch directory's ``net`` is still made (the command line binds it), empty.

Nothing heavier than ``os`` is imported here before the sandbox is started.
"""

from __future__ import annotations

import os
import sys

from egg_core.api.fast import netchild

from . import bindfds, fastrun

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from typing import Any

    from egg_core.api.fast import Admission

#: the proxy's socket in the bridge's ``--listen PORT=PATH`` (the others are forwards')
PROXY_SOCKET = "proxy.sock"
#: what the listeners set so that they bind before bwrap has brought the loopback up
IP_FREEBIND, IPV6_FREEBIND = 15, 78
BACKLOG = 128


def run(entry: dict[str, Any], env: dict[str, str], admit: Admission) -> int | None:
    """The command's exit code; None when the launch cannot run as it was cached (the bridge
    is not where the full path puts it, the listeners could not be made in the sandbox's
    namespace) or, as for :func:`fastrun.run`, when the sandbox failed before the command
    started as the host changed under it: the full path then prepares it again."""
    network = entry["network"]
    unbridged = without_bridge(entry["argv"], entry["bwrap"])
    if unbridged is None:
        return None
    # This runner forks (the listeners' maker, the proxy's child) while the socket gate's
    # thread may be importing what it imports when it starts serving: a module another thread
    # is importing at a fork stays locked in the child, and the child's own import of it (the
    # proxy's asyncio imports select, _socket, struct) would wait forever. So they are imported
    # here first, and then are merely looked up.
    import _socket  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    import resource  # noqa: F401
    import select  # noqa: F401
    import struct  # noqa: F401

    argv, proxy_ports, forwards = unbridged
    net_dir = os.path.join(entry["run_dir"], "net")
    try:
        os.mkdir(net_dir, 0o700)
        log = network["log"] or os.path.join(entry["run_dir"], "network.log")
        os.close(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666))
    except OSError:
        return None
    served = _Served(network["rules"], proxy_ports, forwards, log)
    try:
        old = network["net_dir"]
        argv = [net_dir if arg == old else arg for arg in argv]
        grants = dict(entry["gate_grants"])
        grants["directories"] = [net_dir if d == old else d for d in grants["directories"]]
        entry = {**entry, "argv": argv, "gate_grants": grants}
        return fastrun.run(entry, env, admit, inside=served.start)
    finally:
        served.stop()


def without_bridge(argv: list[str], bwrap: str) -> tuple[list[str], list[int], list[int]] | None:
    """``argv`` without the bridge the full path runs the command under (its interpreter, the
    bridge, its ``--listen PORT=PATH`` options and its ``--``, right after bwrap's ``--``), the
    proxy's ports and the forwarded ones; None when the command line is not shaped so."""
    try:
        _, end = bindfds.read_options(argv, bwrap)
    except bindfds.PinFailed:
        return None
    start = end + 1
    if argv[end:start] != ["--"] or argv[start + 1 : start + 3] != ["-I", "-S"]:
        return None
    index = start + 4  # the interpreter, -I, -S, the bridge
    if not argv[start + 3 : index] or not argv[start + 3].endswith("/bridge.pyc"):
        return None
    proxy: list[int] = []
    forwards: list[int] = []
    while argv[index : index + 1] == ["--listen"] and index + 1 < len(argv):
        port, equals, path = argv[index + 1].partition("=")
        if not equals or not port.isdigit() or not 0 < int(port) < 65536:
            return None
        (proxy if os.path.basename(path) == PROXY_SOCKET else forwards).append(int(port))
        index += 2
    if argv[index : index + 1] != ["--"] or not proxy + forwards:
        return None
    return [*argv[:start], *argv[index + 1 :]], proxy, forwards


class _Served:
    """The listeners in the sandbox's namespace, and the child that serves them."""

    def __init__(
        self, rules: dict[str, Any], proxy_ports: list[int], forwards: list[int], log: str
    ) -> None:
        self.rules, self.proxy_ports, self.forwards, self.log = rules, proxy_ports, forwards, log
        self.child: Any = None

    def start(self, init: int, bwrap: int) -> str | None:
        """Make the listeners in the network namespace of ``init`` (the sandbox's pid 1, child
        of ``bwrap``) and start serving them; why not, when they cannot be made (nothing is
        served then)."""
        ports = [*self.proxy_ports, *self.forwards]
        try:
            made = listen_inside(init, ports, bwrap)
        except OSError as exc:
            return f"cannot listen in the sandbox's network: {exc.strerror or exc}"
        proxy = [fd for port, fd in made if port in self.proxy_ports]
        forwards = {port: [fd for p, fd in made if p == port] for port in self.forwards}
        try:
            self.child = netchild.start(self.rules, proxy, forwards, self.log)
        except OSError as exc:
            for _, fd in made:
                os.close(fd)
            return f"cannot start the proxy: {exc.strerror or exc}"
        return None

    def stop(self) -> None:
        if self.child is not None:
            netchild.stop(self.child)
            self.child = None


def listen_inside(init: int, ports: list[int], bwrap: int) -> list[tuple[int, int]]:
    """Listening TCP sockets on ``127.0.0.1:PORT`` (and ``[::1]:PORT`` where the namespace has
    IPv6) for each of ``ports``, in the network namespace of the process ``init`` (a child of
    ``bwrap``), as ``(port, descriptor)``; OSError (saying why) when they cannot be made there.

    A process is forked for it: entering a user namespace takes a process of one thread, and
    what enters cannot come back (it has no capability left in egg's). It enters the user
    namespace that owns the network namespace (egg's user owns it: bwrap made it, as this user)
    and then the network namespace, makes the sockets, sends them back over a socket pair, and
    exits. It holds nothing else of egg's: every other descriptor is closed first (the gate's
    listener, bwrap's pipes)."""
    import _socket  # type: ignore[import-not-found,unused-ignore]

    from .status import proc_is_ours

    # pids are egg's numbering (bwrap's --json-status-fd): /proc must be of egg's own pid
    # namespace, or /proc/PID is another process (a network namespace not the sandbox's)
    if not proc_is_ours():
        raise OSError(0, "/proc is another pid namespace's")
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        raise
    if pid == 0:  # pragma: no cover - the forked process (the tests see what it made)
        code = 1
        try:
            ours.close()
            netchild.close_others({0, 1, 2, theirs.fileno()})
            _make(init, ports, theirs, bwrap)
            code = 0
        except BaseException as exc:
            try:
                why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
                theirs.sendall(b"E" + why.encode(errors="replace")[:300])
            except BaseException:
                pass
        finally:
            os._exit(code)
    theirs.close()
    try:
        return _receive(ours, len(ports) * 2)
    finally:
        ours.close()
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break


def _make(init: int, ports: list[int], channel: Any, bwrap: int) -> None:
    """In the forked process: enter the namespaces, listen, send the sockets on ``channel``."""
    import _socket  # type: ignore[import-not-found,unused-ignore]
    import errno
    import fcntl
    import select

    from .gate_abi import CLONE_NEWNET, CLONE_NEWUSER, NS_GET_USERNS, setns
    from .status import parent_of

    # the namespace of the process init is now: bwrap's child, alive before /proc/PID was
    # opened and still after (a pid another process got in between would have had to end)
    alive = os.pidfd_open(init)
    if parent_of(init) != bwrap:
        raise OSError(errno.ESRCH, "the sandbox's pid 1 is not bwrap's")
    net = os.open(f"/proc/{init}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    if select.select([alive], [], [], 0)[0]:
        raise OSError(errno.ESRCH, "the sandbox's pid 1 has ended")
    owner = fcntl.ioctl(net, NS_GET_USERNS)
    setns(owner, CLONE_NEWUSER)  # every capability there: egg's user owns it
    setns(net, CLONE_NEWNET)
    made: list[tuple[int, Any]] = []
    for port in ports:
        for family, host, level, freebind in (
            (_socket.AF_INET, "127.0.0.1", _socket.IPPROTO_IP, IP_FREEBIND),
            (_socket.AF_INET6, "::1", _socket.IPPROTO_IPV6, IPV6_FREEBIND),
        ):
            sock = _socket.socket(family, _socket.SOCK_STREAM)
            try:
                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
                sock.setsockopt(level, freebind, 1)
                if family == _socket.AF_INET6:
                    sock.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY, 1)
                sock.bind((host, port))
                sock.listen(BACKLOG)
            except OSError:
                sock.close()
                if family == _socket.AF_INET:
                    raise  # the sandbox's clients are told 127.0.0.1 (its IPv6 may be off)
                continue
            made.append((port, sock))
    ports_said = ",".join(str(port) for port, _ in made).encode()
    fds = b"".join(sock.fileno().to_bytes(4, sys.byteorder) for _, sock in made)
    channel.sendmsg([ports_said], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])


def _receive(channel: Any, most: int) -> list[tuple[int, int]]:
    """What :func:`_make` sent: (port, descriptor) pairs; OSError with its reason when it
    failed."""
    import _socket  # type: ignore[import-not-found,unused-ignore]

    channel.settimeout(10)
    said, ancillary, _, _ = channel.recvmsg(4096, _socket.CMSG_SPACE(4 * most))
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds += [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
    try:
        ports = [int(port) for port in said.decode().split(",")] if said[:1] != b"E" else []
    except ValueError:
        ports = []
    if not fds or len(ports) != len(fds):
        for fd in fds:
            os.close(fd)
        why = said[1:].decode(errors="replace") if said[:1] == b"E" else "nothing was made"
        raise OSError(0, why)
    for fd in fds:
        os.set_inheritable(fd, False)
    return list(zip(ports, fds, strict=True))
