"""The host-side filtering proxy: the only way out of a sandbox whose network is an allowlist.

Inside the sandbox there is no route to anywhere; a small listener on the sandbox's 127.0.0.1
forwards to this proxy over a Unix socket, and the proxy variables point at that listener. So the
allowlist is *enforced* for every client: one that ignores the proxy variables simply has no route.

The proxy speaks HTTP CONNECT (any TLS or TCP protocol) and plain HTTP forwarding. For each request
it decides, and writes the decision as one JSON line to ``network.log``:
- the host must be on the list (exact, or ``*.example.com`` for its subdomains), on port 80 or 443
  unless the entry names a port (``api.example.com:8443``);
- the name is resolved here, and refused if any address is loopback, private, link-local or
  otherwise not global (so an allowed name cannot be pointed at the host or the cloud metadata
  endpoint); only an explicitly forwarded local port may reach loopback, and an IP literal that the
  user listed themselves is taken at their word;
- the connection goes to the address that was checked, not to a second lookup (no rebinding race).
``mode: observe`` allows every name and logs what enforce mode would have denied — but never
loopback that is not a forwarded port, an address nobody listed, or a name that resolves to a
loopback or non-public address (the cloud metadata address): those are refused in both modes.
Tests inject a resolver so that the allow path can be exercised against loopback listeners only.

Why one module of this size: CONNECT, plain HTTP and the port forwards share one connection
plumbing and one decision log; the pure allow/deny rules are :mod:`egg_core.netrules`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core.loopback import LOOPBACK_NAMES, is_loopback, parse_address
from egg_core.netrules import Decision, NetworkRules

Resolver = Callable[[str, int], Awaitable[list[str]]]
Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
MAX_HEAD = 64 * 1024
#: connections one sandbox may hold open through its proxy and forwards at once. Each costs the
#: host process (the session daemon) one or two descriptors: without a bound a sandbox opening
#: 20,000 of them exhausts the daemon's, and its control socket stops answering (threat J).
MAX_CONNECTIONS = 256
#: seconds a client has, from connecting, to send its whole request head: a deadline for the
#: head, not an idle timer per byte, so a client dribbling one byte a second is closed on time
#: too. A client inside the sandbox sends its head within milliseconds of connecting; 15 s is
#: room for one stalled on a loaded host, and bounds how long request-less connections hold
#: :data:`MAX_CONNECTIONS` (which they cannot hold anyway: see :meth:`FilteringProxy._bounded`).
HEAD_TIMEOUT = 15.0
#: ``NO_PROXY`` inside a sandbox: loopback goes direct. In a network namespace it is the
#: sandbox's own loopback (a server the command starts, the forwarded ports' bridges); under
#: Seatbelt the profile admits only the forwarded ports. Through the proxy it would be refused.
NO_PROXY_INSIDE = ",".join(
    ["localhost", "127.0.0.1", "::1", *sorted(LOOPBACK_NAMES - {"localhost"}), ".localhost"]
)


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class DecisionLog:
    """``network.log``: one JSON object per decision, flushed as it is written."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._handle = open(path, "a", buffering=1) if path is not None else None  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, **record: Any) -> None:
        if self._handle is None:
            return
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z", **record}
        with self._lock:
            self._handle.write(json.dumps(record, sort_keys=False) + "\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class FilteringProxy:
    """Serves the proxy and the local-port forwards on Unix sockets, in an asyncio loop."""

    def __init__(
        self,
        rules: NetworkRules,
        log: DecisionLog,
        resolver: Resolver | None = None,
        connector: Connector | None = None,
        head_timeout: float | None = None,
    ) -> None:
        self.rules = rules
        self.log = log
        self.resolver = resolver or system_resolver
        self.connector = connector or _open_connection
        self.head_timeout = HEAD_TIMEOUT if head_timeout is None else head_timeout
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[None]] = set()
        #: connections still sending their request head, oldest first (what a full proxy
        #: closes to make room: a client that has not asked for anything loses nothing)
        self._waiting: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        #: connections closed to make room that have not finished yet (no longer counted)
        self._evicting: set[asyncio.Task[None]] = set()
        self._refused = 0
        self._evicted = 0

    # -- decisions

    async def decide(self, host: str, port: int) -> Decision:
        listed, why = self.rules.match(host, port)
        literal = parse_address(host)
        if is_loopback(host):
            if port in self.rules.local_ports:
                return Decision(True, f"forwarded local port {port}", "127.0.0.1", listed=True)
            # refused in observe mode too: the host's own services are never "observed" into
            return Decision(False, f"loopback port {port} is not a forwarded local port")
        observed = None  # observe mode: why enforce mode would refuse this name
        if not listed:
            if literal is not None:
                return Decision(False, why)  # an address nobody listed: not even observed
            if self.rules.mode != "observe":
                return self._deny(why)
            observed = why  # still resolved here, so the connection goes to a checked address
        if literal is not None:
            # the user listed this address themselves
            return Decision(True, why, str(literal), listed=True)
        try:
            addresses = await asyncio.wait_for(self.resolver(host, port), timeout=10)
        except (TimeoutError, OSError, UnicodeError) as exc:
            addresses, failure = [], f"cannot resolve {host}: {exc.__class__.__name__}"
        else:
            failure = f"cannot resolve {host}"
        if not addresses:
            # Allowed (or, observing, let through) but unreachable: not a policy decision.
            if observed is not None:
                return Decision(True, observed, would_deny=True, unreachable=failure)
            return Decision(True, why, unreachable=failure, listed=True)
        for text in addresses:
            addr = parse_address(text)
            # what a name resolves to is checked in observe mode too: a name pointing at the
            # cloud metadata address or the host's loopback teaches nothing worth dialing it
            if addr is None:
                return Decision(False, f"{host} resolved to an unparseable address {text!r}")
            if addr.is_loopback:
                if port in self.rules.local_ports:
                    continue
                return Decision(False, f"{host} resolves to loopback {addr}")
            if not addr.is_global:
                return Decision(False, f"{host} resolves to non-public address {addr}")
        address = addresses[0]
        if is_loopback(address):
            address = "127.0.0.1"
        if observed is not None:
            return Decision(True, observed, address, would_deny=True)
        return Decision(True, why, address, listed=True)

    def _deny(self, reason: str, address: str | None = None) -> Decision:
        """Refuse; in observe mode allow (to ``address`` when one was checked) and flag it."""
        if self.rules.mode == "observe":
            return Decision(True, reason, address, would_deny=True)
        return Decision(False, reason)

    # -- serving

    async def start(
        self,
        proxy_socket: Path,
        port_sockets: dict[int, Path],
        agent: tuple[Path, Handler] | None = None,
    ) -> None:
        """Serve on the paths; with ``agent``, a filtered ssh agent's socket and its handler
        (:class:`egg_core.agentfilter.AgentFilter`), within the same connection bound."""
        from egg_core.paths import bound_unix_socket

        await self.serve(
            [bound_unix_socket(proxy_socket)],
            {port: [bound_unix_socket(path)] for port, path in port_sockets.items()},
        )
        paths = [proxy_socket, *port_sockets.values()]
        for path in paths:
            os.chmod(path, 0o600)
        if agent is not None:
            await self.serve_agent(*agent)

    async def serve_agent(self, path: Path, handler: Handler) -> None:
        """Serve a filtered ssh agent's socket at ``path`` (only this user may connect), its
        connections within the same bound as the proxy's."""
        from egg_core.paths import bound_unix_socket

        self._servers.append(
            await asyncio.start_unix_server(self._bounded(handler), sock=bound_unix_socket(path))
        )
        os.chmod(path, 0o600)

    async def serve(
        self, proxy: Sequence[socket.socket], ports: Mapping[int, Sequence[socket.socket]]
    ) -> None:
        """Serve the proxy on the ``proxy`` sockets and each local port's forward on its own,
        all listening already: unix sockets the bridge relays to, or (egg exec's cache: see
        egg_core.netchild) TCP sockets on the sandbox's own loopback."""
        for sock in proxy:
            self._servers.append(await _server(self._bounded(self._handle_proxy), sock))
        for port, socks in ports.items():

            async def forward(
                r: asyncio.StreamReader, w: asyncio.StreamWriter, p: int = port
            ) -> None:
                await self._handle_forward(r, w, p)

            for sock in socks:
                self._servers.append(await _server(self._bounded(forward), sock))

    async def start_tcp(self, host: str, port: int = 0) -> int:
        """Serve the proxy on a TCP address; return the bound port (``port=0``: a free one).

        For platforms without a network namespace to bridge into (macOS): the sandbox profile
        lets the command reach only this port on loopback.
        """
        server = await asyncio.start_server(self._bounded(self._handle_proxy), host=host, port=port)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop serving and end every connection, tunnels included, *awaited*: a task left
        pending when the loop closes is "Task was destroyed but it is pending" and its
        transports "Event loop is closed" on the user's terminal as ``egg exec`` exits."""
        for server in self._servers:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        await asyncio.sleep(0)  # the closed transports' connection_lost callbacks run now

    def _bounded(self, handler: Handler) -> Handler:
        """``handler``, for at most :data:`MAX_CONNECTIONS` connections at once. A connection
        beyond them takes the place of the oldest one still sending its request head (closed:
        it asked for nothing yet), so slow or request-less clients cannot hold the proxy; only
        when every one is a request in progress or a tunnel is it refused (closed, nothing
        read). The first eviction and the first refusal are logged; every connection is closed
        when its handler ends, however it ends."""

        async def bounded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if len(self._tasks) - len(self._evicting) >= MAX_CONNECTIONS:
                if not self._waiting:
                    writer.transport.abort()
                    self._refused += 1
                    if self._refused == 1:
                        self._log_full("further ones are refused until some close")
                    return
                oldest = next(iter(self._waiting))
                self._waiting.pop(oldest).transport.abort()
                oldest.cancel()
                self._evicting.add(oldest)
                oldest.add_done_callback(self._evicting.discard)
                self._evicted += 1
                if self._evicted == 1:
                    self._log_full(
                        "each new one closes the oldest that has not sent its request yet"
                    )
            self._track()
            try:
                await handler(reader, writer)
            finally:
                writer.close()

        return bounded

    def _log_full(self, what: str) -> None:
        self.log.write(
            host="-",
            port=0,
            decision="error",
            reason=f"more than {MAX_CONNECTIONS} connections open at once: {what}",
            method="-",
        )

    def _track(self) -> asyncio.Task[None] | None:
        """Count the current connection's task (until it is done) and return it."""
        task: asyncio.Task[None] | None = asyncio.current_task()
        if task is not None and task not in self._tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return task

    async def _handle_forward(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        self._track()
        self.log.write(
            host="127.0.0.1",
            port=port,
            decision="allow",
            reason="forwarded local port",
            method="TCP",
        )
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError as exc:
            self.log.write(
                host="127.0.0.1", port=port, decision="error", reason=str(exc), method="TCP"
            )
            writer.close()
            return
        await _pipe_both(reader, writer, up_reader, up_writer)

    async def _handle_proxy(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = self._track()
        if task is not None:
            self._waiting[task] = writer
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ConnectionError,
            TimeoutError,
        ):
            writer.close()
            return
        finally:
            if task is not None:
                self._waiting.pop(task, None)
        if len(head) > MAX_HEAD:
            await _respond(writer, 431, "request head too large")
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await _respond(writer, 400, "malformed request line")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_host_port(target, 443)
        else:
            host, port, target = _absolute_target(target)
        if not host or port is None:
            await _respond(writer, 400, "expected CONNECT host:port or an absolute http:// URL")
            return
        decision = await self.decide(host, port)
        self.log.write(
            host=host,
            port=port,
            decision="allow" if decision.allow else "deny",
            reason=decision.reason,
            method=method.upper(),
            listed=decision.listed,
            **({"would_deny": True} if decision.would_deny else {}),
            **({"error": decision.unreachable} if decision.unreachable else {}),
        )
        if not decision.allow:
            await _respond(writer, 403, f"egg: {host}:{port} blocked: {decision.reason}")
            return
        if decision.unreachable:
            await _respond(writer, 502, f"egg: cannot reach {host}:{port} (name does not resolve)")
            return
        connect_to = decision.address or host
        try:
            up_reader, up_writer = await asyncio.wait_for(
                self.connector(connect_to, port), timeout=30
            )
        except (TimeoutError, OSError) as exc:
            await _respond(writer, 502, f"egg: cannot connect to {host}:{port}: {exc}")
            return
        if method.upper() == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, up_writer)
        else:
            up_writer.write(_forward_head(method, target, version, lines[1:]))
            await up_writer.drain()
            # the server was asked to close after its answer: once it has, the exchange is
            # over, and a keep-alive client idling on the connection must not hold a slot
            await _pipe_both(reader, writer, up_reader, up_writer, until_upstream_ends=True)


