"""A sandbox's own connections to its proxy, end to end (threat J, and a clean end): a burst of
connections that never finish their request head is closed at the head deadline, so the same
sandbox's next request goes through; and ``egg exec`` ending while a tunnel is still open says
nothing but what the command said.

The proxy's head deadline is shortened through the test harness's network seam
(``EGG_TEST_PROXY_HEAD_TIMEOUT``); the allowed name reaches a loopback server on the host.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from egg_core.netproxy import MAX_CONNECTIONS

from .conftest import Box

PUBLIC = "93.184.216.34"


class HoldingServer:
    """Answers each connection's first read with ``pong:`` + what it read, and then keeps the
    connection open until the test ends (an upstream that never hangs up first)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        try:
            conn.sendall(b"pong:" + conn.recv(65536))
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def upstream() -> Iterator[HoldingServer]:
    server = HoldingServer()
    yield server
    server.close()


def network(server: HoldingServer, head_timeout: float | None = None) -> dict[str, str]:
    env = {"EGG_TEST_NETWORK": f"api.example.com={PUBLIC}@127.0.0.1:{server.port}"}
    if head_timeout is not None:
        env["EGG_TEST_PROXY_HEAD_TIMEOUT"] = str(head_timeout)
    return env


TUNNEL = r"""
def proxy_address():
    host, port = os.environ["HTTPS_PROXY"].split("://", 1)[1].rstrip("/").rsplit(":", 1)
    return host, int(port)

def tunnel(payload):
    sock = socket.create_connection(proxy_address(), timeout=10)
    sock.sendall(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            return sock, None, None
        head += chunk
    status = int(head.split(b" ")[1])
    reply = None
    if status == 200:
        sock.sendall(payload)
        reply = sock.recv(4096).decode()
    return sock, status, reply
"""

SLOW_LORIS = (
    TUNNEL
    + r"""
import select
burst = []
for _ in range(COUNT):
    sock = socket.create_connection(proxy_address(), timeout=10)
    sock.sendall(b"GET http://api.example.com/ HTTP/1.1\r\nHost: api.exa")  # never finished
    burst.append(sock)
# each is closed by the proxy at the head deadline (the bridge passes the end on)
closed, deadline = 0, time.monotonic() + 30
waiting = list(burst)
while waiting and time.monotonic() < deadline:
    ready, _, _ = select.select(waiting, [], [], 1)
    for sock in ready:
        try:
            data = sock.recv(4096)
        except OSError:
            data = b""
        if not data:
            closed += 1
            waiting.remove(sock)
sock, status, reply = tunnel(b"after the burst")
report(burst=len(burst), closed=closed, status=status, reply=reply)
"""
)


def test_a_request_after_a_slow_loris_burst_from_the_same_sandbox_succeeds(
    box: Box, upstream: HoldingServer
) -> None:
    found = box.probe(
        SLOW_LORIS.replace("COUNT", str(MAX_CONNECTIONS)),
        config={"network": ["api.example.com"]},
        env=network(upstream, head_timeout=2),
        timeout=120,
    )

    assert found == {
        "burst": MAX_CONNECTIONS,
        "closed": MAX_CONNECTIONS,
        "status": 200,
        "reply": "pong:after the burst",
    }


def test_egg_exec_ending_with_a_tunnel_open_prints_nothing_of_its_own(
    box: Box, upstream: HoldingServer
) -> None:
    result = box.py(
        TUNNEL
        + "sock, status, reply = tunnel(b'left open')\n"
        + "report(status=status, reply=reply)\n"
        + "os._exit(0)  # the tunnel still open, and the upstream never hangs up\n",
        config={"network": ["api.example.com"]},
        env=network(upstream),
    )

    assert result.returncode == 0, result.stderr
    assert result.json() == {"status": 200, "reply": "pong:left open"}
    # no "Exception ignored ... Event loop is closed", no "Task was destroyed but it is pending"
    assert result.stderr == ""
