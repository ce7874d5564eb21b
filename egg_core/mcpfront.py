"""``egg mcp``: the host tools served over MCP, with the official ``mcp`` SDK.

The same runner (:mod:`egg_core.tools.runner`) as the tool socket: a tool behaves identically from a
sandbox and from an MCP client. Each tool's input schema comes from its ``params`` (named string
properties, ``required`` as declared); a tool without params takes ``args: [string]``. A call's
result is the tool's stdout as text; a non-zero exit is an error result carrying stderr and the
exit code.

Over stdio by default; ``--http HOST:PORT --token-file PATH`` serves streamable HTTP at ``/mcp``,
where every request needs ``Authorization: Bearer <token>`` (compared in constant time; a wrong or
missing one gets 401). The token file must be the user's alone: one that group or others may
read or write is refused before anything is served.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Sequence
from typing import Any

from egg_core.tokenfile import read_token as read_token
from egg_core.tools.model import Tool, ToolResult, ToolSet
from egg_core.tools.runner import Caller, ToolRunner

SERVER_NAME = "egg"
PATH = "/mcp"


def input_schema(tool: Tool) -> dict[str, Any]:
    if not tool.params:
        return {
            "type": "object",
            "properties": {
                "args": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "the tool's arguments, in order",
                }
            },
        }
    return {
        "type": "object",
        "properties": {
            p.name: {"type": "string", "description": p.description} for p in tool.params
        },
        "required": [p.name for p in tool.params if p.required],
        "additionalProperties": False,
    }


def arguments_of(tool: Tool, given: dict[str, Any] | None) -> list[str]:
    """The positional arguments a call's named ones stand for; ValueError for a name or a
    value no parameter takes. A required parameter left out ends them there, so that the
    runner's check (:func:`egg_core.tools.runner.refusal`, every caller's) is what refuses it."""
    given = dict(given or {})
    if not tool.params:
        args = given.pop("args", [])
        if given or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{tool.name} takes args: a list of strings")
        return list(args)
    unknown = set(given) - {p.name for p in tool.params}
    if unknown:
        raise ValueError(f"{tool.name} has no parameter {sorted(unknown)[0]!r}")
    out: list[str] = []
    for param in tool.params:
        value = given.get(param.name)
        if value is None:
            if param.required:
                break  # the arguments end before it: the runner's one check names it
            out.append("")
            continue
        if not isinstance(value, str):
            raise ValueError(f"{tool.name}: {param.name!r} must be a string")
        out.append(value)
    while out and out[-1] == "" and not any(p.required for p in tool.params[len(out) - 1 :]):
        out.pop()  # trailing optional parameters not given: not passed at all
    return out


class ToolFront:
    """What the MCP handlers ask: the tools served (all, or the named ones), and a call."""

    def __init__(
        self,
        load: Callable[[], ToolSet],
        names: Sequence[str] | None,
        caller: Caller,
        runner: ToolRunner | None = None,
    ) -> None:
        self._load = load
        self.names = list(names) if names else None
        self.caller = caller
        self.runner = runner or ToolRunner()

    def tools(self) -> dict[str, Tool]:
        found = self._load()
        if self.names is None:
            return dict(found.tools)
        tools, _ = found.enabled(self.names)
        return tools

    def call(self, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        tool = self.tools().get(name)
        if tool is None:
            return ToolResult(exit_code=2, error=f"no tool {name[:64]!r} is served here")
        try:
            args = arguments_of(tool, arguments)
        except ValueError as exc:
            return ToolResult(exit_code=2, error=str(exc))
        return self.runner.call(tool, args, self.caller)


def build_server(front: ToolFront) -> Any:
    """The SDK's low-level server, answering tools/list and tools/call from ``front``."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description or None,
                    input_schema=input_schema(tool),
                )
                for tool in front.tools().values()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        result = await anyio.to_thread.run_sync(front.call, params.name, params.arguments)
        if result.error is not None or result.exit_code != 0:
            text = result.error or result.stderr or ""
            text = f"{text.rstrip()}\n(exit code {result.exit_code})".lstrip()
            content: list[Any] = [types.TextContent(text=text)]
            if result.stdout:
                content.insert(0, types.TextContent(text=result.stdout))
            return types.CallToolResult(content=content, is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=result.stdout)])

    from egg_core import __version__

    # the version an MCP client is told is egg's own (the SDK's default is empty)
    return Server(
        SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class BearerGate:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"egg: bearer token needed\n"})
                return
        await self.app(scope, receive, send)


def http_app(server: Any, host: str, token: str) -> Any:
    return BearerGate(server.streamable_http_app(streamable_http_path=PATH, host=host), token)


def serve_http(server: Any, host: str, port: int, token: str) -> None:
    import uvicorn

    config = uvicorn.Config(
        http_app(server, host, token), host=host, port=port, log_level="warning", lifespan="on"
    )
    uvicorn.Server(config).run()


def caller_here() -> Caller:
    return Caller(session=f"mcp-{os.getpid()}", agent="", workspace=os.getcwd())
