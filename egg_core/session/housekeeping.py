"""Ended sessions: removed on request (``egg rm``) and pruned automatically.

A session directory holds what its daemon left: the meta, its log, the network log, an audit
log. Nobody removed them, so a day of use left hundreds. Now ``egg run`` prunes ended sessions
older than ``EGG_SESSIONS_MAX_AGE`` (default 7 days) or beyond the newest
``EGG_SESSIONS_KEEP`` (default 100). A running session is never removed. A captured
conversation (``chat.*``, see the history feature) outlives its session unless the user asks
(``egg rm --with-history``): what is kept is the conversation and the meta that names it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from egg_core import history
from egg_core.session.store import SessionRecord, list_sessions, update_meta

DEFAULT_KEEP = 100
DEFAULT_MAX_AGE = 7 * 24 * 3600.0
KEEP_ENV = "EGG_SESSIONS_KEEP"
MAX_AGE_ENV = "EGG_SESSIONS_MAX_AGE"
ENDED_STATES = ("exited", "failed", "crashed")
#: what a removal keeps unless told otherwise: the captured conversation and the meta naming it
HISTORY_FILES = (history.CHAT_FILE, history.META_FILE)


def remove(record: SessionRecord, *, with_history: bool = False) -> str:
    """Remove an ended session's directory (the caller has checked it is not running); with a
    captured conversation and without ``with_history``, keep that and the meta. Returns what
    was done, in a few words."""
    from egg_core.hostfs import remove_tree

    directory = record.paths.directory
    keep = set() if with_history else {n for n in HISTORY_FILES if (directory / n).exists()}
    if not keep:
        remove_tree(str(directory))
        return "removed"
    for entry in os.listdir(directory):
        if entry not in keep and entry != record.paths.meta.name:
            remove_tree(str(directory / entry))
    update_meta(record.paths, pruned=time.time())
    return "removed (its conversation is kept: egg rm --with-history removes it too)"


def prune(egg_home: Path, environ: Mapping[str, str]) -> list[str]:
    """Remove ended sessions beyond the limits (see the module docstring); the ids removed."""
    keep = _number(environ.get(KEEP_ENV), DEFAULT_KEEP)
    max_age = _duration(environ.get(MAX_AGE_ENV), DEFAULT_MAX_AGE)
    ended = [
        r
        for r in list_sessions(egg_home)
        if not r.alive and not r.meta.get("pruned") and r.meta.get("state") in ENDED_STATES
    ]
    ended.sort(key=_ended_at, reverse=True)
    now = time.time()
    removed = []
    for index, record in enumerate(ended):
        if index >= keep or now - _ended_at(record) > max_age:
            remove(record)
            removed.append(record.paths.id)
    return removed


def removable(records: Sequence[SessionRecord]) -> tuple[list[SessionRecord], list[str]]:
    """(the ended ones, a refusal line for each running one)."""
    ended, refused = [], []
    for record in records:
        # a daemon that recorded its end is only closing down: that session has ended
        if record.alive and record.meta.get("state") not in ENDED_STATES:
            refused.append(f"session {record.paths.id} is running (egg kill it first)")
        else:
            ended.append(record)
    return ended, refused


def _ended_at(record: SessionRecord) -> float:
    meta = record.meta
    for key in ("ended", "started"):
        value = meta.get(key)
        if isinstance(value, int | float):
            return float(value)
    try:
        return record.paths.directory.stat().st_mtime
    except OSError:
        return 0.0


def _number(text: str | None, default: int) -> int:
    try:
        return max(int(text), 0) if text else default
    except ValueError:
        return default


def _duration(text: str | None, default: float) -> float:
    """``7d``, ``12h``, ``30m`` or seconds (egg.yaml's duration grammar); the default for
    anything else."""
    from egg_core.units import parse_duration

    try:
        return parse_duration(text) if text else default
    except ValueError:
        return default
