"""``egg exec``: one command in the sandbox, no daemon; its exit code is egg's.

Exit codes: the command's own (128+N when killed by signal N); 125 when anything fails before the
command starts (bad config, no capable platform, sandbox set-up); 127 when the command is not
found, 126 when it cannot be executed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.errors import EggError
from egg_core.sanitize import visible

SETUP_FAILED = 125


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="PATH", help="use this egg.yaml instead of discovering one")
    p.add_argument("--agent", metavar="NAME", help="apply this agent's holes (default: shell)")
    p.add_argument("--platform", metavar="NAME", help="sandbox platform (default: best available)")
    p.add_argument(
        "--tty", action="store_true", help="share the terminal with the command (interactive)"
    )
    p.add_argument("--network-log", metavar="PATH", help="append network decisions to this file")
    p.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command to run"
    )


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
    import contextlib

    from egg_core import rundirs, snapshot, windows
    from egg_core.hostrun import RunGuard
    from egg_core.launch import find_command, plan_launch, unrunnable
    from egg_core.tools import server as toolserver
    from egg_core.tools.runner import Caller

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
            visible(f"egg: unknown agent {plan.profile.name!r}: running with no agent holes"),
            file=sys.stderr,
        )
    found = find_command(command[0], plan.env, cwd, plan.policy.tools)
    if found is None:
        raise EggError(f"{command[0]}: command not found", exit_code=127)
    shim = found == command[0] and "/" not in found
    problem = None if shim else unrunnable(found)
    if problem is not None:
        why, missing = problem
        if missing:
            raise EggError(f"{command[0]}: {why}", exit_code=127)
        raise EggError(f"{command[0]}: {why}", exit_code=126)
    # In $EGG_HOME (hidden from every sandbox), not in /tmp: a directory the sandbox sees would
    # change under the exec cache's feet. It holds the settings snapshot, restored by the next
    # egg command if this one is killed (egg_core.rundirs).
    plan.make_agent_dirs()
    work_dir = Path(rundirs.create(str(plan.egg_home)))
    settings = plan.settings_files()
    stack = contextlib.ExitStack()
    try:
        layer, staged = plan.stage_home_files(work_dir)
        snapshot.take(
            str(work_dir / "settings"), settings, plan.settings_keys, staged, plan.settings_reasons
        )
        guard = RunGuard(plan.git_state, plan.code_watch, plan.egg_home)
        tools = toolserver.serve(
            ctx.pm,
            plan,
            work_dir / "tools",
            Caller(session=f"exec-{os.getpid()}", agent=ns.agent or "", workspace=str(cwd)),
            guard,
        )
        if tools is not None:
            stack.callback(tools.stop)
        launch = plan.launch(
            work_dir=work_dir,
            tty=ns.tty,
            network_log=Path(ns.network_log).absolute() if ns.network_log else None,
            home_layer=layer,
            home_staged=list(staged),
            tools_dir=tools.directory if tools else None,
        )
        window = windows.open_window(str(plan.egg_home), *plan.write_window())
        try:
            return _launch(ns, ctx, command, plan, launch, cwd, guard)
        finally:
            windows.close_window(str(plan.egg_home), window)
            for line in guard.audit()[0]:
                print(f"egg: {visible(line)}", file=sys.stderr)
    finally:
        stack.close()
        rundirs.finish(str(work_dir), str(plan.egg_home))


def _launch(
    ns: argparse.Namespace,
    ctx: Context,
    command: list[str],
    plan: Any,
    launch: Any,
    cwd: Path,
    guard: Any,
) -> int:
    """Prepare and run; prepared again (up to MAX_ATTEMPTS) when the sandbox failed before the
    command started because the host changed under it — a host socket it was to mask vanished
    between the scan and bwrap's mounts, as happens all the time on a busy host."""
    from egg_core.runner import run_foreground
    from egg_core.spawn import MAX_ATTEMPTS, RetryLaunch

    said = ""
    for attempt in range(MAX_ATTEMPTS):
        prepared = plan.selection.platform.prepare(launch)
        if attempt == 0:
            if prepared.recipe is not None:
                remember(ctx, plan, prepared, cwd)
            else:
                _not_stored(ctx, "the platform offered no recipe for this launch")
        try:
            return run_foreground(prepared, tty=ns.tty, on_spawn=guard.set_sandbox)
        except RetryLaunch as retry:
            said = str(retry)
    raise EggError(
        f"the sandbox failed before the command started, {MAX_ATTEMPTS} times, as host sockets "
        f"came and went under it: {said.strip().splitlines()[-1] if said.strip() else '?'}",
        exit_code=SETUP_FAILED,
    )


