"""The sessions as ``egg ls --json`` lists them, for every front that shows them (the CLI,
``egg web``): one row per session, the same keys everywhere, and what a running daemon says about
itself (clients, idle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from egg_core.errors import EggError
from egg_core.session.store import SessionRecord, list_sessions


def records(egg_home: Path, *, ended: bool = False) -> list[SessionRecord]:
    """The sessions ``egg ls`` shows: the running ones (and the ended ones with ``ended``),
    never the pruned."""
    return [r for r in list_sessions(egg_home) if (ended or r.alive) and not r.meta.get("pruned")]


def row(record: SessionRecord) -> dict[str, Any]:
    """One session as ``egg ls --json`` gives it."""
    from egg_core.history import has_capture

    resumable = has_capture(record.paths.directory)
    return {"id": record.paths.id, "state": record.state, **record.meta, "resumable": resumable}


def live_status(record: SessionRecord, timeout: float = 1.0) -> dict[str, Any]:
    """What a running daemon says about itself (clients, idle); {} if it does not answer."""
    from egg_core.session.client import Connection

    try:
        conn = Connection(record.paths, timeout=timeout)
    except EggError:
        return {}
    try:
        return conn.request_status()
    except (EggError, OSError, ValueError):
        return {}
    finally:
        conn.close()
