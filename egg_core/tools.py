"""Privileged host tools a sandboxed agent may call: the data the tools hook registers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from egg_core.converters import to_tuple


@attrs.frozen(kw_only=True)
class ToolParam:
    """One positional parameter of a tool, for the ``list`` action and MCP schemas."""

    name: str
    description: str = ""
    required: bool = False


@attrs.frozen(kw_only=True)
class ToolResult:
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    error: str | None = None


@attrs.frozen(kw_only=True)
class Tool:
    """A host command (``run``, a shell string) or a Python callable (``func``) exposed by name."""

    name: str
    description: str = ""
    run: str | None = None
    func: Callable[[Sequence[str], Mapping[str, str]], ToolResult] | None = attrs.field(
        default=None, eq=False
    )
    env: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = 60.0
    max_concurrent: int = 1
    params: tuple[ToolParam, ...] = attrs.field(default=(), converter=to_tuple)
