"""``egg mcp [--tool NAME]... [--http HOST:PORT --token-file PATH]``: the host tools over MCP."""

from __future__ import annotations

import argparse
import sys

from egg_core.cli.context import Context
from egg_core.errors import EggError, UsageError
from egg_core.sanitize import visible


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tool",
        action="append",
        metavar="NAME",
        help="serve only this tool (repeatable; default: every tool)",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at /mcp instead of stdio (needs --token-file)",
    )
    p.add_argument("--token-file", metavar="PATH", help="the bearer token HTTP clients must send")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise EggError(
            "egg mcp needs the official MCP SDK: pip install 'egg-sandbox[mcp]'"
        ) from None
    from egg_core import mcpfront
    from egg_core.config.files import discover_config
    from egg_core.loopback import is_loopback
    from egg_core.paths import egg_home
    from egg_core.tools.model import ToolSet, collect

    home = egg_home(ctx.environ)
    config = discover_config(None, None, ctx.environ).config

    def load() -> ToolSet:
        return collect(ctx.pm, config, home)

    found = load()
    for source, why in found.errors:
        print(visible(f"egg: cannot load {source}: {why}"), file=sys.stderr)
    if ns.tool:
        _, problems = found.enabled(ns.tool)
        if problems:
            raise UsageError(problems[0])
    front = mcpfront.ToolFront(load, ns.tool, mcpfront.caller_here())
    server = mcpfront.build_server(front)
    if ns.http is None:
        if ns.token_file:
            raise UsageError("--token-file goes with --http")
        import anyio

        anyio.run(mcpfront.serve_stdio, server)
        return 0
    host, _, port_text = ns.http.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--http {ns.http}: expected HOST:PORT (e.g. 127.0.0.1:8765)")
    if not ns.token_file:
        raise UsageError("--http needs --token-file PATH (the bearer token clients must send)")
    try:
        token = mcpfront.read_token(ns.token_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not is_loopback(host):
        print(
            f"egg: serving MCP on {host}, not loopback: anyone who can reach it with the token "
            "runs your tools",
            file=sys.stderr,
        )
    print(
        f"egg: MCP on http://{ns.http}{mcpfront.PATH} ({len(front.tools())} tools)", file=sys.stderr
    )
    mcpfront.serve_http(server, host, int(port_text), token)
    return 0
