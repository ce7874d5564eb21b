"""What the session lifecycle hooks are told about a session."""

from __future__ import annotations

from pathlib import Path

import attrs

from egg_core.converters import to_tuple


@attrs.frozen(kw_only=True)
class SessionInfo:
    id: str
    directory: Path
    agent: str
    command: tuple[str, ...] = attrs.field(converter=to_tuple)
    cwd: Path
    platform: str
    pid: int | None = None