async def _server(handler: Handler, sock: socket.socket) -> asyncio.AbstractServer:
    """Serve ``handler`` on ``sock`` (listening already), whatever its family."""
    if sock.family == socket.AF_UNIX:
        return await asyncio.start_unix_server(handler, sock=sock)
    return await asyncio.start_server(handler, sock=sock)


async def _open_connection(
    host: str, port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


@attrs.frozen
class NetworkTransport:
    """How the proxy resolves a name and opens a connection, when a plugin replaces the system's
    (``egg_network_transport``): the test harness's loopback seam, a resolver of one's own."""

    resolver: Resolver
    connector: Connector
    #: seconds a client has to send its request head (None: :data:`HEAD_TIMEOUT`); the test
    #: harness shortens it so that a test need not wait the production deadline out
    head_timeout: float | None = None

    @property
    def system(self) -> bool:
        """Exactly the system's resolver and connector at the production deadline
        (:func:`system_transport`): what a cached launch's proxy child makes again by itself. A
        plugin's objects cannot be stored, so a launch that uses anything else is never cached;
        this is what the objects are, not what a plugin says they are."""
        return (
            self.resolver is system_resolver
            and self.connector is _open_connection
            and self.head_timeout is None
        )


def system_transport() -> NetworkTransport:
    """The system's resolver and connector (the built-in ``egg_network_transport``'s answer)."""
    return NetworkTransport(resolver=system_resolver, connector=_open_connection)


def _split_host_port(text: str, default: int) -> tuple[str, int | None]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    try:
        port = int(port_text) if port_text else default
    except ValueError:
        return host, None
    if not 0 < port < 65536:
        return host, None
    return host, port


def _absolute_target(target: str) -> tuple[str, int | None, str]:
    """``http://host[:port]/path`` -> (host, port, ``/path``); only plain http is forwarded."""
    if not target.lower().startswith("http://"):
        return "", None, target
    rest = target[7:]
    authority, slash, path = rest.partition("/")
    authority = authority.rpartition("@")[2]
    host, port = _split_host_port(authority, 80)
    return host, port, "/" + path if slash else "/"


def _forward_head(method: str, path: str, version: str, headers: list[str]) -> bytes:
    kept = [
        h
        for h in headers
        if h and not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))
    ]
    kept.append("Connection: close")
    return f"{method} {path} {version}\r\n".encode("latin-1") + (
        "\r\n".join(kept) + "\r\n\r\n"
    ).encode("latin-1")


