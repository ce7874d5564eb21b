"""In-sandbox network bridge: 127.0.0.1:PORT inside the namespace -> a Unix socket to the host.

Run inside the sandbox as ``python -I -S bridge.py --listen PORT=SOCKET ... -- CMD ARGS``. It binds
every listener first, forks a relay that serves them for the life of the sandbox, and then execs
CMD in its own process, so CMD's pid, exit status and terminal are exactly its own and the proxy
is already listening when CMD starts. Standard library only, no site-packages (``-S``): it runs
before anything of the user's and must stay tiny — so it uses the C modules under ``socket`` and
``threading`` (``_socket``, ``_thread``) directly: the Python ones import ``selectors``, ``enum``
and ``collections``, which cost every launch with a network more than the interpreter's start.
"""

from __future__ import annotations

import _socket as socket  # type: ignore[import-not-found,unused-ignore]
import _thread
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _relay(src: Any, dst: Any) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay_then_release(src: Any, dst: Any, done: Any) -> None:
    try:
        _relay(src, dst)
    finally:
        done.release()


def _serve_connection(client: Any, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_relay_then_release, (upstream, client, back))
    _relay(client, upstream)
    back.acquire()  # the other direction is done too
    client.close()
    upstream.close()


def _accept_loop(listener: Any, target: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()
        except OSError:
            continue
        client = socket.socket(listener.family, listener.type, 0, fd)
        _thread.start_new_thread(_serve_connection, (client, target))


def _listeners(port: int) -> list[Any]:
    result = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            if family == socket.AF_INET:
                raise
            continue
        sock.listen(128)
        result.append(sock)
    return result


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("egg bridge: usage: bridge.py --listen PORT=SOCKET ... -- CMD ARGS", file=sys.stderr)
        return 125
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    routes: list[tuple[Any, str]] = []
    try:
        for i in range(0, len(options), 2):
            if options[i] != "--listen":
                raise ValueError(options[i])
            port_text, _, target = options[i + 1].partition("=")
            for sock in _listeners(int(port_text)):
                routes.append((sock, target))
    except (ValueError, IndexError, OSError) as exc:
        print(f"egg bridge: cannot listen: {exc}", file=sys.stderr)
        return 125
    if not command:
        print("egg bridge: no command", file=sys.stderr)
        return 125
    pid = os.fork()
    if pid == 0:
        # The relay: detached from the terminal, serving until the sandbox ends.
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            for route in routes:
                _thread.start_new_thread(_accept_loop, route)
            forever = _thread.allocate_lock()
            forever.acquire()
            forever.acquire()  # serve until the sandbox ends
        finally:
            os._exit(0)
    for sock, _ in routes:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"egg: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
