"""``egg exec``: one command in the sandbox, no daemon; its exit code is egg's.

Exit codes: the command's own (128+N when killed by signal N); 125 when anything fails before the
command starts (bad config, no capable platform, sandbox set-up); 127 when the command is not
found, 126 when it cannot be executed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from egg_core.cli.context import Context
from egg_core.errors import EggError

SETUP_FAILED = 125


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="PATH", help="use this egg.yaml instead of discovering one")
    p.add_argument("--agent", metavar="NAME", help="apply this agent's holes (default: shell)")
    p.add_argument("--platform", metavar="NAME", help="sandbox platform (default: best available)")
    p.add_argument(
        "--tty", action="store_true", help="share the terminal with the command (interactive)"
    )
    p.add_argument("--network-log", metavar="PATH", help="append network decisions to this file")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    command = list(ns.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise EggError(
            "no command given (egg exec [options] -- CMD ARGS...)", exit_code=SETUP_FAILED
        )
    try:
        return _run(ns, ctx, command)
    except EggError as exc:
        if exc.exit_code not in (126, 127):
            exc.exit_code = SETUP_FAILED
        raise


def _run(ns: argparse.Namespace, ctx: Context, command: list[str]) -> int:
    from egg_core.launch import find_command, plan_launch
    from egg_core.runner import run_foreground
    from egg_core.sandbox import Launch

    cwd = Path(os.getcwd())
    plan = plan_launch(
        ctx.pm,
        environ=ctx.environ,
        cwd=cwd,
        agent=ns.agent,
        command=command,
        config_path=ns.config,
        platform=ns.platform,
    )
    if not plan.known_agent:
        print(
            f"egg: unknown agent {plan.profile.name!r}: running with no agent holes",
            file=sys.stderr,
        )
    found = find_command(command[0], plan.env, cwd)
    if found is None:
        raise EggError(f"{command[0]}: command not found", exit_code=127)
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        raise EggError(f"{command[0]}: permission denied", exit_code=126)
    work_dir = Path(tempfile.mkdtemp(prefix="egg-exec-"))
    try:
        launch = Launch(
            policy=plan.policy,
            argv=plan.argv,
            env=plan.env,
            cwd=cwd,
            work_dir=work_dir,
            egg_home=plan.egg_home,
            tty=ns.tty,
            network_log=Path(ns.network_log).absolute() if ns.network_log else None,
        )
        prepared = plan.selection.platform.prepare(launch)
        return run_foreground(prepared, tty=ns.tty)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
