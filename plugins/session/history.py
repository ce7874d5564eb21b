"""The conversation capture: while an agent's session runs, its transcript is copied into the
session directory every ``CAPTURE_INTERVAL`` (a ``stat`` when it did not change), and once more
when it ends, so ``egg history`` and ``--resume`` have it even if the host dies mid-session.

The copying (where the transcript is, reading it safely, its title) is
:class:`egg_core.api.session.Capturer`; this plugin says when. It runs in its tick thread, so a
100 MiB transcript never stalls the relay; the lock keeps the end's capture from overlapping a
tick's still running.
"""

from __future__ import annotations

import threading
import time

from egg_core.api import RunningSession, SessionInfo, hookimpl
from egg_core.api.session import Capturer

#: how often a running session looks at its transcript (seconds)
CAPTURE_INTERVAL = 5.0


class _SessionCapture:
    def __init__(self, live: RunningSession) -> None:
        assert live.history is not None
        self.capturer = Capturer(live.pm, live.profile, live.history, live.log)
        self.lock = threading.Lock()
        self.due = time.monotonic() + CAPTURE_INTERVAL
        self.recorded: str | None = None

    def look(self, live: RunningSession) -> None:
        with self.lock:
            meta = self.capturer.capture()
            found = meta.get("agent_session_id") if meta else None
            if found and found != self.recorded:
                self.recorded = found
                live.record(agent_session_id=found)


#: the sessions being captured, by session id
_captures: dict[str, _SessionCapture] = {}


@hookimpl
def egg_session_started(session: SessionInfo, live: RunningSession) -> None:
    if live.history is not None:
        _captures[session.id] = _SessionCapture(live)


@hookimpl
def egg_session_tick(session: SessionInfo, live: RunningSession) -> None:
    capture = _captures.get(session.id)
    if capture is None or time.monotonic() < capture.due:
        return
    capture.look(live)
    capture.due = time.monotonic() + CAPTURE_INTERVAL


@hookimpl
def egg_session_ended(session: SessionInfo, exit_code: int, live: RunningSession) -> None:
    capture = _captures.pop(session.id, None)
    if capture is not None:
        capture.look(live)
