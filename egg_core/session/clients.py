"""One authenticated connection to a session daemon, as the daemon sees it: what it is attached
as (read-only or not, its size, its scrollback), how far behind it is, and what of a repaint's
string sequence or an emulated screen it was sent. Sending is one write per frame. Used by the
serving half (:mod:`egg_core.session.serving`) and the watchers of another size
(:mod:`egg_core.session.watching`) alike, so it is neither's.
"""

from __future__ import annotations

import asyncio

from egg_core.session import protocol as p
from egg_core.session.mirror import Drawn
from egg_core.session.strings import Skip


class Client:
    """One authenticated connection."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.transport = writer.transport
        self.attached = False
        self.read_only = False
        self.rows = 24
        self.cols = 80
        self.behind_since: float | None = None
        #: when it last typed or resized (monotonic): the size goes to the most recent one
        self.active = 0.0
        #: the scrollback it asked for (None: the default)
        self.history: int | None = None
        #: the rest of a string sequence its repaint dropped unfinished, to take out of the live
        #: output (None: nothing to take out)
        self.skip: Skip | None = None
        #: a read-only watcher of another size: sent frames of the emulated screen, not the
        #: output (egg_core.session.watching), and what its terminal was last sent of them
        self.framed = False
        self.drawn: Drawn | None = None

    def send_live(self, data: bytes) -> None:
        """Live output, less the rest of a string sequence its repaint dropped."""
        if self.skip is not None:
            data = self.skip.feed(data)
            if self.skip.done:
                self.skip = None
            if not data:
                return
        self.send(p.OUTPUT, data)

    def send(self, frame_type: int, payload: bytes = b"") -> None:
        if self.transport.is_closing():
            return
        # one write (header + payload): one send() and one wake-up of the client, not two
        self.transport.write(p.encode_header(frame_type, len(payload)) + payload)

    def buffered(self) -> int:
        return int(self.transport.get_write_buffer_size())
