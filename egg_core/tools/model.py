"""Privileged host tools: named host commands a sandbox may *call*, whose credentials stay outside.

A tool is defined by a plugin through ``egg_register_tools``: the built-in ``yaml-tools`` plugin
reads ``$EGG_HOME/tools/*.yaml`` (shell ``run:`` tools), any plugin may add Python-callable ones.
egg.yaml's ``tools: [name, ...]`` says which a sandbox may call; the runner
(:mod:`egg_core.tools.runner`) runs them on the host, the tool socket
(:mod:`egg_core.tools.server`) takes calls from inside a sandbox, and ``egg mcp`` serves the same
tools to MCP clients.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core.converters import to_tuple

#: a tool's name: the command the agent runs inside, and what MCP lists
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
DEFAULT_TIMEOUT = 60.0


@attrs.frozen(kw_only=True)
class ToolParam:
    """One positional parameter of a tool, for listings and MCP input schemas."""

    name: str
    description: str = ""
    required: bool = False


@attrs.frozen(kw_only=True)
class ToolResult:
    """What a call returns: the tool's exit code and output (``error``: it did not run)."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "error": self.error,
        }


ToolFunction = Callable[[Sequence[str], Mapping[str, str]], ToolResult]


@attrs.frozen(kw_only=True)
class Tool:
    """A host command (``run``, a shell command line that gets the arguments as ``"$1"``…) or
    a Python callable (``func(args, env)``) exposed by name."""

    name: str
    description: str = ""
    run: str | None = None
    func: ToolFunction | None = attrs.field(default=None, eq=False)
    env: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    max_concurrent: int = 1
    params: tuple[ToolParam, ...] = attrs.field(default=(), converter=to_tuple)
    #: where it is defined: the tool file, or the plugin (set by :func:`collect`)
    source: str = ""

    def __attrs_post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(
                f"bad tool name {self.name!r} (lowercase letters, digits, '.', '_', '-')"
            )
        if (self.run is None) == (self.func is None):
            raise ValueError(f"tool {self.name!r}: give exactly one of run and func")
        if self.timeout <= 0 or self.max_concurrent < 1:
            raise ValueError(f"tool {self.name!r}: timeout and max_concurrent must be positive")

    def usage(self) -> str:
        """How a call is written: ``NAME required [optional]`` (listings and errors)."""
        words = [p.name if p.required else f"[{p.name}]" for p in self.params]
        return " ".join([self.name, *words])

    def missing(self, args: Sequence[str]) -> str | None:
        """The required parameter a call of ``args`` leaves out, as one line; None when it
        leaves none out. A parameter is its position (``"$1"``…): one is given when the call
        has that many arguments (an empty one counts), as MCP's named ones are given when
        present. The runner asks this for every caller (:func:`egg_core.tools.runner.refusal`)."""
        for position, param in enumerate(self.params):
            if param.required and position >= len(args):
                return (
                    f"tool {self.name}: missing the required parameter {param.name!r} "
                    f"(usage: {self.usage()})"
                )
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "params": [attrs.asdict(p) for p in self.params],
            "timeout": self.timeout,
            "max_concurrent": self.max_concurrent,
        }


@attrs.frozen(kw_only=True)
class ToolSet:
    """Every tool the plugins defined, and what could not be loaded (source, why)."""

    tools: Mapping[str, Tool] = attrs.field(factory=dict)
    errors: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=to_tuple)

    def enabled(self, names: Sequence[str]) -> tuple[dict[str, Tool], list[str]]:
        """The tools ``names`` enables, and one line for each that cannot be had (undefined, or
        its file is broken)."""
        found: dict[str, Tool] = {}
        problems = []
        for name in names:
            if name in self.tools:
                found[name] = self.tools[name]
                continue
            broken = [why for source, why in self.errors if Path(source).stem == name]
            problems.append(
                f"tool {name!r}: {broken[0]}"
                if broken
                else f"tool {name!r} is not defined (egg tools lists the tools)"
            )
        return found, problems


def collect(pm: Any, config: Any, egg_home: Path) -> ToolSet:
    """Ask every plugin for its tools. A broken definition is an error of its own, never fatal
    for the others; two tools of one name are an error naming both sources (neither is kept)."""
    tools: dict[str, Tool] = {}
    errors: list[tuple[str, str]] = []
    clashes: set[str] = set()
    for impl in pm.hook.egg_register_tools.get_hookimpls():
        owner = impl.plugin_name

        def register(tool: Any, owner: str = owner) -> None:
            if not isinstance(tool, Tool):
                errors.append((owner, f"registered {type(tool).__name__}, not a Tool"))
                return
            tool = tool if tool.source else attrs.evolve(tool, source=f"plugin {owner}")
            if tool.name in tools or tool.name in clashes:
                first = tools.pop(tool.name, None)
                clashes.add(tool.name)
                where = f"{first.source} and {tool.source}" if first else tool.source
                errors.append((tool.source, f"tool {tool.name!r} is defined twice: {where}"))
                return
            tools[tool.name] = tool

        def report(source: str, problem: str) -> None:
            errors.append((source, problem))

        offered = {"register": register, "config": config, "egg_home": egg_home, "report": report}
        try:
            impl.function(**{name: offered[name] for name in impl.argnames if name in offered})
        except Exception as exc:  # one plugin's bug is its own load error
            errors.append((f"plugin {owner}", f"{type(exc).__name__}: {exc}"))
    return ToolSet(tools=tools, errors=errors)
