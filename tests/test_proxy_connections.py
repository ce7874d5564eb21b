"""The filtering proxy's connection limit against slow and idle clients (threat J): a sandbox
holds at most :data:`~egg_core.netproxy.MAX_CONNECTIONS` connections to its proxy, and clients
that ask for nothing cannot keep it from asking for something.

Real sockets only: the proxy serves a Unix socket as it does for a sandbox, and the allowed name
goes (through the test harness's seam) to a loopback server in this process.
"""

from __future__ import annotations

import resource
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg_core.netproxy import MAX_CONNECTIONS, DecisionLog, FilteringProxy, ProxyThread
from egg_core.netrules import NetworkRules
from egg_core.testing.network import transport

PUBLIC = "93.184.216.34"


class Upstream:
    """A loopback server: answers each connection's first read with ``pong:`` + what it read,
    then holds the connection open (``hold``) or closes it."""

    def __init__(self, hold: bool) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.hold = hold
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
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
            conn.sendall(b"pong:" + data)
        except OSError:
            pass
        if self.hold:
            self.held.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


class Proxy:
    """A running proxy that allows ``api.example.com`` (reaching ``upstream``)."""

    def __init__(self, directory: Path, upstream: Upstream, head_timeout: float) -> None:
        seam = transport(f"api.example.com={PUBLIC}@127.0.0.1:{upstream.port}", head_timeout)
        self.socket = directory / "proxy.sock"
        self.log_path = directory / "network.log"
        self.proxy = FilteringProxy(
            NetworkRules(domains=("api.example.com",)),
            DecisionLog(self.log_path),
            resolver=seam.resolver,
            connector=seam.connector,
            head_timeout=seam.head_timeout,
        )
        self.thread = ProxyThread(self.proxy, self.socket, {})
        self.thread.start()

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(self.socket))  # blocking: waits for room in the listen backlog
        sock.settimeout(10)
        return sock

    def request(self, head: bytes) -> tuple[socket.socket, bytes]:
        """Send ``head``; return the connection and what came back (b"": it was closed)."""
        sock = self.connect()
        sock.sendall(head)
        return sock, read_head(sock)


CONNECT = b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"
GET = b"GET http://api.example.com/v1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n"


def read_head(sock: socket.socket) -> bytes:
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionError:
        pass
    return data


def all_closed_by_peer(socks: list[socket.socket], within: float) -> list[socket.socket]:
    """Those of ``socks`` the other end has not closed by ``within`` seconds from now."""
    deadline = time.monotonic() + within
    return [s for s in socks if not closed_by_peer(s, max(deadline - time.monotonic(), 0.01))]


def closed_by_peer(sock: socket.socket, within: float) -> bool:
    """Whether the other end closed ``sock`` (EOF or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


@pytest.fixture(autouse=True)
def descriptors() -> Iterator[None]:
    """Room for a full proxy's connections, both ends of each, in this one process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 6 * MAX_CONNECTIONS + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"needs {wanted} descriptors (the hard limit is {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def make_proxy() -> Iterator[object]:
    made: list[tuple[Proxy, Upstream]] = []
    directory = Path(tempfile.mkdtemp(prefix="egg-proxy-test-"))

    def make(head_timeout: float = 60.0, hold: bool = True) -> Proxy:
        upstream = Upstream(hold)
        proxy = Proxy(directory, upstream, head_timeout)
        made.append((proxy, upstream))
        return proxy

    yield make
    for proxy, upstream in made:
        proxy.thread.stop()
        upstream.close()
    shutil.rmtree(
        directory, ignore_errors=True
    )  # (its socket's path must stay short: not tmp_path)


def test_request_less_connections_are_closed_at_the_head_deadline(make_proxy) -> None:
    proxy = make_proxy(head_timeout=1.0)
    idle = [proxy.connect() for _ in range(MAX_CONNECTIONS)]

    still_open = all_closed_by_peer(idle, within=10)

    assert still_open == []
    sock, answer = proxy.request(CONNECT)
    assert answer.startswith(b"HTTP/1.1 200 "), answer
    for s in (*idle, sock):
        s.close()


def test_a_client_dribbling_its_head_a_byte_at_a_time_is_closed_at_the_deadline(
    make_proxy,
) -> None:
    proxy = make_proxy(head_timeout=1.0)
    sock = proxy.connect()
    started = time.monotonic()
    closed_after = None
    for byte in (b"GET http://api.example.com/" + b"a" * 200)[:40]:
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            closed_after = time.monotonic() - started
            break
        if closed_by_peer(sock, within=0.25):
            closed_after = time.monotonic() - started
            break
    sock.close()

    # every byte kept it busy, and 40 of them took ten head deadlines: an idle timer per byte
    # would never have fired
    assert closed_after is not None, "the dribbling client was never closed"


def test_a_proxy_full_of_request_less_connections_still_serves_a_request(make_proxy) -> None:
    proxy = make_proxy(head_timeout=60.0)
    idle = [proxy.connect() for _ in range(MAX_CONNECTIONS)]
    time.sleep(0.5)  # all of them accepted and waiting for a head

    sock, answer = proxy.request(CONNECT)

    assert answer.startswith(b"HTTP/1.1 200 "), answer
    sock.sendall(b"hello")
    assert sock.recv(100) == b"pong:hello"
    # the oldest of those that asked for nothing made room for it
    assert closed_by_peer(idle[0], within=5)
    assert "connections open at once" in proxy.log_path.read_text()
    for s in (*idle, sock):
        s.close()


def test_a_proxy_full_of_tunnels_refuses_the_next_connection(make_proxy) -> None:
    proxy = make_proxy(head_timeout=60.0)
    tunnels = []
    for _ in range(MAX_CONNECTIONS):
        sock, answer = proxy.request(CONNECT)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        tunnels.append(sock)

    sock, answer = proxy.request(CONNECT)

    assert answer == b""  # closed without a word: nothing in progress was given up for it
    sock.close()
    for tunnel in tunnels:
        tunnel.sendall(b"still here")
        assert tunnel.recv(100) == b"pong:still here"
        tunnel.close()


def test_keep_alive_clients_that_got_their_answer_do_not_hold_the_proxy(make_proxy) -> None:
    proxy = make_proxy(head_timeout=60.0, hold=False)
    answered = []
    for _ in range(MAX_CONNECTIONS):
        sock, answer = proxy.request(GET)
        assert answer.startswith(b"pong:GET /v1 HTTP/1.1"), answer
        answered.append(sock)  # kept open, as a keep-alive client would

    sock, answer = proxy.request(GET)

    assert answer.startswith(b"pong:GET /v1 HTTP/1.1"), answer
    for s in (*answered, sock):
        s.close()
