"""ssh's ProxyCommand inside the sandbox: ``python3 -I -S sshconnect.py HOST PORT`` asks egg's
filtering proxy (``$HTTPS_PROXY``, the bridge's loopback port) for ``CONNECT HOST:PORT``, then
relays ssh's stdin and stdout through the tunnel.

ssh ignores ``HTTPS_PROXY`` and the sandbox has no resolver: this is the route, and the proxy
decides it like any request (the allowlist, the resolved-address checks, ``network.log``). A
refusal is one line on stderr naming the egg.yaml entry that would allow it. Standard library
only, run isolated (``-I -S``): it is copied next to egg's other files for the sandbox and runs
with nothing of the sandbox's on its path.
"""

from __future__ import annotations

import os
import select
import socket
import sys

#: how long the proxy has to answer the CONNECT (it resolves and dials first)
ANSWER_TIMEOUT = 60.0
CHUNK = 65536


def proxy_address(environ: dict[str, str]) -> tuple[str, int] | None:
    """The proxy's loopback address from the sandbox's proxy variables."""
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        value = environ.get(name, "")
        rest = value.split("://", 1)[-1].rstrip("/")
        host, _, port = rest.rpartition(":")
        if host and port.isdigit():
            return host.strip("[]"), int(port)
    return None


def entry_for(host: str, port: int) -> str:
    """The network: entry of egg.yaml that allows ``host:port``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


#: what the proxy's refusal says when the allowlist is what refused (egg_core.netrules)
NOT_LISTED = ("host not on the allowlist", "is not allowed for")


def refuse(host: str, port: int, why: str) -> int:
    """One line on stderr; it names the egg.yaml entry that would allow the connection when
    the allowlist is what refused it (a name resolving to a private address is not fixed so)."""
    if any(words in why for words in NOT_LISTED):
        sys.stderr.write(
            f"egg: ssh to {host}:{port} is not allowed by this sandbox ({why}); to allow it, "
            f"add {entry_for(host, port)} to network: in egg.yaml\n"
        )
    else:
        sys.stderr.write(f"egg: ssh to {host}:{port} failed: {why}\n")
    return 255


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        sys.stderr.write("usage: sshconnect.py HOST PORT\n")
        return 2
    host, port = argv[0], int(argv[1])
    proxy = proxy_address(dict(os.environ))
    if proxy is None:
        return refuse(host, port, "this sandbox has no filtering proxy")
    try:
        tunnel = socket.create_connection(proxy, timeout=ANSWER_TIMEOUT)
        target = entry_for(host, port)
        tunnel.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            data = tunnel.recv(CHUNK)
            if not data:
                return refuse(host, port, "the proxy closed the connection")
            head += data
            if len(head) > CHUNK:
                return refuse(host, port, "the proxy's answer is too long")
    except OSError as exc:
        return refuse(host, port, f"egg's proxy cannot be reached: {exc.strerror or exc}")
    head, _, early = head.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200":
        body = early.decode("utf-8", "replace").strip().splitlines()
        why = body[0] if body else b" ".join(status[1:]).decode("latin-1", "replace")
        return refuse(host, port, why.removeprefix("egg: "))
    tunnel.settimeout(None)
    return relay(tunnel, early)


def relay(tunnel: socket.socket, early: bytes) -> int:
    """stdin -> tunnel and tunnel -> stdout until both directions have ended."""
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    if early:
        os.write(stdout, early)
    reading = [stdin, tunnel.fileno()]
    while reading:
        ready, _, _ = select.select(reading, [], [])
        for fd in ready:
            if fd == stdin:
                data = os.read(stdin, CHUNK)
                if data:
                    tunnel.sendall(data)
                else:
                    reading.remove(stdin)
                    tunnel.shutdown(socket.SHUT_WR)
            else:
                data = tunnel.recv(CHUNK)
                if data:
                    _write_all(stdout, data)
                else:
                    return 0  # the server ended the connection: ssh has what it needs
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, ConnectionError, KeyboardInterrupt):
        sys.exit(255)
