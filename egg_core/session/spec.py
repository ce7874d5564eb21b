"""What ``egg run`` asks the session daemon to run (``spec.json``; never any secret).

The daemon inherits ``egg run``'s environment and re-resolves the plan from this spec, so what it
enforces is computed exactly as ``egg explain`` computes it, and no variable value is ever written
to disk.
"""

from __future__ import annotations

from typing import Any

import attrs

from egg_core.converters import to_tuple


@attrs.frozen(kw_only=True)
class RunSpec:
    cwd: str
    agent: str | None = None
    command: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    agent_args: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    config_path: str | None = None
    platform: str | None = None
    skip_permissions: bool = False
    #: the agent's conversation to resume (its own id), restored by egg run before the start
    resume_id: str | None = None
    #: the id egg chose for a new conversation (an agent with ``session_id_flag``)
    session_id: str | None = None
    audit: bool = False
    trace: bool = False
    rows: int = 24
    cols: int = 80
    idle_timeout: float = 0.0
    startup_watchdog: float = 15.0
    ring_bytes: int = 8 * 1024 * 1024
    #: seconds an ended session waits for its first client (``egg run`` attaches right after
    #: starting it; a command that ends at once must not take its output and exit code along)
    linger: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["command"] = list(self.command)
        data["agent_args"] = list(self.agent_args)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        known = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
