"""A session daemon's clients: authentication, ATTACH and the repaint, input to the program,
sizes, status, and the end (every client gets its final screen and exit code). The PTY and the
session's life are :mod:`egg_core.session.daemon`, whose ``Daemon`` mixes this in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import signal
import time
from typing import Any

from egg_core.session import protocol as p
from egg_core.session.clients import Client
from egg_core.session.ring import ReplayRing
from egg_core.session.store import (
    SessionPaths,
    log,
)
from egg_core.session.watching import SessionWatching

HIGH_WATER = 4 * 1024 * 1024  # a client this far behind stops getting live output
LOW_WATER = 256 * 1024  # ... and is repainted once it has drained to here
DROP_AFTER = 30.0  # seconds a client may stay behind before it is dropped
DRAIN_STALL = 5.0  # at the end, seconds a client may read nothing before it is given up on
AUTH_TIMEOUT = 5.0
KILL_GRACE = 5.0
TERM_DRAIN = 2.0  # after SIGTERM, seconds an ended session keeps draining its clients
MAX_PENDING_INPUT = 1 << 20
# A Linux PTY read returns at most 4 KiB; asking for 64 KiB allocates (and shrinks) that much.
READ_SIZE = 1 << 14
BATCH_SIZE = 1 << 18
OUTPUT_CHUNK = 1 << 19
SCREEN_MAX_BYTES = 1 << 20  # egg status --screen renders at most this much with pyte
SCREEN_BUDGET = 2.0  # ... for at most this many seconds


class SessionServing(SessionWatching):
    """The client half of :class:`egg_core.session.daemon.Daemon` (which sets these)."""

    screen_max_bytes = SCREEN_MAX_BYTES

    paths: SessionPaths
    token: bytes
    ring: ReplayRing
    clients: set[Client]
    rows: int
    cols: int
    started: float
    last_activity: float
    exit_code: int | None
    exit_reason: str | None
    finished: bool
    linger_over: asyncio.Event
    terminating: bool
    unreaped: bool
    pending_input: bytearray
    writer_armed: bool
    audit: Any
    proc: Any
    child_pid: int | None
    info: Any
    render_lock: asyncio.Lock
    tasks: set[asyncio.Task[None]]

    def resize(self, rows: int, cols: int) -> None:
        raise NotImplementedError  # the daemon's: it owns the PTY

    def nudge_repaint(self) -> None:
        raise NotImplementedError  # the daemon's

    def kill_hard(self) -> None:
        raise NotImplementedError  # the daemon's

    def repaint(self, client: Client, history: int | None = None) -> bool:
        """Send the client the current screen (and ``history`` lines of scrollback before it);
        False when the ring could not reproduce it exactly (then the program should repaint
        itself)."""
        from egg_core.session.ring import DEFAULT_HISTORY

        if history is not None:
            client.history = history
        replay = self.ring.repaint(
            client.rows, client.history if client.history is not None else DEFAULT_HISTORY
        )
        client.skip = replay.skip
        self.send_output(client, replay.payload)
        return replay.cut.exact

    def send_output(self, client: Client, payload: bytes) -> None:
        for start in range(0, len(payload), OUTPUT_CHUNK):
            client.send(p.OUTPUT, payload[start : start + OUTPUT_CHUNK])

    def status(self) -> dict[str, Any]:
        now = time.time()
        return {
            "id": self.paths.id,
            "pid": self.child_pid,
            "daemon_pid": os.getpid(),
            "agent": self.info.agent if self.info else None,
            "command": list(self.info.command) if self.info else [],
            "platform": self.info.platform if self.info else None,
            "uptime": round(now - self.started, 3),
            "idle": round(now - self.last_activity, 3),
            "clients": sum(1 for c in self.clients if c.attached),
            "bytes": self.ring.total,
            "rows": self.rows,
            "cols": self.cols,
            "exit_code": self.exit_code,
        }

    async def reply_with_screen(self, client: Client, data: dict[str, Any]) -> None:
        """``egg status --screen``: rendered in a worker thread (never on the event loop, which
        keeps serving every other client), one render at a time, within SCREEN_BUDGET seconds."""
        from egg_core.session.screen import render

        ring_data = self.ring.since_last_repaint(self.rows, max_bytes=SCREEN_MAX_BYTES)
        rows, cols = self.rows, self.cols
        async with self.render_lock:
            screen = await asyncio.get_running_loop().run_in_executor(
                None, render, ring_data, rows, cols, SCREEN_BUDGET
            )
        data["screen"] = screen.text()
        if not screen.complete:
            data["screen_note"] = (
                f"rendering stopped after {SCREEN_BUDGET:.0f} s: the output is slow to emulate "
                "(the screen shown is from partway through)"
            )
        client.send(p.STATUS_REPLY, p.pack_json(data))

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = p.Decoder(p.CLIENT_TYPES, p.MAX_CLIENT_FRAME)
        client: Client | None = None
        try:
            # Authenticate first; until then the peer receives nothing at all.
            frames: list[p.Frame] = []
            deadline = time.monotonic() + AUTH_TIMEOUT
            while not frames:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                data = await asyncio.wait_for(reader.read(4096), remaining)
                if not data:
                    return
                frames = decoder.feed(data)
            first, rest = frames[0], frames[1:]
            if first.type != p.AUTH or not hmac.compare_digest(first.payload, self.token):
                return
            client = Client(writer)
            self.clients.add(client)
            for frame in rest:
                if not self.on_frame(client, frame):
                    return
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                for frame in decoder.feed(data):
                    if not self.on_frame(client, frame):
                        return
        except (TimeoutError, p.ProtocolError, ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if client is not None:
                self.clients.discard(client)
                if client.attached and not client.read_only:
                    self.size_to_remaining()
            writer.close()

    async def drain_clients(self) -> None:
        """Wait until every client has read what it was sent (the final screen and the exit
        code), for as long as each keeps reading: a slow terminal after a flood of output gets
        its end, not "lost the connection". A client that reads nothing for DRAIN_STALL seconds
        is given up on; after SIGTERM, every client is given up on TERM_DRAIN seconds in."""
        last: dict[Client, tuple[int, float]] = {}
        began = time.monotonic()
        while True:
            now = time.monotonic()
            waiting = [c for c in self.clients if not c.transport.is_closing() and c.buffered()]
            if not waiting:
                return
            if self.terminating and now - began > TERM_DRAIN:
                for client in waiting:
                    client.transport.abort()
                return
            for client in waiting:
                size = client.buffered()
                before, since = last.get(client, (-1, now))
                if size != before:
                    last[client] = (size, now)
                elif now - since > DRAIN_STALL:
                    client.transport.abort()
            await asyncio.sleep(0.02)

    def size_to_remaining(self) -> None:
        """A writable client left: the program takes the size of the most recently active
        writable client still attached (read-only clients never size it), as tmux does."""
        writable = [c for c in self.clients if c.attached and not c.read_only]
        if writable:
            latest = max(writable, key=lambda c: c.active)
            self.resize(latest.rows, latest.cols)

    def on_frame(self, client: Client, frame: p.Frame) -> bool:
        """Handle one frame; False closes the connection."""
        kind = frame.type
        if kind == p.AUTH:
            raise p.ProtocolError("AUTH twice")
        if kind == p.ATTACH:
            if client.attached:
                raise p.ProtocolError("ATTACH twice")
            request = p.unpack_attach_request(frame.payload)
            client.read_only, client.rows, client.cols = (
                request.read_only,
                request.rows,
                request.cols,
            )
            client.attached = True
            client.active = time.monotonic()
            self.linger_over.set()
            if not client.read_only:
                self.resize(client.rows, client.cols)
            if request.from_start and self.ring.start == 0:
                # egg run's own client: everything from the first byte, as if it had been there
                exact = True
                self.send_output(client, self.ring.read(0))
            elif self.needs_frames(client):
                # a watcher of another size: the emulated screen, drawn at the session's size
                client.framed = True
                exact = self.ring.cut(self.rows).exact
                if self.finished:
                    self.first_frame_then_exit(client)
                else:
                    self.frames_due()
            else:
                exact = self.repaint(client, request.history)
            if self.exit_code is None and not exact:
                # The ring cannot reproduce the screen exactly (a program that redraws by moving
                # the cursor up, like Ink-based agents): have the program repaint itself.
                self.nudge_repaint()
            if self.finished and not client.framed:
                # (before that, finish() sends it: once the settings are restored and the end
                # is recorded, so a user never has the prompt back before the session is over)
                code = self.exit_code if self.exit_code is not None else 1
                client.send(p.EXIT, p.pack_exit(code, self.exit_reason))
            return True
        if kind == p.STATUS:
            data = self.status()
            if frame.payload == p.STATUS_WITH_SCREEN:
                task = asyncio.get_running_loop().create_task(self.reply_with_screen(client, data))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                return True
            client.send(p.STATUS_REPLY, p.pack_json(data))
            return True
        if kind == p.KILL:
            signum = p.unpack_kill(frame.payload)
            if client.attached and client.read_only:
                return True
            if not self.unreaped:
                return True  # it has ended: its pid may be another process's by now
            self.exit_reason = self.exit_reason or "killed by egg kill"
            with contextlib.suppress(OSError):
                os.kill(self.child_pid or self.proc.pid, signum)
            if signum == signal.SIGTERM:
                asyncio.get_running_loop().call_later(KILL_GRACE, self.kill_hard)
            return True
        if not client.attached:
            raise p.ProtocolError("INPUT/RESIZE/DETACH before ATTACH")
        if kind == p.DETACH:
            return False
        if client.read_only:
            if kind == p.RESIZE:  # its own terminal's size: the session's stays
                client.rows, client.cols = p.unpack_size(frame.payload)
                client.drawn = None  # what its terminal shows now is its own (tmux reflows)
                self.reconsider([client])
            return True
        if kind == p.INPUT:
            client.active = time.monotonic()
            self.last_activity = time.time()
            if self.audit is not None:
                self.audit.record(1, frame.payload)
            self.write_input(frame.payload)
            return True
        if kind == p.RESIZE:
            client.rows, client.cols = p.unpack_size(frame.payload)
            client.active = time.monotonic()
            self.resize(client.rows, client.cols)
            return True
        raise p.ProtocolError(f"unexpected frame {kind}")

    def write_input(self, data: bytes) -> None:
        """Queue input for the program; what the PTY does not take now is written when it can
        (a program that is not reading must not freeze the daemon). Input beyond
        MAX_PENDING_INPUT waiting for the program is dropped."""
        room = MAX_PENDING_INPUT - len(self.pending_input)
        if len(data) > room:
            log(self.paths, f"input dropped: the program is not reading ({len(data) - room} bytes)")
            data = data[: max(room, 0)]
        self.pending_input += data
        self.flush_input()

    def flush_input(self) -> None:
        loop = asyncio.get_running_loop()
        while self.pending_input:
            try:
                written = os.write(self.proc.fd, self.pending_input[:65536])
            except BlockingIOError:
                if not self.writer_armed:
                    self.writer_armed = True
                    loop.add_writer(self.proc.fd, self.flush_input)
                return
            except OSError:
                self.pending_input.clear()
                break
            del self.pending_input[:written]
        if self.writer_armed:
            self.writer_armed = False
            loop.remove_writer(self.proc.fd)
