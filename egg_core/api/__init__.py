"""What a plugin author imports: one surface, instead of the dozen modules it is built from.

An agent plugin needs the profile types and ``hookimpl``; a platform plugin the ``Platform`` base
class, what it is given (``Launch``, the ``EffectivePolicy``) and what it returns (``Prepared``,
``Check``); a command plugin ``Command``. Everything here is covered by the compatibility promise
of the hook specifications (``egg_core.hookspecs``, where each hook is documented); the modules
behind it may move. The built-in plugins import nothing else (a test holds them to it), from here
and from the sub-APIs beside it:

- :mod:`egg_core.api.config` — reading YAML of one's own with egg's line-numbered errors;
- :mod:`egg_core.api.platform` — what a sandbox platform builds on: the host observations the
  exec cache keys on (``observe``), path rules, the policy's network needs, the proxy;
- :mod:`egg_core.api.session` — what a session watcher builds on (the conversation capture);
- :mod:`egg_core.api.client` — what a front that shows and drives sessions builds on (the
  session list, the wire protocol, ``visible``);
- :mod:`egg_core.api.fast` — the standard-library-only part a platform's cached-launch runner
  and fact checkers may use (the exec cache's fast path imports nothing heavier).

Names are loaded when first used (PEP 562): importing a sub-API costs only what it holds.

    from egg_core.api import AgentProfile, Grant, hookimpl

    @hookimpl
    def egg_register_agents(register):
        register(AgentProfile(name="mytool", description="...", binary="mytool",
                              domains=[Grant("api.example.com", "its API")]))
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from egg_core.commands import Command, CommandRegistry
    from egg_core.errors import (
        ConfigError,
        EggError,
        EnforcementError,
        PluginError,
        UnknownNameError,
        UsageError,
    )
    from egg_core.history import (
        HistoryContext,
        Transcript,
        Turn,
        cut,
        is_markup,
        is_uuid,
        list_names,
        read_head,
    )
    from egg_core.hookspecs import (
        RegisterAgent,
        RegisterCommand,
        RegisterPlatform,
        RegisterTool,
        hookimpl,
    )
    from egg_core.lifecycle import HostGuards, RunningSession, SessionInfo
    from egg_core.long_lines import ArrayLine
    from egg_core.netproxy import (
        NetworkTransport,
        system_transport,
    )
    from egg_core.policy import (
        DrilledHole,
        EffectivePolicy,
        FsEntry,
    )
    from egg_core.profiles import (
        AgentProfile,
        ArgvRequest,
        EnvDefault,
        Grant,
        PlatformGrant,
        PortGrant,
        Relocation,
    )
    from egg_core.sandbox import (
        CAPABILITIES,
        Availability,
        Check,
        Launch,
        Platform,
        Prepared,
    )
    from egg_core.tools.model import (
        DEFAULT_TIMEOUT as DEFAULT_TOOL_TIMEOUT,
    )
    from egg_core.tools.model import (
        NAME as TOOL_NAME,
    )
    from egg_core.tools.model import (
        Tool,
        ToolParam,
        ToolResult,
    )
    from egg_core.transcripts import LongLine, TranscriptReader

#: each name: the module it comes from (``module:attribute`` where it is renamed here)
_EXPORTS = {
    "AgentProfile": "egg_core.profiles",
    "ArgvRequest": "egg_core.profiles",
    "ArrayLine": "egg_core.long_lines",
    "Availability": "egg_core.sandbox",
    "CAPABILITIES": "egg_core.sandbox",
    "Check": "egg_core.sandbox",
    "Command": "egg_core.commands",
    "CommandRegistry": "egg_core.commands",
    "ConfigError": "egg_core.errors",
    "DEFAULT_TOOL_TIMEOUT": "egg_core.tools.model:DEFAULT_TIMEOUT",
    "DrilledHole": "egg_core.policy",
    "EffectivePolicy": "egg_core.policy",
    "EggError": "egg_core.errors",
    "EnforcementError": "egg_core.errors",
    "EnvDefault": "egg_core.profiles",
    "FsEntry": "egg_core.policy",
    "Grant": "egg_core.profiles",
    "HistoryContext": "egg_core.history",
    "HostGuards": "egg_core.lifecycle",
    "Launch": "egg_core.sandbox",
    "LongLine": "egg_core.transcripts",
    "NetworkTransport": "egg_core.netproxy",
    "Platform": "egg_core.sandbox",
    "PlatformGrant": "egg_core.profiles",
    "PluginError": "egg_core.errors",
    "PortGrant": "egg_core.profiles",
    "Prepared": "egg_core.sandbox",
    "RegisterAgent": "egg_core.hookspecs",
    "RegisterCommand": "egg_core.hookspecs",
    "RegisterPlatform": "egg_core.hookspecs",
    "RegisterTool": "egg_core.hookspecs",
    "Relocation": "egg_core.profiles",
    "RunningSession": "egg_core.lifecycle",
    "SessionInfo": "egg_core.lifecycle",
    "TOOL_NAME": "egg_core.tools.model:NAME",
    "Tool": "egg_core.tools.model",
    "ToolParam": "egg_core.tools.model",
    "ToolResult": "egg_core.tools.model",
    "Transcript": "egg_core.history",
    "TranscriptReader": "egg_core.transcripts",
    "Turn": "egg_core.history",
    "UnknownNameError": "egg_core.errors",
    "UsageError": "egg_core.errors",
    "cut": "egg_core.history",
    "hookimpl": "egg_core.hookspecs",
    "is_markup": "egg_core.history",
    "is_uuid": "egg_core.history",
    "list_names": "egg_core.history",
    "read_head": "egg_core.history",
    "system_transport": "egg_core.netproxy",
}

__all__ = [
    "CAPABILITIES",
    "DEFAULT_TOOL_TIMEOUT",
    "TOOL_NAME",
    "AgentProfile",
    "ArgvRequest",
    "ArrayLine",
    "Availability",
    "Check",
    "Command",
    "CommandRegistry",
    "ConfigError",
    "DrilledHole",
    "EffectivePolicy",
    "EggError",
    "EnforcementError",
    "EnvDefault",
    "FsEntry",
    "Grant",
    "HistoryContext",
    "HostGuards",
    "Launch",
    "LongLine",
    "NetworkTransport",
    "Platform",
    "PlatformGrant",
    "PluginError",
    "PortGrant",
    "Prepared",
    "RegisterAgent",
    "RegisterCommand",
    "RegisterPlatform",
    "RegisterTool",
    "Relocation",
    "RunningSession",
    "SessionInfo",
    "Tool",
    "ToolParam",
    "ToolResult",
    "Transcript",
    "TranscriptReader",
    "Turn",
    "UnknownNameError",
    "UsageError",
    "cut",
    "hookimpl",
    "is_markup",
    "is_uuid",
    "list_names",
    "read_head",
    "system_transport",
]


def lazily(namespace: dict[str, Any], table: Mapping[str, str]) -> Callable[[str], object]:
    """A module's ``__getattr__`` (PEP 562) that imports each name of ``table`` the first time
    it is asked for, from ``module`` or ``module:attribute`` (a submodule is a name too), and
    keeps it in ``namespace``. Here and in the sub-APIs: importing an API costs what it holds."""

    def load(name: str) -> object:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(__import__(module, fromlist=[attribute or name]), attribute or name)
        namespace[name] = value
        return value

    return load


__getattr__ = lazily(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return list(__all__)
