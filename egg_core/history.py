"""Chat-history capture and restore: the data the history hooks exchange.

The agent-specific part (where an agent keeps its transcript, how to resume it) is implemented by
the agent's plugin through ``egg_history_capture`` / ``egg_history_restore``; this module holds
the types they share so a third-party agent can implement them without importing a built-in.
"""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen(kw_only=True)
class HistoryContext:
    """Where a session ran and where its captured history lives."""

    cwd: Path
    home: Path
    session_dir: Path
    started_after: float  # epoch seconds: only transcripts modified after this belong to us


@attrs.frozen(kw_only=True)
class CapturedHistory:
    """A transcript copied into the session dir (``chat.jsonl.gz`` + ``chat.meta``)."""

    path: Path
    agent_session_id: str | None = None


@attrs.frozen(kw_only=True)
class RestoredHistory:
    """A transcript put back for the agent, and the id its resume flag takes."""

    agent_session_id: str
