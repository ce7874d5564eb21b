"""Browser-open requests: ``BROWSER``, ``xdg-open`` and ``open`` inside the sandbox append the URL
to ``browser-requests`` in the session's shared directory (egg's shim, set up with the launch);
this plugin picks the lines up, keeps each in the session's ``browser.log`` and tells the attached
clients to open it (a device-code login, an OAuth page).

The sandbox owns that directory, so nothing there is trusted: no symlink is followed, only a
regular file is read (a FIFO would block), at most ``MAX_READ`` bytes a tick, one request a line
(a CR inside one is shown, not obeyed), and the notice goes through ``live.notify``, which
sanitizes (threat P: no escape sequence reaches a terminal this way, clipboard writes included).
"""

from __future__ import annotations

import json
import os
import stat
import time

from egg_core.api import RunningSession, SessionInfo, hookimpl

#: what the sandbox's shim appends to, in the session's shared directory
REQUESTS = "browser-requests"
#: the most read of it in one tick
MAX_READ = 65536

#: how far each session's requests have been read, by session id
_offsets: dict[str, int] = {}


@hookimpl
def egg_session_tick(session: SessionInfo, live: RunningSession) -> None:
    data = _read_new(live, _offsets.get(session.id, 0))
    if not data:
        return
    _offsets[session.id] = _offsets.get(session.id, 0) + len(data)
    for raw in data.decode("utf-8", "surrogateescape").split("\n"):
        url = raw.strip()
        if not url:
            continue
        with open(session.directory / "browser.log", "a") as out:
            out.write(json.dumps({"time": time.time(), "url": url}) + "\n")
        live.notify(f"open in your browser: {url}")


@hookimpl
def egg_session_ended(session: SessionInfo, exit_code: int, live: RunningSession) -> None:
    _offsets.pop(session.id, None)


def _read_new(live: RunningSession, offset: int) -> bytes:
    try:
        fd = os.open(live.shared_dir / REQUESTS, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, MAX_READ)
    except OSError:
        return b""
    finally:
        os.close(fd)
