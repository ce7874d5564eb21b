"""Subcommands of ``egg``: built-in ones and those plugins add through ``egg_cli_commands``.

Below the hook specifications (and the CLI), so that ``hookspecs`` can name these types without
an import cycle.

A command is declared by a ``configure`` function (adds its arguments to an argparse parser) and a
``run`` function; ``run`` may be given as ``"module:function"`` so that declaring every command
costs no imports, and only the command that runs loads its module.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

import attrs

from egg_core.errors import PluginError

#: ``run(namespace, context)`` — the context is :class:`egg_core.cli.context.Context` (not
#: imported here: the CLI sits above the hook specifications, which name this module)
RunFunction = Callable[[argparse.Namespace, Any], int]


@attrs.frozen(kw_only=True)
class Command:
    """One ``egg`` subcommand."""

    name: str
    help: str
    run: RunFunction | str
    configure: Callable[[argparse.ArgumentParser], None] | None = None
    #: exit code for bad arguments (``egg exec`` uses 125 so scripts can tell it from CMD's)
    usage_exit_code: int = 2
    #: False: the command runs even when ``$EGG_HOME`` is unusable (``egg doctor``, which says
    #: so itself); otherwise egg stops first with one line saying what to do about it
    uses_egg_home: bool = True

    def resolve_run(self) -> RunFunction:
        if callable(self.run):
            return self.run
        module, _, func = self.run.partition(":")
        target: RunFunction = getattr(importlib.import_module(module), func)
        return target


class CommandRegistry:
    """The commands ``egg`` knows, by name; plugins register theirs here."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._owners: dict[str, str] = {}

    def register(self, command: Command, *, owner: str = "egg") -> None:
        if not isinstance(command, Command):
            raise PluginError(f"{owner!r} registered {command!r} as a command; expected Command")
        if command.name in self._commands:
            raise PluginError(
                f"command {command.name!r} is registered by two plugins: "
                f"{self._owners[command.name]!r} and {owner!r}"
            )
        self._commands[command.name] = command
        self._owners[command.name] = owner

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._commands.values())

    def __contains__(self, name: object) -> bool:
        return name in self._commands
