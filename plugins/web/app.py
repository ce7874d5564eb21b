"""The ASGI app of ``egg web`` (Starlette): the session list (``/`` and ``/api/sessions``), a
session's terminal page (``/s/ID``) and its WebSocket (``/ws/ID``), and the package's scripts
(``/static/…``: a fixed set of files, never a path from the request), all behind :mod:`.gate`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs

from egg_core.api.client import live_status, session_by_id, session_records, session_row, visible

from . import bridge, pages
from .gate import Gate

STATIC = Path(__file__).with_name("static")
#: what /static/ serves: these files and no other
FILES = {
    "egg.css": "text/css",
    "list.js": "text/javascript",
    "term.js": "text/javascript",
    "key.js": "text/javascript",
    "vendor/xterm.js": "text/javascript",
    "vendor/xterm.css": "text/css",
    "vendor/addon-fit.js": "text/javascript",
}


@attrs.frozen
class Settings:
    token: str = attrs.field(repr=False)
    egg_home: Path
    #: browsers may type into sessions and size them (``--allow-input``)
    allow_input: bool
    #: the Host headers this server answers (see :mod:`.gate`)
    hosts: frozenset[str]


def sessions(egg_home: Path) -> list[dict[str, Any]]:
    """The running sessions as ``egg ls --json`` lists them, with each daemon's clients and
    idle seconds."""
    rows = []
    for record in session_records(egg_home):
        live = live_status(record)
        row = {**session_row(record), "clients": live.get("clients"), "idle": live.get("idle")}
        rows.append({key: _shown(value) for key, value in row.items()})
    return rows


def _shown(value: Any) -> Any:
    """A sandbox's text as the page may show it (:func:`visible`: no control, no bidi override
    that would make one session look like another); the rest as it is."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def build_app(settings: Settings) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, Response
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocket

    def _session(ident: str) -> Any:
        """The session whose id is ``ident`` exactly (never a name or a prefix: a sandbox
        names its session, and a prefix is a search through the sessions' directories)."""
        return session_by_id(settings.egg_home, ident)

    async def index(request: Request) -> Response:
        return HTMLResponse(pages.session_list())

    async def api_sessions(request: Request) -> Response:
        rows = await asyncio.to_thread(sessions, settings.egg_home)
        # ASCII, as egg ls --json: a sandbox's text reaches no client as a raw control
        return Response(json.dumps(rows, ensure_ascii=True), media_type="application/json")

    async def terminal(request: Request) -> Response:
        paths = _session(request.path_params["ident"])
        if paths is None:
            return PlainTextResponse("egg web: no such session\n", status_code=404)
        return HTMLResponse(pages.terminal(paths.id, settings.allow_input))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in FILES:
            return PlainTextResponse("egg web: not found\n", status_code=404)
        return Response((STATIC / name).read_bytes(), media_type=FILES[name])

    async def attach(websocket: WebSocket) -> None:
        ident = websocket.path_params["ident"]
        paths = _session(ident)
        size = bridge.size_of(
            websocket.query_params.get("rows"), websocket.query_params.get("cols")
        )
        if paths is None or size is None:
            await websocket.close(code=1008)
            return
        await websocket.accept()
        await bridge.relay(websocket, paths, read_only=not settings.allow_input, size=size)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/sessions", api_sessions),
            Route("/s/{ident}", terminal),
            Route("/static/{name:path}", static),
            WebSocketRoute("/ws/{ident}", attach),
        ]
    )
    return Gate(app, settings.token, settings.hosts)
