"""What the session lifecycle hooks (``egg_session_started``, ``egg_session_ended``) are told about
a session: a plain record the session package fills in, kept below it so that the hook
specifications (and a plugin) need nothing of the session machinery to name it."""

from __future__ import annotations

from pathlib import Path

import attrs

from egg_core.converters import to_tuple


@attrs.frozen(kw_only=True)
class SessionInfo:
    """One session: its id and directory, the agent and command it runs, where, on which
    platform, and its command's pid once it has one."""

    id: str
    directory: Path
    agent: str
    command: tuple[str, ...] = attrs.field(converter=to_tuple)
    cwd: Path
    platform: str
    pid: int | None = None
