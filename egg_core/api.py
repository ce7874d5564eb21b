"""What a plugin author imports: one surface, instead of the half-dozen modules it is built from.

An agent plugin needs the profile types and ``hookimpl``; a platform plugin the ``Platform`` base
class, what it is given (``Launch``, the ``EffectivePolicy``) and what it returns (``Prepared``,
``Check``); a command plugin ``Command``. Everything here is covered by the compatibility promise
of the hook specifications (``egg_core.hookspecs``, where each hook is documented); the modules
behind it may move.

    from egg_core.api import AgentProfile, Grant, hookimpl

    @hookimpl
    def egg_register_agents(register):
        register(AgentProfile(name="mytool", description="...", binary="mytool",
                              domains=[Grant("api.example.com", "its API")]))
"""

from __future__ import annotations

from egg_core.commands import Command, CommandRegistry
from egg_core.errors import (
    ConfigError,
    EggError,
    EnforcementError,
    PluginError,
    UnknownNameError,
    UsageError,
)
from egg_core.history import HistoryContext, Transcript, Turn
from egg_core.hookspecs import (
    RegisterAgent,
    RegisterCommand,
    RegisterPlatform,
    RegisterTool,
    hookimpl,
)
from egg_core.netproxy import NetworkTransport, system_transport
from egg_core.policy import DrilledHole, EffectivePolicy, FsEntry
from egg_core.profiles import (
    AgentProfile,
    ArgvRequest,
    EnvDefault,
    Grant,
    PlatformGrant,
    PortGrant,
    Relocation,
)
from egg_core.sandbox import CAPABILITIES, Availability, Check, Launch, Platform, Prepared
from egg_core.session.info import SessionInfo
from egg_core.tools import Tool, ToolParam, ToolResult
from egg_core.transcripts import LongLine, TranscriptReader

__all__ = [
    "CAPABILITIES",
    "AgentProfile",
    "ArgvRequest",
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
    "SessionInfo",
    "Tool",
    "ToolParam",
    "ToolResult",
    "Transcript",
    "TranscriptReader",
    "Turn",
    "UnknownNameError",
    "UsageError",
    "hookimpl",
    "system_transport",
]