def remember(ctx: Context, plan: Any, prepared: Any, cwd: Path) -> None:
    """Store this launch for the fast path. Its facts are what the full path looked at, as
    recorded while it decided (:mod:`egg_core.observe`), and the code that decided."""
    from egg_core import execcache as ec
    from egg_core import observe

    environ = ctx.environ
    recorder = observe.active()
    if recorder is None or environ.get(ec.CACHE_ENV) == "0":
        return
    from egg_core.facts import origin_of

    # the code that will run the launch from the cache, admitted by its file, not its name:
    # imported first, so that what it imports is among the code recorded below
    runner = str(prepared.recipe.get("runner", ""))
    runner_file = origin_of(runner)
    if runner_file is None:
        _not_stored(ctx, f"the runner {runner} has no file")
        return
    # the code that decided and runs: egg's core and every loaded plugin's package (and the
    # runner's, its own file among them), whoever's it is
    packages = {"egg_core", runner.split(".")[0]}
    packages |= {name.split(".")[0] for name in _plugin_modules(ctx)}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in packages and getattr(module, "__file__", None):
            observe.content(str(module.__file__))
    env_copy = [n for n, v in prepared.env.items() if environ.get(n) == v]
    env_set = {n: v for n, v in prepared.env.items() if environ.get(n) != v}
    if not recorder.consistent:
        _, subject = recorder.conflicts[0]
        _not_stored(ctx, f"{subject} changed while egg looked at it")
        return
    facts = recorder.facts()
    # only a runner that asks before its command starts may leave facts to then
    if prepared.recipe.get("admits"):
        read_first = [runner_file, *_recipe_files(prepared.recipe)]
        before, later = ec.split_facts(facts, prepared.recipe.get("argv", ()), read_first)
    else:
        before, later = facts, []
    entry = {
        **prepared.recipe,
        "runner_file": runner_file,
        "git": plan.git_state,
        "settings": plan.settings_files(),
        "settings_keys": {path: list(keys) for path, keys in plan.settings_keys.items()},
        "settings_reasons": dict(plan.settings_reasons),
        "code_watch": list(plan.code_watch),
        "window": list(plan.write_window()),
        "facts": later,
        "spawn_facts": before,
        "env_copy": env_copy,
        "env_set": env_set,
    }
    base = ec.base_key(list(ctx.argv), str(cwd))
    raw = environ.raw if isinstance(environ, observe.RecordingEnviron) else environ
    failed = ec.store(raw, base, entry, list(recorder.env_read), recorder.env_listed)
    if failed is not None:
        _not_stored(ctx, failed)


def _recipe_files(recipe: dict[str, Any]) -> list[str]:
    """The files a recipe names outside its command line (a platform's runner reads them
    before its spawn: linux-ns's filters, its network's bridge)."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if value.startswith("/"):
                found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk({key: value for key, value in recipe.items() if key != "argv"})
    return found


def _not_stored(ctx: Context, why: str) -> None:
    """Why this launch is not kept, when ``EGG_EXEC_CACHE=debug`` asks (a test that expects a
    later hit says what it got instead)."""
    from egg_core import execcache as ec

    if ctx.environ.get(ec.CACHE_ENV) == "debug":
        print(visible(f"egg: exec cache not stored: {why}"), file=sys.stderr)


def _plugin_modules(ctx: Context) -> set[str]:
    """Modules of the plugins that are loaded (third-party code counts as much as ours)."""
    names = set()
    for report in ctx.pm.reports():
        plugin = ctx.pm.get_plugin(report.name)
        module = getattr(plugin, "__name__", None)
        if isinstance(module, str):
            names.add(module)
    return names
