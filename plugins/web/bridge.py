"""A browser's WebSocket to one session: a client of the session's daemon like ``egg attach``,
speaking the same protocol (AUTH with the session's token, ATTACH, then OUTPUT and EXIT one way,
INPUT and RESIZE the other), with the daemon's own repaint and read-only rules.

To the browser: the program's output as binary messages (the terminal interprets it, as the
user's own terminal does for ``egg attach``); the end as a text message ``{"exit": N,
"reason": …}``, notices as ``{"notice": …}``, both through :func:`visible`. From the browser:
binary messages are keys (dropped, never sent, on a read-only server), text messages
``{"resize": [rows, cols]}``. Anything else, or a malformed frame from either side, ends the
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from egg_core.api.client import SessionPaths, protocol, read_token, visible

#: the most of one key message passed on (the daemon's frame limit, less its header)
MAX_INPUT = protocol.MAX_CLIENT_FRAME - 16


def size_of(rows: Any, cols: Any) -> tuple[int, int] | None:
    """(rows, cols) when both are whole numbers the protocol takes; None otherwise."""
    try:
        size = int(rows), int(cols)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON 1e999
        return None
    if all(1 <= n <= protocol.MAX_DIMENSION for n in size):
        return size
    return None


async def relay(
    websocket: Any, paths: SessionPaths, *, read_only: bool, size: tuple[int, int]
) -> None:
    """Carry one browser client until either side ends."""
    try:
        token = read_token(paths)
        reader, writer = await asyncio.open_unix_connection(str(paths.sock))
    except OSError:
        await websocket.send_text(json.dumps({"closed": "the session is not running"}))
        await websocket.close()
        return
    writer.write(protocol.encode(protocol.AUTH, token))
    writer.write(protocol.encode(protocol.ATTACH, protocol.pack_attach(read_only, *size)))
    await writer.drain()
    to_browser = asyncio.ensure_future(_from_daemon(reader, websocket))
    to_daemon = asyncio.ensure_future(_from_browser(websocket, writer, read_only))
    try:
        await asyncio.wait({to_browser, to_daemon}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (to_browser, to_daemon):
            task.cancel()
        await asyncio.gather(to_browser, to_daemon, return_exceptions=True)
        with contextlib.suppress(OSError, ConnectionError):
            writer.write(protocol.encode(protocol.DETACH))
            writer.close()
        with contextlib.suppress(Exception):
            await websocket.close()


async def _from_daemon(reader: asyncio.StreamReader, websocket: Any) -> None:
    decoder = protocol.Decoder(protocol.SERVER_TYPES, protocol.MAX_SERVER_FRAME)
    while True:
        data = await reader.read(1 << 16)
        if not data:
            await websocket.send_text(json.dumps({"closed": "the session closed the connection"}))
            return
        try:
            frames = decoder.feed(data)
        except protocol.ProtocolError:
            return
        for frame in frames:
            if frame.type == protocol.OUTPUT:
                await websocket.send_bytes(frame.payload)
            elif frame.type == protocol.EXIT:
                code, reason = protocol.unpack_exit(frame.payload)
                shown = visible(reason) if reason else None
                await websocket.send_text(json.dumps({"exit": code, "reason": shown}))
                return
            elif frame.type in (protocol.NOTICE, protocol.ERROR):
                text = visible(frame.payload.decode("utf-8", "replace"))
                key = "notice" if frame.type == protocol.NOTICE else "error"
                await websocket.send_text(json.dumps({key: text}))


async def _from_browser(websocket: Any, writer: asyncio.StreamWriter, read_only: bool) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        keys = message.get("bytes")
        if keys is not None:
            if not read_only:
                for start in range(0, len(keys), MAX_INPUT):
                    writer.write(protocol.encode(protocol.INPUT, keys[start : start + MAX_INPUT]))
                await writer.drain()
            continue
        try:
            request = json.loads(message.get("text") or "")
        except ValueError:
            return
        size = size_of(*request["resize"]) if _is_resize(request) else None
        if size is None:
            return
        writer.write(protocol.encode(protocol.RESIZE, protocol.pack_size(*size)))
        await writer.drain()


def _is_resize(request: Any) -> bool:
    return (
        isinstance(request, dict)
        and isinstance(request.get("resize"), list)
        and len(request["resize"]) == 2
    )
