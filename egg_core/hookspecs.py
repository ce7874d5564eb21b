"""The egg extension API: every hook a plugin can implement, in one place.

A plugin is a module (or object) registered under the ``egg`` entry-point group. It implements
hooks by defining functions with the names below, decorated with :data:`hookimpl`::

    from egg_core.hookspecs import hookimpl
    from egg_core.profiles import AgentProfile, Grant

    @hookimpl
    def egg_register_agents(register):
        register(AgentProfile(name="mine", description="...", binary="mine",
                              domains=[Grant("api.mine.dev", "the agent's model API")]))

Only functions carrying the marker count as hooks; a stray ``egg_*`` function without it is
ignored, and a marked function whose name is not a hook below is reported as that plugin's load
error (``egg plugins``) instead of breaking every command.

Ordering: third-party plugins are registered before the built-in ones, and pluggy calls the most
recently registered implementation first. A built-in *default* in a ``firstresult`` hook is
therefore marked ``trylast`` so that any third-party implementation wins.

Hooks are grouped by when they fire: registration (once per command, when the core asks for the
agents, platforms or tools), history (around a session), session lifecycle, and the CLI. Each
hook says the egg version it appeared in (``versionadded``), and each is called through the
plugin manager by a ``test_hook_<name>`` of egg's own suite (``tests/test_hooks.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from egg_core.commands import Command, CommandRegistry
    from egg_core.config.model import EggConfig
    from egg_core.history import HistoryContext, Transcript, Turn
    from egg_core.lifecycle import RunningSession, SessionInfo
    from egg_core.netproxy import NetworkTransport
    from egg_core.profiles import AgentProfile
    from egg_core.sandbox import Platform
    from egg_core.tools.model import Tool
    from egg_core.transcripts import TranscriptReader

PROJECT_NAME = "egg"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

RegisterAgent = Callable[["AgentProfile"], None]
RegisterPlatform = Callable[["Platform"], None]
RegisterCommand = Callable[["Command"], None]
RegisterTool = Callable[["Tool"], None]


# --- registration -------------------------------------------------------------------------------


@hookspec
def egg_register_agents(register: RegisterAgent) -> None:
    """Register the agent profiles this plugin provides.

    Fires whenever a command needs to know the agents (``egg explain``, ``egg run``,
    ``egg exec``, the contract tests). Call ``register(profile)`` once per
    :class:`~egg_core.profiles.AgentProfile`; a plugin may register several. Two plugins
    registering the same agent name is an error that names both plugins.

    :param register: callback taking one ``AgentProfile``.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


