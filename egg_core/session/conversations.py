"""Captured conversations: the session daemon's capture, ``egg history``'s list, and ``--resume``.

:mod:`egg_core.history` reads and writes the files safely; the agent plugins say where they are
(``egg_history_*`` hooks). This module ties them to sessions: which session holds which
conversation (``chat.meta`` beside ``chat.jsonl.gz`` in the session directory), which is the
newest of an agent in a directory, and what ``--resume`` must refuse. A conversation resumed is
one conversation however many sessions ran it (:class:`ConversationRuns`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from egg_core import history
from egg_core.errors import EggError, UsageError
from egg_core.history import HistoryContext, HistoryError, Transcript, Turn
from egg_core.profiles import AgentProfile
from egg_core.transcripts import TranscriptReader


def declines(profile: AgentProfile) -> str | None:
    """Why egg keeps no history for this agent (its plugin says so), or None."""
    if profile.history_declined:
        return profile.history_declined
    if not profile.resume_flag:
        return f"{profile.name} has no way to resume a conversation that egg knows of"
    return None


class Capturer:
    """A session's capture: asks the agent's plugin where this session's transcript is, and
    copies it into the session directory when it changed. The agent's own id, once learnt (a
    Codex rollout found by its directory), is kept for the next captures."""

    def __init__(
        self, pm: Any, profile: AgentProfile, ctx: HistoryContext, log: Callable[[str], None]
    ) -> None:
        self.pm = pm
        self.profile = profile
        self.ctx = ctx
        self.log = log
        self.agent_session_id = ctx.agent_session_id
        self._said: set[str] = set()

    def capture(self) -> dict[str, Any] | None:
        """One look; the capture's meta when there is one. Never raises (a capture that cannot
        happen is one line in the session log, said once)."""
        try:
            ctx = attrs.evolve(self.ctx, agent_session_id=self.agent_session_id)
            transcript = self.pm.hook.egg_history_capture(agent=self.profile, ctx=ctx)
            if transcript is None:
                return None
            self.agent_session_id = transcript.agent_session_id
            meta = history.capture(transcript, self.ctx.session_dir)
        except HistoryError as exc:
            self._say(f"conversation not captured: {exc}")
            return None
        except Exception as exc:  # a plugin's bug must not end the session
            self._say(f"conversation capture failed: {type(exc).__name__}: {exc}")
            return None
        if "head" in meta:  # copied now: give it its title and agent
            head = meta["head"].encode("utf-8", "replace")
            title = meta.get("title") or title_of(self.pm, self.profile, head)
            meta.update(agent=self.profile.name, title=title)
            history.write_meta(self.ctx.session_dir, meta)
        return meta

    def _say(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            self.log(line)


def turns(pm: Any, profile: AgentProfile, transcript: TranscriptReader) -> Iterator[Turn]:
    """The agent plugin's reading of a transcript, one turn at a time as the plugin reads it
    (``egg_history_turns``; a plugin with only ``egg_history_render`` gets the transcript
    whole); nothing when no plugin reads this agent's. A plugin that fails is one line."""
    try:
        found = pm.hook.egg_history_turns(agent=profile, transcript=transcript)
        if found is None:
            # the plugins that stream declined already; read it whole only for one that cannot
            streaming = [impl.plugin for impl in pm.hook.egg_history_turns.get_hookimpls()]
            whole = pm.subset_hook_caller("egg_history_render", remove_plugins=streaming)
            if whole.get_hookimpls():
                found = whole(agent=profile, data=transcript.read())
        yield from found or ()
    except EggError:
        raise  # the capture itself could not be read: said as it is
    except Exception as exc:
        raise EggError(f"{profile.name}'s plugin could not read the transcript: {exc}") from exc


def render(pm: Any, profile: AgentProfile, data: bytes) -> list[Turn]:
    """The agent plugin's reading of a transcript in memory; [] when no plugin reads it."""
    return list(turns(pm, profile, TranscriptReader.of_bytes(data)))


