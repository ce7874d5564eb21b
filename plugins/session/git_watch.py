"""The periodic git audit: while the agent works, a repository it creates (``git init``, a staged
submodule), or an agent code directory no mount could hold, is audited within
``GIT_WATCH_INTERVAL`` — the host's shell prompt runs ``git status`` at every prompt, long before
the session ends.

The audit itself is the run's host-side guards' (``live.guards``: one at a time, shared with the
host tools, which audit before they run, and with the session's end, which audits whatever any
plugin does). This plugin only looks often: a few ``stat`` calls a second.
"""

from __future__ import annotations

import time

from egg_core.api import RunningSession, SessionInfo, hookimpl

#: seconds between two looks for something the sandbox made that must be audited
GIT_WATCH_INTERVAL = 1.0

#: when each session's next look is due (time.monotonic), by session id
_due: dict[str, float] = {}


@hookimpl
def egg_session_started(session: SessionInfo, live: RunningSession) -> None:
    _due[session.id] = time.monotonic() + GIT_WATCH_INTERVAL


@hookimpl
def egg_session_tick(session: SessionInfo, live: RunningSession) -> None:
    now = time.monotonic()
    if now < _due.get(session.id, now):
        return
    _due[session.id] = now + GIT_WATCH_INTERVAL
    if live.guards.needs_audit():
        live.guards.audit()


@hookimpl
def egg_session_ended(session: SessionInfo, exit_code: int, live: RunningSession) -> None:
    _due.pop(session.id, None)