@hookspec
def egg_register_platforms(register: RegisterPlatform) -> None:
    """Register the sandbox platforms this plugin provides.

    Fires when a command must choose or describe a platform (``egg exec``, ``egg run``,
    ``egg explain``, ``egg doctor``). Call ``register(platform)`` with an instance of a
    :class:`~egg_core.sandbox.Platform` subclass. Platform names are unique across plugins.

    :param register: callback taking one ``Platform``.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


@hookspec
def egg_register_tools(
    register: RegisterTool,
    config: EggConfig,
    egg_home: Path,
    report: Callable[[str, str], None],
) -> None:
    """Register privileged host tools that a sandbox may call (``egg tool-call``, the shims on
    its PATH, ``egg mcp``).

    Fires whenever egg needs the list: a launch whose egg.yaml enables tools, ``egg tools``,
    ``egg mcp``, and again on a call when the tools directory changed. The built-in
    ``yaml-tools`` plugin registers the shell ``run:`` tools of ``$EGG_HOME/tools/*.yaml``; any
    plugin may add Python-callable tools. Two tools of one name are an error naming both.

    :param register: callback taking one :class:`~egg_core.tools.model.Tool`.
    :param config: the resolved egg.yaml of the launch (the default config for ``egg tools``).
    :param egg_home: egg's own directory (``$EGG_HOME``), where tool files live.
    :param report: callback ``(source, problem)`` for a definition that cannot be loaded; it is
        listed by ``egg tools`` and stops only a launch that enables that tool.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


# --- history ------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def egg_history_capture(agent: AgentProfile, ctx: HistoryContext) -> Transcript | None:
    """Say where this session's conversation is: the agent's transcript file on the host.

    Asked by the session daemon while the session runs (every few seconds), once after it
    ends, and when the agent asks to be started again (``relaunch_exit_code``: a conversation it
    has written under egg's id is resumed, not started anew); the core copies the file
    (safely: see :mod:`egg_core.history`) into the session directory when it changed.
    Implemented by the plugin that knows the agent's on-disk format. ``firstresult``: the
    first non-None answer wins.

    :param agent: the profile of the agent the session runs.
    :param ctx: the session's directory, home, start time, environment, and the agent's own
        conversation id when egg knows it (it passed it with ``session_id_flag``, or resumes it).
    :return: the transcript (the agent's directory, the file under it, the agent's own id), or
        None to decline (not your agent, or no transcript of this session yet).

    .. versionadded:: 0.1.0
    """


@hookspec(firstresult=True)
def egg_history_restore(
    agent: AgentProfile, ctx: HistoryContext, captured: Transcript
) -> Transcript | None:
    """Say where a captured conversation goes back, before ``egg run AGENT --resume``.

    The core writes the captured file there (never through a symlink) and starts the agent with
    its ``resume_flag`` and ``captured.agent_session_id``. ``firstresult``.

    :param agent: the profile of the agent being resumed.
    :param ctx: the new session (its directory, home and environment: the agent's directory may
        have moved since the capture).
    :param captured: where the transcript was when it was captured.
    :return: where it goes now, or None to decline (not your agent).

    .. versionadded:: 0.1.0
    """


@hookspec(firstresult=True)
def egg_history_render(agent: AgentProfile, data: bytes) -> list[Turn] | None:
    """Read a captured transcript as turns, for ``egg history show`` and the titles ``egg
    history`` lists, without running the agent.

    ``data`` is whatever the agent wrote and a sandbox could have shaped: skip what does not
    parse, never raise on it. ``firstresult``.

    :param agent: the profile of the agent that wrote it.
    :param data: the captured transcript (possibly only its beginning, for a title).
    :return: user and assistant turns in order, each tool call as a turn with its name, or
        None to decline (not your agent). A user turn is what the user typed, as they typed it
        (the agent's own markup for a shell or slash command read back into text, context the
        agent added left out): the first one that does not open with a tag is the title.

    .. versionadded:: 0.1.0
    """


@hookspec(firstresult=True)
def egg_history_turns(agent: AgentProfile, transcript: TranscriptReader) -> Iterable[Turn] | None:
    """Read a captured transcript as turns one at a time, for ``egg history show``, which
    prints each turn as it comes: a capture of any size (up to 256 MiB) in bounded memory.

    Asked before ``egg_history_render``; a plugin that implements only that one still works
    (its transcripts are read whole). Return an iterator (a generator) that reads
    ``transcript.records()`` (or ``.lines()``) as it is consumed and keeps no more than the
    format needs; each call of those starts again from the beginning, so a format where a later
    record replaces an earlier one can be read twice instead of held. A line over 32 MiB is
    skipped unless ``records(long=...)`` reads it in pieces (``egg_core.long_lines.ArrayLine``:
    the items of one big array). The records are what a sandbox could have shaped: skip what
    does not parse, never raise on it. ``firstresult``.

    :param agent: the profile of the agent that wrote it.
    :param transcript: the captured transcript (:class:`egg_core.transcripts.TranscriptReader`).
    :return: user and assistant turns in order, each tool call as a turn with its name, as
        ``egg_history_render`` gives them for the same bytes; or None to decline (not your agent).

    .. versionadded:: 0.1.0
    """


# --- the network ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def egg_network_transport() -> NetworkTransport | None:
    """Replace how the filtering proxy resolves names and opens connections.

    The proxy still decides every request (allowlist, address checks, logging); this only says
    where a name resolves and how the allowed connection is made: a resolver of one's own, a
    corporate relay, or the test harness's loopback seam (:mod:`egg_core.testing.network`), which
    may also shorten how long a client has to send its request head (``head_timeout``).
    ``firstresult``: the first non-None answer wins. The system's resolver and connector are an
    ordinary answer too, the built-in ``system-network`` plugin's, given ``trylast`` (so every
    other plugin is asked first); a launch whose answer is not the system's is never cached.

    :return: the resolver and connector to use (:class:`egg_core.api.NetworkTransport`), or
        None to decline.

    .. versionadded:: 0.1.0
    """


# --- session lifecycle --------------------------------------------------------------------------


@hookspec
def egg_session_started(session: SessionInfo, live: RunningSession) -> None:
    """Fires in the session daemon once the sandboxed command has started.

    The built-in watchers start here (the conversation capture, the periodic git audit,
    browser-open requests: ``egg_plugins.session``). A plugin keeps what it needs per session
    (one daemon runs one session, but a plugin object may outlive it in tests).

    :param session: id, directory, agent, command and platform of the session.
    :param live: what a plugin may act on while the session runs
        (:class:`egg_core.api.RunningSession`): the agent's profile, its conversation's capture
        context, the sandbox's shared directory, the host-side guards, notices to the attached
        clients, the session's log and record.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


@hookspec
def egg_session_tick(session: SessionInfo, live: RunningSession) -> None:
    """Fires in the session daemon about every quarter second while the sandboxed command runs
    (from ``egg_session_started`` until the command has ended), so that a plugin can watch what
    the sandbox does without a thread of its own.

    Each plugin's implementation is called in a worker thread of its own, never twice at once:
    a slow one (a 100 MiB transcript copied) delays only its own next tick, never the relay nor
    another plugin's, and one that never returns holds only itself. Rate-limit inside (the
    conversation capture looks every 5 s). An exception is one line in the session's log, said
    once, and the next tick comes as usual.

    :param session: the session (its command and pid change when the agent is started again).
    :param live: as in :func:`egg_session_started`.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


@hookspec
def egg_session_ended(session: SessionInfo, exit_code: int, live: RunningSession) -> None:
    """Fires in the session daemon after the sandboxed command has exited, once the ticks have
    stopped (one may still be running in its thread: a plugin serializes its own work) and
    before the session's end is recorded and told to the clients: the watchers' last look (the
    final capture) lands in the record ``egg ls`` and ``egg history`` read.

    Called in a worker thread, so a slow implementation keeps the relay responsive; egg's own
    end (the settings restored, the final git audit) does not depend on any plugin.

    :param session: the session that ended.
    :param exit_code: the command's exit code (128+N when killed by signal N).
    :param live: as in :func:`egg_session_started`.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """


# --- command line -------------------------------------------------------------------------------


@hookspec
def egg_cli_commands(register: RegisterCommand, cli: CommandRegistry) -> None:
    """Add subcommands to ``egg``.

    Fires when the CLI is asked for a command it does not define itself, or for ``--help``.
    Call ``register(Command(...))``, as with the other registration hooks; a name that clashes
    with a built-in command (or another plugin's) is an error naming the plugin. Like every
    registration hook, it cannot be a hook wrapper.

    :param register: adds one :class:`egg_core.commands.Command`.
    :param cli: the registry itself (``cli.register(...)``), for plugins written before
        ``register`` was passed; take only the argument you use.
    :return: nothing; the return value is ignored.

    .. versionadded:: 0.1.0
    """
