"""The built-in subcommands: their names, help and arguments. Implementations load lazily."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from egg_core.commands import Command


def _plugins_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list of objects")


def _tool_call_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "words",
        nargs=argparse.REMAINDER,
        metavar="NAME [ARGS] | --list [--json]",
        help="the tool and its arguments, or --list for the tools this sandbox may call",
    )


def tool_call(ns: argparse.Namespace, ctx: object) -> int:
    """``egg tool-call``: usually answered on the fast path before the CLI loads (cli/__init__);
    this is the same client, for ``egg --debug tool-call``."""
    from egg_core.tools import client as toolclient

    return toolclient.main(list(ns.words))


def _configure(
    module: str, function: str = "configure"
) -> Callable[[argparse.ArgumentParser], None]:
    """A command's argument set-up, importing its module only when that command is parsed."""

    def configure(p: argparse.ArgumentParser) -> None:
        getattr(importlib.import_module(module), function)(p)

    return configure


def builtin_commands() -> list[Command]:
    return [
        Command(
            name="plugins",
            help="list installed plugins, the hooks they implement, and load errors",
            configure=_plugins_args,
            run="egg_core.cli.plugins_cmd:run",
        ),
        Command(
            name="config",
            help="show, validate or create egg.yaml",
            configure=_configure("egg_core.cli.config_cmd"),
            run="egg_core.cli.config_cmd:run",
        ),
        Command(
            name="explain",
            help="show the effective policy, every hole with its reason, and the command",
            configure=_configure("egg_core.cli.explain_cmd"),
            run="egg_core.cli.explain_cmd:run",
        ),
        Command(
            name="exec",
            help="run one command in the sandbox and return its exit code",
            configure=_configure("egg_core.cli.exec_cmd"),
            run="egg_core.cli.exec_cmd:run",
            usage_exit_code=125,
        ),
        Command(
            name="run",
            help="start an agent (or -- CMD) in a sandboxed session and attach to it",
            configure=_configure("egg_core.cli.session_cmds", "configure_run"),
            run="egg_core.cli.session_cmds:run_session",
        ),
        Command(
            name="attach",
            help="attach this terminal to a running session",
            configure=_configure("egg_core.cli.session_cmds", "configure_attach"),
            run="egg_core.cli.session_cmds:attach_session",
        ),
        Command(
            name="ls",
            help="list sessions",
            configure=_configure("egg_core.cli.session_list_cmds", "configure_ls"),
            run="egg_core.cli.session_list_cmds:list_sessions_cmd",
        ),
        Command(
            name="status",
            help="show a session's state (--screen: its current screen)",
            configure=_configure("egg_core.cli.session_list_cmds", "configure_status"),
            run="egg_core.cli.session_list_cmds:status_session",
        ),
        Command(
            name="kill",
            help="end a session (SIGTERM, then SIGKILL)",
            configure=_configure("egg_core.cli.session_list_cmds", "configure_kill"),
            run="egg_core.cli.session_list_cmds:kill_session",
        ),
        Command(
            name="rm",
            help="remove ended sessions (a captured conversation stays unless --with-history)",
            configure=_configure("egg_core.cli.session_list_cmds", "configure_rm"),
            run="egg_core.cli.session_list_cmds:rm_sessions",
        ),
        Command(
            name="history",
            help="the agents' conversations captured here (show SESSION: one of them, as text)",
            configure=_configure("egg_core.cli.history_cmd"),
            run="egg_core.cli.history_cmd:run",
        ),
        Command(
            name="replay",
            help="play back a session's audit log",
            configure=_configure("egg_core.cli.session_list_cmds", "configure_replay"),
            run="egg_core.cli.session_list_cmds:replay_session",
        ),
        Command(
            name="policy",
            help="policy suggest: the egg.yaml entries a run needed, from its network log, trace",
            configure=_configure("egg_core.cli.policy_cmd"),
            run="egg_core.cli.policy_cmd:run",
        ),
        Command(
            name="tools",
            help="the host tools a sandbox may be given (egg.yaml tools:), where each is defined",
            configure=_configure("egg_core.cli.tools_cmd"),
            run="egg_core.cli.tools_cmd:run",
        ),
        Command(
            name="mcp",
            help="serve the host tools over MCP (stdio, or --http with a bearer token)",
            configure=_configure("egg_core.cli.mcp_cmd"),
            run="egg_core.cli.mcp_cmd:run",
        ),
        Command(
            name="tool-call",
            help="inside a sandbox: call a host tool it may use (--list: which)",
            configure=_tool_call_args,
            run="egg_core.cli.builtin:tool_call",
        ),
        Command(
            name="doctor",
            help="what this host can enforce, per platform, and how to fix what it cannot",
            configure=_configure("egg_core.cli.doctor_cmd"),
            run="egg_core.cli.doctor_cmd:run",
            uses_egg_home=False,
        ),
    ]
