"""Read-only watchers whose terminal is another size than the session's: they get frames of the
emulated screen (:mod:`egg_core.session.mirror`) instead of the raw output, which is drawn for
the session's size. Part of the daemon's client half (:class:`egg_core.session.serving.
SessionServing` mixes this in); a watcher of the session's size, and every writable client, gets
the raw output.

A frame is drawn at most every FRAME_INTERVAL while output comes (less often when emulating
takes long: pyte holds the GIL, and the PTY must still be read), from a worker thread's
emulator fed what the ring got since the last frame (rebuilt from the last repaint, as
``egg status --screen`` renders it, when it fell too far behind or a feed ran out of time); a
watcher whose terminal is not reading is sent a whole frame once it has caught up. A watcher
switches between frames and raw output as the session's size or its own changes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from egg_core.session import protocol as p
from egg_core.session.mirror import Mirror

if TYPE_CHECKING:
    from egg_core.session.clients import Client
    from egg_core.session.ring import ReplayRing

FRAME_INTERVAL = 0.05  # seconds between two frames while output comes
RESYNC_BYTES = 1 << 20  # an emulator further behind than this is rebuilt from the last repaint
FRAME_HIGH_WATER = 1 << 20  # a watcher this far behind is sent a whole frame when it catches up


class SessionWatching:
    """Frames for read-only watchers of another size (the daemon sets the attributes)."""

    ring: ReplayRing
    clients: set[Client]
    rows: int
    cols: int
    finished: bool
    exit_code: int | None
    exit_reason: str | None
    tasks: set[asyncio.Task[None]]
    screen_max_bytes: int
    mirror: Mirror | None = None
    mirror_pending = False
    mirror_task: asyncio.Task[None] | None = None
    mirror_lock: asyncio.Lock | None = None

    def repaint(self, client: Client, history: int | None = None) -> bool:
        raise NotImplementedError  # SessionServing's

    def send_output(self, client: Client, payload: bytes) -> None:
        raise NotImplementedError  # SessionServing's

    def needs_frames(self, client: Client) -> bool:
        """A read-only watcher whose terminal is not the session's size."""
        return client.read_only and (client.rows, client.cols) != (self.rows, self.cols)

    def reconsider(self, clients: list[Client]) -> None:
        """After a size changed: each watcher gets frames, or the raw output, as its size now
        says (one that goes back to raw output is repainted from the ring first)."""
        for client in clients:
            if not client.attached:
                continue
            wanted = self.needs_frames(client)
            if wanted and not client.framed:
                client.framed, client.drawn = True, None
            elif client.framed and not wanted:
                client.framed, client.drawn = False, None
                self.repaint(client)
        self.frames_due()

    def frames_due(self) -> None:
        """Output came or a size changed: a frame for every framed watcher soon (one task)."""
        if not any(c.framed for c in self.clients):
            self.mirror = None
            return
        self.mirror_pending = True
        if self.mirror_task is None or self.mirror_task.done():
            self.mirror_task = asyncio.get_running_loop().create_task(self._frames())
            self.tasks.add(self.mirror_task)
            self.mirror_task.add_done_callback(self.tasks.discard)

    def first_frame_then_exit(self, client: Client) -> None:
        """A watcher attaching to a session that has ended: its frame, then the exit."""

        async def run() -> None:
            await self.draw_frames()
            code = self.exit_code if self.exit_code is not None else 1
            client.send(p.EXIT, p.pack_exit(code, self.exit_reason))

        task = asyncio.get_running_loop().create_task(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _frames(self) -> None:
        loop = asyncio.get_running_loop()
        while self.mirror_pending:
            self.mirror_pending = False
            began = loop.time()
            await self.draw_frames()
            # the emulator holds the GIL while it runs: at most a fifth of the time, so that a
            # flood of output is read at nearly full speed whoever watches
            await asyncio.sleep(max(FRAME_INTERVAL, 4 * (loop.time() - began)))

    async def draw_frames(self) -> None:
        """Bring the emulator up to the ring's end and send each framed watcher what changed."""
        if self.mirror_lock is None:
            self.mirror_lock = asyncio.Lock()
        async with self.mirror_lock:
            if not any(c.framed for c in self.clients):
                self.mirror = None
                return
            ring, size, mirror = self.ring, (self.rows, self.cols), self.mirror
            if (
                mirror is None
                or mirror.size != size
                or not mirror.complete
                or mirror.offset < ring.start
                or ring.total - mirror.offset > RESYNC_BYTES
            ):
                mirror = Mirror(*size)
                data = ring.since_last_repaint(
                    self.rows, max_bytes=self.screen_max_bytes, history=0
                )
            else:
                data = ring.read(mirror.offset)
            loop: Any = asyncio.get_running_loop()
            frame = await loop.run_in_executor(None, mirror.feed, data, ring.total)
            self.mirror = mirror
            if mirror.size != (self.rows, self.cols):
                self.mirror_pending = True  # resized meanwhile: the next frame is at the new size
                return
            for client in list(self.clients):
                if not (client.attached and client.framed) or client.transport.is_closing():
                    continue
                if client.buffered() > FRAME_HIGH_WATER:
                    client.drawn = None  # behind: a whole frame once it has caught up
                    self.mirror_pending = True
                    continue
                payload, client.drawn = frame.draw(client.rows, client.cols, client.drawn)
                if payload:
                    self.send_output(client, payload)
