"""What the session lifecycle hooks (``egg_session_started``, ``egg_session_tick``,
``egg_session_ended``) are told about a session: a plain record of it (:class:`SessionInfo`) and
what a hook may act on while it runs (:class:`RunningSession`), kept below the session package so
that the hook specifications (and a plugin) need nothing of the session machinery to name them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

from egg_core.converters import to_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from egg_core.history import HistoryContext
    from egg_core.profiles import AgentProfile


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


class HostGuards(Protocol):
    """The run's host-side guards (:class:`egg_core.hostrun.RunGuard`): the git audit and the
    agent code directories it watches. One audit runs at a time; each is safe to call from any
    thread."""

    def needs_audit(self) -> bool:
        """Whether the sandbox may have made something to audit since the last look: a few
        ``stat`` calls, cheap enough for every tick."""
        ...

    def audit(self) -> Any:
        """Audit now (never raises; what it found goes to the session's log and end record)."""
        ...


@attrs.frozen(kw_only=True, eq=False)
class RunningSession:
    """The daemon's side of one running session, for the session hooks
    (``egg_session_started``, ``egg_session_tick``, ``egg_session_ended``) to act on: what the
    built-in watchers (the conversation capture, the periodic git audit, browser-open requests)
    need, and nothing of the daemon's machinery. A plugin keeps its own state per session.

    Everything under :attr:`shared_dir` was written by the sandbox: hostile input. Read it
    without following symlinks, only regular files, bounded; show it through :meth:`notify`,
    which sanitizes (threat P)."""

    #: the plugin manager, to ask the other plugins (``live.pm.hook.egg_history_capture(...)``)
    pm: Any
    #: the agent the session runs (the ``shell`` profile for ``egg run -- CMD``)
    profile: AgentProfile
    #: where and how this session's conversation is captured; None when egg keeps no history
    #: of it (a plain command, an agent egg does not know, or one whose plugin declines)
    history: HistoryContext | None
    #: the directory the sandbox writes for the host (mounted inside at the platform's
    #: ``shared_path``): browser-open requests
    shared_dir: Path
    #: the run's host-side guards
    guards: HostGuards
    #: shown to the session's attached clients as an egg notice, through
    #: :func:`egg_core.sanitize.visible`; callable from any thread
    _notify: Callable[[str], None] = attrs.field(alias="notify")
    #: one line in the session's log (``egg.log``); callable from any thread
    _log: Callable[[str], None] = attrs.field(alias="log")
    #: merged into the session's record (``egg.meta``); callable from any thread
    _record: Callable[..., None] = attrs.field(alias="record")

    def notify(self, text: str) -> None:
        """Tell the attached clients ``text`` (sanitized: it may quote the sandbox)."""
        self._notify(text)

    def log(self, line: str) -> None:
        """One line in the session's log (sanitized there)."""
        self._log(line)

    def record(self, **fields: Any) -> None:
        """Keep ``fields`` in the session's record (what ``egg ls --json`` and ``egg history``
        read): JSON values, under keys the plugin owns."""
        self._record(**fields)
