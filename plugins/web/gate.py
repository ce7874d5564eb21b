"""Who may ask ``egg web`` anything, checked before any route runs (an ASGI middleware).

- The ``Host`` header must be one of this server's own (:attr:`.app.Settings.hosts`): a page of
  another site whose name was pointed at this address (DNS rebinding) is refused.
- The token: ``GET /?token=T`` sets it as an HttpOnly, SameSite=Strict cookie and redirects to
  ``/`` (the token leaves the address bar); otherwise the cookie or ``Authorization: Bearer T``.
  Without it every page, the API, the scripts and the WebSocket are answered 401 — a WebSocket
  at its handshake, never accepted.
- A WebSocket's ``Origin`` must be this page's own, compared exactly (``null`` and
  ``http://127.0.0.1:PORT.evil.example`` are refused), before any output.
- Every response carries the security headers (:data:`HEADERS`): a Content-Security-Policy with
  scripts from this origin alone (xterm.js injects style elements, so styles may be inline), no
  sniffing, no framing, no referrer (a token in an address is never sent on), no caching.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
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


class Gate:
    """The checks above, around ``app``."""

    def __init__(self, app: App, token: str, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token.encode()
        # the cookie holds a value derived from the token, not the token: any token a
        # --token-file holds fits a cookie's syntax that way, and the cookie is no bearer token
        self.cookie = hmac.new(self.token, b"egg web cookie", "sha256").hexdigest().encode()
        self.hosts = hosts

    def _given(self, headers: dict[bytes, bytes]) -> bytes | None:
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer":
            return value.strip()
        return None

    def _cookie(self, headers: dict[bytes, bytes]) -> bytes | None:
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        except CookieError:  # a malformed cookie header is no token
            return None
        morsel = cookies.get(COOKIE)
        return morsel.value.encode("latin-1") if morsel is not None else None

    def _valid(self, given: bytes | None) -> bool:
        return given is not None and hmac.compare_digest(given, self.token)

    def _allowed(self, headers: dict[bytes, bytes]) -> bool:
        cookie = self._cookie(headers)
        return self._valid(self._given(headers)) or (
            cookie is not None and hmac.compare_digest(cookie, self.cookie)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1")
        websocket = scope["type"] == "websocket"
        if host not in self.hosts:
            await _refuse(send, websocket, 421, "egg web: this server is not at that address")
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if not websocket and scope["path"] == "/" and "token" in query:
            if not self._valid(query["token"][-1].encode("latin-1")):
                await _refuse(send, websocket, 401, "egg web: wrong token")
                return
            await _login(send, self.cookie)
            return
        if not self._allowed(headers):
            await _refuse(
                send, websocket, 401, "egg web: the token is needed (open the URL egg web printed)"
            )
            return
        if websocket and headers.get(b"origin", b"").decode("latin-1") != f"http://{host}":
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


async def _login(send: Send, value: bytes) -> None:
    cookie = f"{COOKIE}={value.decode('ascii')}; HttpOnly; SameSite=Strict; Path=/"
    headers = [(b"location", b"/"), (b"set-cookie", cookie.encode("latin-1")), *HEADERS]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
