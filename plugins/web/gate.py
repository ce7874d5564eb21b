"""Who may ask ``egg web`` anything, checked before any route runs (an ASGI middleware).

- The ``Host`` header must be one of this server's own (:attr:`.app.Settings.hosts`): a page of
  another site whose name was pointed at this address (DNS rebinding) is refused.
- The token: ``GET /?token=T`` logs a browser in — an HttpOnly, SameSite=Strict cookie and a
  redirect to ``/`` — and ``Authorization: Bearer T`` is the token for any other client.
  Without one every page, the scripts, the API and the WebSocket are answered 401 — a WebSocket
  at its handshake, never accepted.
- A browser sends a cookie to every port of the host it was set for (cookies know no ports):
  another user's server on another port of 127.0.0.1, or any local development server, would
  get it. So the cookie opens only the pages and their scripts, which hold nothing of a
  session; the session list and the terminals need the *page key*, which the login's redirect
  hands to this origin's scripts alone (``/#key=…``: a fragment is never sent to any server;
  the scripts keep it in this origin's storage, which is per port, and take it out of the
  address bar). Each login has a cookie and a key of its own, random, valid while this server
  runs. The API takes the key or the token as a bearer token; the WebSocket the key as
  ``?key=`` (a browser cannot set its headers) or either as a bearer token.
- A WebSocket's ``Origin`` must be this page's own, compared exactly (``null`` and
  ``http://127.0.0.1:PORT.evil.example`` are refused), before any output.
- Every response carries the security headers (:data:`HEADERS`): a Content-Security-Policy with
  scripts from this origin alone (xterm.js injects style elements, so styles may be inline), no
  sniffing, no framing, no referrer (a token in an address is never sent on), no caching.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "egg_web_token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


#: the most logins kept at once (each a cookie and a page key); the oldest goes first
MAX_LOGINS = 64
#: where the API and the WebSocket are: the page key (or the token) is needed there
KEYED = ("/api/", "/ws/")


class Gate:
    """The checks above, around ``app``."""

    def __init__(self, app: App, token: str, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = frozenset(host.lower() for host in hosts)
        #: cookie -> page key, of each login (insertion order: the oldest first)
        self.logins: dict[bytes, bytes] = {}

    def _is(self, given: bytes | None, expected: bytes) -> bool:
        return given is not None and hmac.compare_digest(given, expected)

    def _bearer(self, headers: dict[bytes, bytes]) -> bytes | None:
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        return value.strip() if scheme.lower() == b"bearer" else None

    def _cookie(self, headers: dict[bytes, bytes]) -> bytes | None:
        """This server's cookie, read by hand: one odd cookie of another site's (a space, a
        quote, a non-ASCII byte) must not make a whole header unreadable, as it does to
        http.cookies, and lock the user out."""
        for part in headers.get(b"cookie", b"").split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name == COOKIE.encode() and any(self._is(value, known) for known in self.logins):
                return value
        return None

    def _keyed(self, given: bytes | None) -> bool:
        return given is not None and any(self._is(given, key) for key in self.logins.values())

    def _allowed(
        self, scope: Scope, headers: dict[bytes, bytes], query: dict[str, list[str]]
    ) -> bool:
        bearer = self._bearer(headers)
        if self._is(bearer, self.token):
            return True
        if not scope["path"].startswith(KEYED):
            return self._cookie(headers) is not None
        key = bearer
        if scope["type"] == "websocket" and key is None and "key" in query:
            key = query["key"][-1].encode("latin-1")
        return self._keyed(key)

    def _login(self) -> tuple[bytes, bytes]:
        cookie, key = secrets.token_urlsafe(32).encode(), secrets.token_urlsafe(32).encode()
        self.logins[cookie] = key
        while len(self.logins) > MAX_LOGINS:
            del self.logins[next(iter(self.logins))]
        return cookie, key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1").lower()
        websocket = scope["type"] == "websocket"
        if host not in self.hosts:
            await _refuse(send, websocket, 421, "egg web: this server is not at that address")
            return
        # each value as the bytes it stands for (a percent escape is a byte): compared as
        # bytes, so a token or key of any bytes neither fails to decode nor to compare
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), encoding="latin-1")
        if not websocket and scope["path"] == "/" and "token" in query:
            given = query["token"][-1].encode("latin-1")  # as the query's bytes came
            if not self._is(given, self.token):
                await _refuse(send, websocket, 401, "egg web: wrong token")
                return
            await _logged_in(send, *self._login())
            return
        if not self._allowed(scope, headers, query):
            await _refuse(
                send, websocket, 401, "egg web: the token is needed (open the URL egg web printed)"
            )
            return
        if websocket and headers.get(b"origin", b"").decode("latin-1").lower() != f"http://{host}":
            await _refuse(send, websocket, 403, "egg web: a WebSocket from another origin")
            return
        await self.app(scope, receive, _with_headers(send))


def _with_headers(send: Send) -> Send:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name, value) for name, value in HEADERS if name not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _refuse(send: Send, websocket: bool, status: int, text: str) -> None:
    """An HTTP answer of ``status``; for a WebSocket, the same at its handshake (the denial
    response extension), never an accepted connection."""
    kind = "websocket.http.response" if websocket else "http.response"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *HEADERS]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": f"{kind}.start", "status": status, "headers": headers})
    await send({"type": f"{kind}.body", "body": text.encode() + b"\n"})


async def _logged_in(send: Send, cookie: bytes, key: bytes) -> None:
    """The login's answer: its cookie, and a redirect to ``/`` whose fragment is its page key."""
    value = f"{COOKIE}={cookie.decode('ascii')}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", b"/#key=" + key),
        (b"set-cookie", value.encode("ascii")),
        *HEADERS,
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
