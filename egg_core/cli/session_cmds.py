"""``egg run | attach | ls | status | kill | replay``: sessions from the command line."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.errors import EggError, UsageError
from egg_core.sanitize import visible

# ``egg run`` exits with it when the session ended before its program started — the daemon
# could not set it up (a broken tool file, a platform that failed) — as ``egg exec`` does, and
# as the daemon reports a sandbox that failed under it
from egg_core.spawn import SANDBOX_FAILED

START_TIMEOUT = 15.0


# --- argument parsing --------------------------------------------------------------------------


def configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="PATH", help="use this egg.yaml instead of discovering one")
    p.add_argument("--platform", metavar="NAME", help="sandbox platform (default: best available)")
    p.add_argument("--detach", action="store_true", help="print the session id and return")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=0,
        metavar="SECONDS",
        help="end the session after this long without input or output",
    )
    p.add_argument("--audit", action="store_true", help="record input and output (egg replay)")
    p.add_argument("--trace", action="store_true", help="record the command's syscalls")
    p.add_argument("--rows", type=int, metavar="N", help="terminal rows (default: this terminal)")
    p.add_argument("--cols", type=int, metavar="N", help="terminal columns")
    p.add_argument(
        "--dangerously-skip-permissions",
        dest="skip_permissions",
        action="store_true",
        help="pass the agent's skip-permissions flag",
    )
    p.add_argument("--detach-key", default="ctrl-\\", metavar="KEY", help=DETACH_KEY_HELP)
    p.add_argument(
        "--name",
        type=session_name,
        metavar="NAME",
        help="a name to attach, kill and show it by (unique among running sessions)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print every hole drilled for the agent (always in the session log)",
    )
    p.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        metavar="AGENT [ARGS] | -- CMD ARGS",
        help="an agent (egg plugins lists them) and its arguments, or -- and a command",
    )


def configure_attach(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "id",
        metavar="ID",
        nargs="?",
        help="session id, id prefix or name (default: the only running session, or the most "
        "recent one in this directory)",
    )
    p.add_argument("--read-only", action="store_true", help="watch without typing or resizing")
    p.add_argument("--detach-key", default="ctrl-\\", metavar="KEY", help=DETACH_KEY_HELP)
    p.add_argument(
        "--history",
        type=history_lines,
        metavar="LINES",
        help="lines of scrollback the repaint gives your terminal (default "
        f"{DEFAULT_HISTORY_LINES}; all: as much as the session keeps)",
    )


#: shared by egg run and egg attach
DETACH_KEY_HELP = (
    "key that detaches (default ctrl-\\; e.g. ctrl-a, ^A); pressed twice quickly, it is sent "
    "to the program instead"
)
DEFAULT_HISTORY_LINES = 2000


def session_name(text: str) -> str:
    """``--name``: letters, digits, ``.``, ``_``, ``-``; at most 64."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", text):
        raise argparse.ArgumentTypeError(
            f"bad session name {text!r} (letters, digits, '.', '_', '-'; at most 64)"
        )
    return text


