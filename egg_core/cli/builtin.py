"""The built-in subcommands: their names, help and arguments. Implementations load lazily."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from egg_core.cli.registry import Command


def _config_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.config_cmd import configure

    configure(p)


def _plugins_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list of objects")


def _exec_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.exec_cmd import configure

    configure(p)


def _explain_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.explain_cmd import configure

    configure(p)


def _doctor_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.doctor_cmd import configure

    configure(p)


def _session_args(name: str) -> Callable[[argparse.ArgumentParser], None]:
    def configure(p: argparse.ArgumentParser) -> None:
        from egg_core.cli import session_cmds

        getattr(session_cmds, f"configure_{name}")(p)

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
            configure=_config_args,
            run="egg_core.cli.config_cmd:run",
        ),
        Command(
            name="explain",
            help="show the effective policy, every hole with its reason, and the command",
            configure=_explain_args,
            run="egg_core.cli.explain_cmd:run",
        ),
        Command(
            name="exec",
            help="run one command in the sandbox and return its exit code",
            configure=_exec_args,
            run="egg_core.cli.exec_cmd:run",
            usage_exit_code=125,
        ),
        Command(
            name="run",
            help="start an agent (or -- CMD) in a sandboxed session and attach to it",
            configure=_session_args("run"),
            run="egg_core.cli.session_cmds:run_session",
        ),
        Command(
            name="attach",
            help="attach this terminal to a running session",
            configure=_session_args("attach"),
            run="egg_core.cli.session_cmds:attach_session",
        ),
        Command(
            name="ls",
            help="list sessions",
            configure=_session_args("ls"),
            run="egg_core.cli.session_cmds:list_sessions_cmd",
        ),
        Command(
            name="status",
            help="show a session's state (--screen: its current screen)",
            configure=_session_args("status"),
            run="egg_core.cli.session_cmds:status_session",
        ),
        Command(
            name="kill",
            help="end a session (SIGTERM, then SIGKILL)",
            configure=_session_args("kill"),
            run="egg_core.cli.session_cmds:kill_session",
        ),
        Command(
            name="replay",
            help="play back a session's audit log",
            configure=_session_args("replay"),
            run="egg_core.cli.session_cmds:replay_session",
        ),
        Command(
            name="doctor",
            help="what this host can enforce, per platform, and how to fix what it cannot",
            configure=_doctor_args,
            run="egg_core.cli.doctor_cmd:run",
        ),
    ]