def title_of(pm: Any, profile: AgentProfile, head: bytes) -> str | None:
    try:
        return history.title_of(render(pm, profile, head))
    except EggError:
        return None


@attrs.frozen
class Conversation:
    """One session's capture of a conversation: what ``egg history show SESSION`` reads and
    ``egg run AGENT --resume SESSION`` puts back."""

    session: str
    session_dir: Path
    agent: str
    agent_session_id: str
    directory: str
    started: float | None
    ended: float | None
    size: int
    title: str | None
    transcript: Transcript
    #: when egg last copied the transcript, changed (egg's clock, not the sandbox's)
    captured: float | None = None

    @property
    def last_used(self) -> float:
        """When this run last used the conversation: its end, or while it runs the last time
        its transcript changed (epoch seconds; egg's own times, never the transcript's)."""
        return float(_stamp(self.ended) or _stamp(self.captured) or _stamp(self.started) or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "agent": self.agent,
            "agent_session_id": self.agent_session_id,
            "directory": self.directory,
            "started": self.started,
            "ended": self.ended,
            "size": self.size,
            "title": self.title,
        }


def _stamp(value: object) -> float | None:
    """A time egg recorded (``egg.meta``, ``chat.meta``), when it is one; else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@attrs.frozen
class ConversationRuns:
    """One conversation as ``egg history`` lists it (one row): every session that ran it, the
    first one and each ``--resume``, newest first. The agent goes on writing the same transcript
    when it resumes, so the newest run's capture holds the whole conversation: it is the one the
    row names (``session``), ``show`` prints and ``--resume`` puts back."""

    runs: tuple[Conversation, ...]

    @property
    def latest(self) -> Conversation:
        return self.runs[0]

    @property
    def started(self) -> float | None:
        """When the conversation began: its first run's start."""
        stamps = [s for s in (_stamp(r.started) for r in self.runs) if s is not None]
        return min(stamps) if stamps else None

    @property
    def last_used(self) -> float:
        return max(r.last_used for r in self.runs)

    @property
    def title(self) -> str | None:
        """Its first user message: each run's capture reads it from the start of the same
        transcript, so the newest run that has one says it (titled by the newest egg)."""
        return next((r.title for r in self.runs if r.title), None)

    def to_json(self) -> dict[str, Any]:
        """The keys of one run's row (``session``, ``size``, ``ended``: the newest run's;
        ``started``: the first run's; ``title``: the conversation's), and ``runs`` (how many
        sessions ran it), ``last_used`` and ``sessions`` (their ids, newest first)."""
        return {
            **self.latest.to_json(),
            "started": self.started,
            "title": self.title,
            "runs": len(self.runs),
            "last_used": self.last_used,
            "sessions": [r.session for r in self.runs],
        }


def conversation_of(record: Any) -> Conversation | None:
    """The conversation captured in a session's directory, if any."""
    meta = history.read_meta(record.paths.directory)
    if meta is None:
        return None
    try:
        transcript = Transcript(
            agent_session_id=str(meta["agent_session_id"]),
            root=Path(str(meta["root"])),
            file=str(meta["file"]),
        )
    except (KeyError, ValueError):
        return None
    title = meta.get("title")
    return Conversation(
        session=record.paths.id,
        session_dir=record.paths.directory,
        agent=str(meta.get("agent") or record.meta.get("agent") or "?"),
        agent_session_id=transcript.agent_session_id,
        directory=str(record.meta.get("cwd") or ""),
        started=record.meta.get("started"),
        ended=record.meta.get("ended"),
        size=int(meta.get("size") or 0),
        title=title if isinstance(title, str) else None,
        transcript=transcript,
        captured=_stamp(meta.get("captured")),
    )


def captures(egg_home: Path, directory: str | None = None) -> list[Conversation]:
    """Every session's captured conversation (in ``directory`` only, when given), newest
    first: one entry per run."""
    from egg_core.session.store import list_sessions

    found = []
    for record in list_sessions(egg_home):
        conversation = conversation_of(record)
        if conversation is None or (directory is not None and conversation.directory != directory):
            continue
        found.append(conversation)
    found.sort(key=lambda c: (_stamp(c.started) or 0, c.session), reverse=True)
    return found