def history_lines(text: str) -> int:
    """``--history``: a number of lines, or ``all``."""
    from egg_core.session.ring import ALL_HISTORY

    if text.strip().lower() == "all":
        return ALL_HISTORY
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of lines or 'all': {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


# --- helpers -----------------------------------------------------------------------------------


def _egg_home(ctx: Context) -> Path:
    from egg_core.paths import egg_home

    return egg_home(ctx.environ)


def _size(ns: argparse.Namespace) -> tuple[int, int]:
    from egg_core.session.client import terminal_size

    rows, cols = terminal_size(sys.stdin.fileno() if sys.stdin.isatty() else 1)
    return ns.rows or rows, ns.cols or cols


# --- egg run -----------------------------------------------------------------------------------


def run_session(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.launch import find_command, plan_launch
    from egg_core.session.client import attach, parse_detach_key
    from egg_core.session.spec import RunSpec
    from egg_core.session.store import create_session, read_json, write_json

    rest = list(ns.rest)
    agent: str | None = None
    command: list[str] = []
    agent_args: list[str] = []
    if rest[:1] == ["--"]:
        command = rest[1:]
        if not command:
            raise UsageError("no command after -- (egg run -- CMD ARGS...)")
    elif rest:
        agent, agent_args = rest[0], rest[1:]
    else:
        raise UsageError("name an agent or a command (egg run AGENT [ARGS] | egg run -- CMD)")
    detach_key = parse_detach_key(ns.detach_key)
    cwd = Path(os.getcwd())
    from egg_core.cli import resume

    resuming, agent_args = resume.parse(agent_args)
    conversation = None
    if agent is not None and resuming is not None:
        conversation = resume.find(ctx, agent, cwd, resuming or None)
    resume_id = conversation.agent_session_id if conversation else None
    session_id = None if conversation else resume.new_id(ctx, agent, command, agent_args)
    plan = plan_launch(
        ctx.pm,
        environ=ctx.environ,
        cwd=cwd,
        agent=agent,
        command=command,
        agent_args=agent_args,
        config_path=ns.config,
        platform=ns.platform,
        skip_permissions=ns.skip_permissions,
        resume_id=resume_id,
        session_id=session_id,
    )
    found = find_command(plan.argv[0], plan.env, cwd, plan.policy.tools)
    if not plan.known_agent:
        from egg_core import registry

        if found is None:
            raise registry.unknown_agent(ctx.pm, plan.profile.name)
        print(
            visible(f"egg: unknown agent {plan.profile.name!r}: running with no agent holes"),
            file=sys.stderr,
        )
    if found is None:
        raise EggError(f"{plan.argv[0]}: command not found", exit_code=127)
    holes = [
        f"{hole.kind} {hole.value} for {hole.agent}: {hole.reason}"
        for hole in (*plan.policy.drilled, *plan.policy.derived)
    ]
    if ns.verbose:
        for hole in holes:
            print(f"egg: {visible(hole)}", file=sys.stderr)
    if plan.selection.outer_boundary:
        print(
            f"egg: outer boundary: {plan.selection.outer_boundary} (no OS sandbox)", file=sys.stderr
        )
    if ns.name:
        from egg_core.session.store import list_sessions

        if any(r.alive and r.meta.get("name") == ns.name for r in list_sessions(plan.egg_home)):
            raise UsageError(f"a running session is already named {ns.name!r}")
    rows, cols = _size(ns)
    if conversation is not None:
        restored = resume.restore(ctx, plan.profile, cwd, conversation)
        print(f"egg: {visible(restored)}", file=sys.stderr)
    paths = create_session(plan.egg_home)
    if ns.name:
        write_json(paths.meta, {"name": ns.name, "state": "starting", "cwd": str(cwd)})
    with open(paths.log, "a") as log:
        log.writelines(f"hole: {hole}\n" for hole in holes)
    spec = RunSpec(
        cwd=str(cwd),
        agent=agent,
        command=command,
        agent_args=agent_args,
        config_path=str(Path(ns.config).absolute()) if ns.config else None,
        platform=ns.platform,
        skip_permissions=ns.skip_permissions,
        resume_id=resume_id,
        session_id=session_id,
        audit=ns.audit,
        trace=ns.trace,
        rows=rows,
        cols=cols,
        idle_timeout=ns.idle_timeout,
        linger=0.0 if ns.detach else 10.0,
    )
    write_json(paths.spec, spec.to_json())
    start_daemon(paths, ctx)
    _prune(plan.egg_home, ctx)
    name = plan.profile.name if agent else os.path.basename(plan.argv[0])
    explain = f"egg explain {plan.profile.name}" if agent else "egg explain"
    print(
        visible(
            f"egg: {name} in {plan.selection.platform.name}, session {paths.id}"
            + ("" if ns.detach else f" (detach with {ns.detach_key})")
            + f"; policy: {explain}"
        ),
        file=sys.stderr,
    )
    if ns.detach:
        _wait_for_the_command(paths)
        print(paths.id)
        return 0
    code = attach(paths, detach_key=detach_key, from_start=True)
    meta = read_json(paths.meta)
    for line in [*(meta.get("settings_restored") or []), *(meta.get("git_guard") or [])]:
        print(f"egg: {visible(str(line))}", file=sys.stderr)
    _resume_hint(paths)
    return code


def _resume_hint(paths: Any) -> None:
    """After the end of a session with a conversation: how to resume it in egg (the last line)."""
    from egg_core.cli import resume

    line = resume.hint(paths)
    if line is not None:
        print(line, file=sys.stderr)


def _prune(egg_home: Path, ctx: Context) -> None:
    """Ended sessions beyond the limits go (egg_core.session.housekeeping); never fatal."""
    from egg_core import guardlog
    from egg_core.session import housekeeping

    try:
        removed = housekeeping.prune(egg_home, ctx.environ)
    except Exception as exc:  # housekeeping must never stop a session from starting
        guardlog.record(egg_home, [f"pruning ended sessions failed: {exc}"])
        return
    if removed:
        guardlog.record(egg_home, [f"pruned {len(removed)} ended sessions"])


def start_daemon(paths: Any, ctx: Context) -> None:
    """Start the session daemon detached from this terminal; wait until it serves or fails."""
    from egg_core.session.store import read_json

    with open(paths.log, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "egg_core.session.daemon", str(paths.directory)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=dict(ctx.environ),
            cwd=str(paths.directory),
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if paths.sock.exists():
            return
        code = proc.poll()
        if code is not None:
            meta = read_json(paths.meta)
            if meta.get("state") == "exited":
                return  # it ran and ended already; its metadata says how
            why = meta.get("error") or _last_line(paths.log) or f"daemon exited {code}"
            raise EggError(f"session {paths.id} failed to start: {why}", exit_code=SANDBOX_FAILED)
        time.sleep(0.01)
    raise EggError(
        f"session {paths.id} did not start within {START_TIMEOUT:.0f} s (see {paths.log})",
        exit_code=SANDBOX_FAILED,
    )


def _wait_for_the_command(paths: Any) -> None:
    """``egg run --detach`` returns once the session's sandbox runs, or (exit 125, one line)
    when it failed before that: a script must not take a session that never ran anything for
    one that did. "Runs" is what the platform can tell (``command_started``): bwrap reports its
    child when it forks it, before its own mounts, so a mount that fails after that still ends
    the session with 125 and its reason later (``egg ls``, ``egg attach``). A daemon that keeps
    preparing (a launch retried as the host changed) is waited for up to START_TIMEOUT; then
    the session is left to say itself."""
    from egg_core.session.store import read_json

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        meta = read_json(paths.meta)
        if meta.get("command_started"):
            return
        if meta.get("state") in ("exited", "failed"):
            if meta.get("state") == "failed" or meta.get("exit_code") == SANDBOX_FAILED:
                why = meta.get("exit_reason") or meta.get("error") or "its sandbox failed"
                raise EggError(f"session {paths.id}: {why}", exit_code=SANDBOX_FAILED)
            return
        time.sleep(0.01)


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


# --- attach, ls, status, kill, replay ----------------------------------------------------------


def attach_session(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.session.client import attach, parse_detach_key
    from egg_core.session.store import daemon_alive, find_session, read_json

    paths = find_session(_egg_home(ctx), ns.id) if ns.id else _only_live(ctx)
    if not daemon_alive(paths):
        meta = read_json(paths.meta)
        state = meta.get("state", "gone")
        code = meta.get("exit_code")
        raise EggError(
            f"session {paths.id} is not running ({state}"
            + (f", exit code {code}" if code is not None else "")
            + ")"
        )
    code = attach(
        paths,
        read_only=ns.read_only,
        detach_key=parse_detach_key(ns.detach_key),
        history=ns.history,
    )
    _resume_hint(paths)
    return code


def _only_live(ctx: Context) -> Any:
    """``egg attach`` without an id: the only running session, or the most recent one in this
    directory; with several and none here, list them and stop (exit 2)."""
    from egg_core.session.store import list_sessions

    live = [r for r in list_sessions(_egg_home(ctx)) if r.alive]
    if len(live) == 1:
        return live[0].paths
    here = [r for r in live if r.meta.get("cwd") == os.getcwd()]
    if here:
        return here[-1].paths
    if not live:
        raise UsageError("no session is running (egg run starts one; egg ls --all lists ended)")
    from egg_core.cli.session_list_cmds import session_table

    print(session_table(live, ctx), file=sys.stderr)
    raise UsageError("several sessions are running: name one (egg attach ID)")
