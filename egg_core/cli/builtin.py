"""The built-in subcommands: their names, help and arguments. Implementations load lazily."""

from __future__ import annotations

import argparse

from egg_core.cli.registry import Command


def _config_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.config_cmd import configure

    configure(p)


def _plugins_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list of objects")


def _exec_args(p: argparse.ArgumentParser) -> None:
    from egg_core.cli.exec_cmd import configure

    configure(p)


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
            name="exec",
            help="run one command in the sandbox and return its exit code",
            configure=_exec_args,
            run="egg_core.cli.exec_cmd:run",
            usage_exit_code=125,
        ),
    ]
