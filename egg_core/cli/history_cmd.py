"""``egg history [--all] [--json]`` and ``egg history show SESSION [--json]``: the conversations
the sessions captured (see :mod:`egg_core.session.conversations`), listed and read without the
agent.

A transcript is what the agent wrote inside the sandbox: every field of it is printed through
:func:`egg_core.sanitize.visible` (a turn keeps its lines and tabs), and ``--json`` is ASCII.
``show`` prints each turn as the agent's plugin reads it from the capture (see
:mod:`egg_core.transcripts`), so a capture at the 256 MiB cap prints in bounded memory."""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from egg_core.cli.context import Context
from egg_core.errors import UsageError
from egg_core.sanitize import json_array, json_text, visible

if TYPE_CHECKING:
    from egg_core.history import Turn
    from egg_core.session.conversations import ConversationRuns


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "words",
        nargs="*",
        metavar="show SESSION",
        help="read one conversation (a session id, id prefix or name)",
    )
    p.add_argument("--all", action="store_true", help="every directory, not only this one")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    words = list(ns.words)
    if not words:
        return _list(ns, ctx)
    if words[0] != "show":
        raise UsageError(f"unknown history command {words[0]!r} (egg history [show SESSION])")
    if len(words) != 2:
        raise UsageError("egg history show takes one SESSION (egg history lists them)")
    return _show(words[1], ns, ctx)


def _egg_home(ctx: Context) -> Any:
    from egg_core.paths import egg_home

    return egg_home(ctx.environ)


def _list(ns: argparse.Namespace, ctx: Context) -> int:
    """One row per conversation (its resumes in it), then the notes, once, after the rows."""
    from egg_core import registry
    from egg_core.session import conversations

    found = conversations.conversations(_egg_home(ctx), None if ns.all else os.getcwd())
    agents = registry.agents(ctx.pm)
    titles = [_title(ctx, agents, c) for c in found]
    if ns.json:
        print(json_text([{**c.to_json(), "title": t} for c, t in zip(found, titles, strict=True)]))
        return 0
    notes = []
    if found:
        from egg_core.cli.table import render_table

        rows = [
            [
                c.latest.session,
                c.latest.agent,
                c.latest.agent_session_id,
                *([c.latest.directory] if ns.all else []),
                _when(c.started),
                _when(c.last_used),
                str(len(c.runs)),
                _size(c.latest.size),
                title or "-",
            ]
            for c, title in zip(found, titles, strict=True)
        ]
        headers = ["SESSION", "AGENT", "AGENT SESSION"]
        headers += ["DIRECTORY"] if ns.all else []
        headers += ["STARTED", "LAST USED", "RUNS", "SIZE", "TITLE"]
        print(render_table(headers, rows))
    else:
        where = "" if ns.all else " in this directory (egg history --all: every directory)"
        notes.append(f"no captured conversation{where}")
    notes += _declined(ctx, agents, None if ns.all else os.getcwd())
    sys.stdout.flush()  # the rows first, also when stdout is a pipe and stderr is not
    for note in notes:
        print(visible(note), file=sys.stderr)
    return 0


def _title(ctx: Context, agents: Any, conversation: ConversationRuns) -> str | None:
    """The conversation's title; one an older egg kept with the agent's markup in it (``<bash-
    input>``, Codex's ``# AGENTS.md instructions``) is read again from the capture, by the
    agent's plugin, as a capture is titled now."""
    from egg_core import history
    from egg_core.session import conversations

    title = conversation.title
    if title is None or not title.lstrip().startswith(("<", "# AGENTS.md")):
        return title
    latest = conversation.latest
    if latest.agent not in agents:
        return title
    try:
        head = history.read_capture_head(latest.session_dir)
    except (OSError, EOFError, zlib.error):
        return title
    return conversations.title_of(ctx.pm, agents[latest.agent].obj, head)


def _declined(ctx: Context, agents: Any, directory: str | None) -> list[str]:
    """For each agent whose plugin keeps no history and that ran here (in ``directory``, or
    anywhere): one note saying why."""
    from egg_core.session import conversations
    from egg_core.session.store import list_sessions

    notes: dict[str, str] = {}
    for record in list_sessions(_egg_home(ctx)):
        name = record.meta.get("agent")
        if not isinstance(name, str) or name in notes or name not in agents:
            continue
        if directory is not None and record.meta.get("cwd") != directory:
            continue
        why = conversations.declines(agents[name].obj)
        if why and agents[name].obj.binary:
            notes[name] = f"egg: {name}: conversations are not captured: {why}"
    return list(notes.values())


def _show(ident: str, ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core import history, registry
    from egg_core.profiles import unknown_agent_profile
    from egg_core.session import conversations
    from egg_core.transcripts import MAX_LINE

    conversation = conversations.find_conversation(_egg_home(ctx), ident)
    agents = registry.agents(ctx.pm)
    profile = (
        agents[conversation.agent].obj
        if conversation.agent in agents
        else unknown_agent_profile(conversation.agent)
    )
    with history.capture_reader(conversation.session_dir) as transcript:
        turns = conversations.turns(ctx.pm, profile, transcript)
        if ns.json:
            for piece in json_array(t.to_json() for t in turns):
                sys.stdout.write(piece)
            sys.stdout.write("\n")
        else:
            _print_turns(conversation, turns)
    if transcript.skipped:
        print(
            f"egg: {transcript.skipped} line(s) of the transcript longer than "
            f"{MAX_LINE // (1024 * 1024)} MiB were skipped",
            file=sys.stderr,
        )
    return 0


def _print_turns(c: Any, turns: Iterable[Turn]) -> None:
    """Each turn printed as the plugin reads it from the capture, never all of them held."""
    print(visible(f"# {c.agent} conversation {c.agent_session_id} (egg session {c.session})"))
    shown = 0
    for turn in turns:
        shown += 1
        if turn.role == "tool":
            line = f"  [{turn.tool}] " if turn.tool else "  [output] "
            print(visible(line + " ".join(turn.text.split())[:200]))
        else:
            print(f"\n{visible(turn.role)}:\n{visible(turn.text.rstrip(), multiline=True)}")
    if not shown:
        print(visible(f"(no plugin reads {c.agent}'s transcripts)"), file=sys.stderr)


def _when(stamp: Any) -> str:
    if not isinstance(stamp, int | float):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"