async def _respond(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reasons = {
        400: "Bad Request",
        403: "Forbidden",
        431: "Request Header Fields Too Large",
        502: "Bad Gateway",
    }
    body = (message + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until ``reader`` ends, then half-close ``writer``. Cancellation is not swallowed:
    :meth:`FilteringProxy.close` must be able to end a tunnel and know that it has ended."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    *,
    until_upstream_ends: bool = False,
) -> None:
    """Both directions until both have ended (a tunnel: either side may half-close and go on
    reading), or with ``until_upstream_ends`` until the server's side has (plain HTTP)."""
    upward = asyncio.ensure_future(_pipe(reader, up_writer))
    downward = asyncio.ensure_future(_pipe(up_reader, writer))
    try:
        if until_upstream_ends:
            await downward
        else:
            await asyncio.gather(upward, downward)
    finally:
        for pipe in (upward, downward):
            pipe.cancel()
        await asyncio.gather(upward, downward, return_exceptions=True)
        for w in (writer, up_writer):
            w.close()


class ProxyThread:
    """Runs a :class:`FilteringProxy` in a background thread, for synchronous callers."""

    def __init__(
        self,
        proxy: FilteringProxy,
        proxy_socket: Path | None,
        port_sockets: dict[int, Path],
        *,
        tcp: tuple[str, int] | None = None,
        agent: tuple[Path, Handler] | None = None,
    ):
        """Serve on ``proxy_socket`` (and the ``port_sockets`` forwards, and a filtered ssh
        agent's socket), or with ``tcp=(host, port)`` on that TCP address instead;
        :attr:`port` is then the bound port."""
        self.proxy = proxy
        self._args = (proxy_socket, port_sockets)
        self._agent = agent
        self._tcp = tcp
        self.port: int | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="egg-netproxy", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            proxy_socket, port_sockets = self._args
            if self._tcp is not None:
                self.port = self._loop.run_until_complete(self.proxy.start_tcp(*self._tcp))
                if self._agent is not None:
                    self._loop.run_until_complete(self.proxy.serve_agent(*self._agent))
            if proxy_socket is not None:
                self._loop.run_until_complete(
                    self.proxy.start(proxy_socket, port_sockets, self._agent)
                )
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self.proxy.close())
        self._loop.close()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self.proxy.log.close()
