"""``egg run AGENT --resume [SESSION]`` and new conversations' ids: what ``egg run`` asks of
:mod:`egg_core.session.conversations` before it starts a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.errors import UsageError
from egg_core.paths import egg_home


def parse(args: list[str]) -> tuple[str | None, list[str]]:
    """``egg run AGENT --resume [SESSION] [ARGS]``: (SESSION, or "" for the newest; None when
    not resuming), and the agent's own arguments."""
    if not args:
        return None, args
    first = args[0]
    if first.startswith("--resume="):
        return first.split("=", 1)[1] or "", args[1:]
    if first != "--resume":
        return None, args
    if len(args) > 1 and not args[1].startswith("-"):
        return args[1], args[2:]
    return "", args[1:]


def find(ctx: Context, agent: str, cwd: Path, ident: str | None) -> Any:
    from egg_core import registry
    from egg_core.session import conversations

    agents = registry.agents(ctx.pm)
    if agent not in agents:
        raise UsageError(f"--resume: unknown agent {agent!r} (egg plugins lists them)")
    return conversations.for_resume(egg_home(ctx.environ), agents[agent].obj, cwd, ident)


def restore(ctx: Context, profile: Any, cwd: Path, conversation: Any) -> str:
    from egg_core.paths import user_home
    from egg_core.session import conversations

    hctx = conversations.context(
        cwd=cwd,
        home=user_home(ctx.environ),
        session_dir=conversation.session_dir,
        environ=ctx.environ,
        agent_session_id=conversation.agent_session_id,
    )
    return conversations.restore_for_resume(ctx.pm, profile, hctx, conversation)


def new_id(ctx: Context, agent: str | None, command: list[str], args: list[str]) -> str | None:
    """The id egg gives a new conversation of an agent that takes one (``--session-id``), so that
    the capture knows which transcript is this session's; None when the user chose one."""
    import uuid

    from egg_core import registry
    from egg_core.session import conversations

    if agent is None or command:
        return None
    found = registry.agents(ctx.pm).get(agent)
    profile = found.obj if found else None
    if profile is None or not profile.session_id_flag or conversations.declines(profile):
        return None
    own = {profile.session_id_flag, profile.resume_flag}
    if any(arg.split("=", 1)[0] in own for arg in args):
        return None
    return str(uuid.uuid4())


def hint(paths: Any) -> str | None:
    """The line a client prints when a session it was attached to has ended with a conversation
    egg captured: how to go on with it *inside* egg. The agent's own hint (Claude's ``claude
    --resume ID`` at exit) would run it on the host, outside the sandbox, and egg's --resume
    takes egg's session id, not the agent's. None while the session runs (a detach) or when
    nothing was captured (a plain command, an agent whose history egg does not keep)."""
    from egg_core.sanitize import visible
    from egg_core.session import conversations
    from egg_core.session.store import SessionRecord, read_json

    meta = read_json(paths.meta)
    if meta.get("state") != "exited":
        return None
    conversation = conversations.conversation_of(SessionRecord(paths, meta, False))
    if conversation is None:
        return None
    return visible(
        f"egg: to resume this conversation in the sandbox: egg run {conversation.agent} "
        f"--resume {paths.id}"
    )