def conversations(egg_home: Path, directory: str | None = None) -> list[ConversationRuns]:
    """Every captured conversation (its runs in ``directory`` only, when given), one entry per
    conversation (an agent's own id), the one used last first."""
    return group(captures(egg_home, directory))


def group(found: list[Conversation]) -> list[ConversationRuns]:
    """``found`` (newest first) gathered by conversation: the runs that share an agent and that
    agent's own id are one conversation; ordered by last use, newest first."""
    runs: dict[tuple[str, str], list[Conversation]] = {}
    for run in found:
        runs.setdefault((run.agent, run.agent_session_id), []).append(run)
    grouped = [ConversationRuns(tuple(r)) for r in runs.values()]
    grouped.sort(key=lambda g: (g.last_used, _stamp(g.latest.started) or 0, g.latest.session))
    return grouped[::-1]


def find_conversation(egg_home: Path, ident: str) -> Conversation:
    """The conversation of session ``ident`` (an id, a prefix or a name); exit 2 otherwise."""
    from egg_core.session.store import SessionRecord, daemon_alive, find_session, read_json

    try:
        paths = find_session(egg_home, ident)
    except EggError as exc:
        raise UsageError(exc.message) from exc
    record = SessionRecord(paths, read_json(paths.meta), daemon_alive(paths))
    conversation = conversation_of(record)
    if conversation is None:
        raise UsageError(
            f"session {paths.id} has no captured conversation (egg history lists them)"
        )
    return conversation


def for_resume(egg_home: Path, profile: AgentProfile, cwd: Path, ident: str | None) -> Conversation:
    """The capture ``egg run AGENT --resume [SESSION]`` puts back: SESSION's, or the newest of
    the conversation of this agent used last in this directory (the row ``egg history`` lists
    first). Every refusal is a usage error (exit 2), before anything starts."""
    why = declines(profile)
    if why:
        raise UsageError(f"--resume: {profile.name} keeps no conversation history in egg: {why}")
    if ident:
        conversation = find_conversation(egg_home, ident)
        if conversation.agent != profile.name:
            raise UsageError(
                f"session {conversation.session} holds a {conversation.agent} conversation, "
                f"not {profile.name}'s (egg run {conversation.agent} --resume "
                f"{conversation.session})"
            )
        return conversation
    mine = [c for c in conversations(egg_home, str(cwd)) if c.latest.agent == profile.name]
    if not mine:
        raise UsageError(
            f"no captured {profile.name} conversation in {cwd} (egg history --all lists them)"
        )
    return mine[0].latest  # the conversation used last here, from its newest capture


def restore_for_resume(
    pm: Any, profile: AgentProfile, ctx: HistoryContext, conv: Conversation
) -> str:
    """Put the conversation back where the agent looks for it now; one line saying what was
    done. Raises EggError when the plugin declines or the place cannot be written safely."""
    target = pm.hook.egg_history_restore(agent=profile, ctx=ctx, captured=conv.transcript)
    if target is None:
        raise UsageError(f"--resume: {profile.name}'s plugin declines to restore conversations")
    try:
        data = history.read_capture(conv.session_dir)
    except OSError as exc:
        raise EggError(f"session {conv.session}: its capture cannot be read: {exc}") from exc
    try:
        return history.restore(data, target)
    except (HistoryError, OSError) as exc:
        raise EggError(f"--resume: not restored, nothing started: {exc}") from exc


def context(
    *,
    cwd: Path,
    home: Path,
    session_dir: Path,
    environ: Mapping[str, str],
    agent_session_id: str | None = None,
    started: float | None = None,
) -> HistoryContext:
    return HistoryContext(
        cwd=cwd,
        home=home,
        session_dir=session_dir,
        started_after=time.time() if started is None else started,
        agent_session_id=agent_session_id,
        environ=dict(environ),
    )
