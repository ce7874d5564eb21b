"""``egg run | attach | ls | status | kill | replay``: sessions from the command line."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.errors import EggError, UsageError

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


def configure_ls(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="include sessions that have ended")
    p.add_argument("--json", action="store_true", help="print JSON")


def configure_status(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="session id, id prefix or name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--screen", action="store_true", help="print the current screen as text")


def configure_kill(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="session id, id prefix or name")


def configure_rm(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", metavar="ID", nargs="+", help="ended sessions (id, prefix or name)")
    p.add_argument(
        "--with-history",
        action="store_true",
        help="remove their captured conversations too (kept otherwise)",
    )


def configure_replay(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="session id, id prefix or name")
    p.add_argument(
        "--speed",
        type=replay_speed,
        default=1.0,
        help="playback speed, more than 0 (2: twice as fast); --no-delay plays it at once",
    )
    p.add_argument("--no-delay", action="store_true", help="no pauses at all")


def replay_speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


# --- helpers -----------------------------------------------------------------------------------


def _egg_home(ctx: Context) -> Path:
    from egg_core.paths import egg_home

    return egg_home(ctx.environ)


def recover_crashed_sessions(egg_home: Path) -> list[str]:
    """Restore the settings snapshots of sessions whose daemon died without restoring them, and
    of ``egg exec`` runs that were killed. Never raises: one broken session must not make every
    egg command fail."""
    from egg_core import windows

    messages = []
    for recover in (_recover_sessions, _recover_exec_runs):
        try:
            messages += recover(egg_home)
        except Exception as exc:
            messages.append(f"recovering crashed runs failed: {type(exc).__name__}: {exc}")
    windows.close_orphans(str(egg_home))
    return messages


def _recover_exec_runs(egg_home: Path) -> list[str]:
    from egg_core import guardlog, rundirs, snapshot

    messages = []
    for run_dir in rundirs.orphans(str(egg_home)):
        settings = os.path.join(run_dir, "settings")
        if snapshot.pending(settings):
            changed = snapshot.restore(settings)
            guardlog.record(egg_home, snapshot.failures(changed))
            detail = "; ".join(changed) if changed else "nothing had changed"
            messages.append(f"an egg exec was killed; settings restored ({detail})")
        rundirs.remove(run_dir)
    return messages


def _recover_sessions(egg_home: Path) -> list[str]:
    from egg_core import guardlog, snapshot
    from egg_core.session.store import (
        SessionPaths,
        clear_live,
        daemon_alive,
        sessions_root,
        update_meta,
    )

    live = sessions_root(egg_home) / ".live"
    try:
        names = sorted(os.listdir(live))
    except OSError:
        return []
    messages = []
    crashed = False
    for name in names:
        paths = SessionPaths(sessions_root(egg_home) / name)
        if daemon_alive(paths):
            continue
        crashed = True
        if paths.directory.is_dir():
            changed = snapshot.restore(str(paths.settings))
            snapshot.remove_tree(str(paths.directory / "home"))  # egg_core.homefiles.LAYER
            guardlog.record(egg_home, snapshot.failures(changed))
            update_meta(paths, state="crashed", ended=time.time())
            paths.sock.unlink(missing_ok=True)
            detail = "; ".join(changed) if changed else "nothing had changed"
            messages.append(f"session {name}: its daemon died; settings restored ({detail})")
        clear_live(paths)
    if crashed:
        _sweep_platforms()
    return messages


def _sweep_platforms() -> None:
    """What the dead daemons' platforms left on the host (cgroups): removed, and logged for
    ``egg doctor`` rather than printed (it is housekeeping, not news)."""
    from egg_core import guardlog, registry
    from egg_core.paths import egg_home
    from egg_core.plugins import get_plugin_manager

    for registered in registry.platforms(get_plugin_manager()).values():
        guardlog.record(egg_home(), registered.obj.sweep())


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
    )
    found = find_command(plan.argv[0], plan.env, cwd)
    if not plan.known_agent:
        if found is None:
            raise unknown_agent(plan.profile.name, ctx)
        print(
            f"egg: unknown agent {plan.profile.name!r}: running with no agent holes",
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
            print(f"egg: {hole}", file=sys.stderr)
    if plan.selection.outer_boundary:
        print(
            f"egg: outer boundary: {plan.selection.outer_boundary} (no OS sandbox)", file=sys.stderr
        )
    if ns.name:
        from egg_core.session.store import list_sessions

        if any(r.alive and r.meta.get("name") == ns.name for r in list_sessions(plan.egg_home)):
            raise UsageError(f"a running session is already named {ns.name!r}")
    rows, cols = _size(ns)
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
        f"egg: {name} in {plan.selection.platform.name}, session {paths.id}"
        + ("" if ns.detach else f" (detach with {ns.detach_key})")
        + f"; policy: {explain}",
        file=sys.stderr,
    )
    if ns.detach:
        print(paths.id)
        return 0
    code = attach(paths, detach_key=detach_key, from_start=True)
    meta = read_json(paths.meta)
    for line in [*(meta.get("settings_restored") or []), *(meta.get("git_guard") or [])]:
        print(f"egg: {line}", file=sys.stderr)
    return code


def unknown_agent(name: str, ctx: Context) -> EggError:
    """No agent of that name and no command either: say what it might have meant."""
    import difflib

    from egg_core import registry
    from egg_core.errors import UnknownNameError

    agents = sorted(registry.agents(ctx.pm))
    close = difflib.get_close_matches(name, agents, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"agents: {', '.join(agents)}"
    return UnknownNameError(f"unknown agent {name!r}, and no command of that name ({hint})")


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
            raise EggError(f"session {paths.id} failed to start: {why}")
        time.sleep(0.01)
    raise EggError(
        f"session {paths.id} did not start within {START_TIMEOUT:.0f} s (see {paths.log})"
    )


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
    return attach(
        paths,
        read_only=ns.read_only,
        detach_key=parse_detach_key(ns.detach_key),
        history=ns.history,
    )


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
    print(_table(live, ctx), file=sys.stderr)
    raise UsageError("several sessions are running: name one (egg attach ID)")


def _table(records: list[Any], ctx: Context) -> str:
    from egg_core.cli.table import render_table

    rows = []
    for r in records:
        live = _live_status(r) if r.alive else {}
        code = r.meta.get("exit_code")
        state = r.state
        if not r.alive and r.meta.get("exit_reason") in ("killed by egg kill", "idle timeout"):
            state = "killed" if r.meta["exit_reason"] == "killed by egg kill" else "idle timeout"
        elif code is not None and not r.alive:
            state += f" ({code})"
        rows.append(
            [
                r.paths.id,
                str(r.meta.get("name") or "-"),
                str(r.meta.get("agent") or "-"),
                state,
                str(live.get("clients", "-")),
                _duration(live["idle"]) if "idle" in live else "-",
                _home_relative(str(r.meta.get("cwd") or "-"), ctx),
            ]
        )
    return render_table(["ID", "NAME", "AGENT", "STATE", "CLIENTS", "IDLE", "DIRECTORY"], rows)


def _live_status(record: Any) -> dict[str, Any]:
    """What a running daemon says about itself (clients, idle); {} if it does not answer."""
    from egg_core.session.client import Connection

    try:
        conn = Connection(record.paths, timeout=1.0)
    except EggError:
        return {}
    try:
        return conn.request_status()
    except (EggError, OSError, ValueError):
        return {}
    finally:
        conn.close()


def _duration(seconds: Any) -> str:
    """``4 s``, ``3 min``, ``2.5 h``, ``3 d``."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return "-"
    if value < 60:
        return f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.0f} min"
    if value < 86400:
        return f"{value / 3600:.1f} h"
    return f"{value / 86400:.1f} d"


def _home_relative(path: str, ctx: Context) -> str:
    home = ctx.environ.get("HOME", "")
    if home and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def list_sessions_cmd(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.session.store import list_sessions

    records = [
        r for r in list_sessions(_egg_home(ctx)) if (ns.all or r.alive) and not r.meta.get("pruned")
    ]
    if ns.json:
        print(
            json.dumps([{"id": r.paths.id, "state": r.state, **r.meta} for r in records], indent=2)
        )
        return 0
    if not records:
        print("no sessions" if ns.all else "no running sessions (egg ls --all includes ended ones)")
        return 0
    print(_table(records, ctx))
    return 0


def status_session(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.session.client import Connection
    from egg_core.session.store import daemon_alive, find_session, read_json

    paths = find_session(_egg_home(ctx), ns.id)
    if not daemon_alive(paths):
        meta = read_json(paths.meta)
        data = {"id": paths.id, "state": meta.get("state", "gone"), **meta}
    else:
        # a screen may take the daemon its render budget, and others may be queued before it
        conn = Connection(paths, timeout=15.0 if ns.screen else 5.0)
        try:
            data = conn.request_status(screen=ns.screen)
        finally:
            conn.close()
        data["state"] = "running"
    if ns.screen:
        screen = data.get("screen")
        if screen is None:
            raise EggError(f"session {paths.id} has no screen to show")
        print("\n".join(screen))
        if data.get("screen_note"):
            print(f"egg: {data['screen_note']}", file=sys.stderr)
        return 0
    if ns.json:
        print(json.dumps(data, indent=2))
        return 0
    for key in (
        "id",
        "name",
        "state",
        "pid",
        "agent",
        "command",
        "platform",
        "cwd",
        "uptime",
        "idle",
        "clients",
        "bytes",
        "exit_code",
        "exit_reason",
    ):
        value = data.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        elif key in ("uptime", "idle"):
            value = _duration(value)
        print(f"{key:11} {value}")
    return 0


def kill_session(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.session import protocol as p
    from egg_core.session.client import Connection
    from egg_core.session.store import daemon_alive, daemon_pid, find_session

    paths = find_session(_egg_home(ctx), ns.id)
    if not daemon_alive(paths):
        raise EggError(f"session {paths.id} is not running")
    try:
        conn = Connection(paths)
        conn.send(p.KILL, p.pack_kill(signal.SIGTERM))
        conn.close()
    except EggError:
        pid = daemon_pid(paths)
        if pid:
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while daemon_alive(paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    if daemon_alive(paths):
        pid = daemon_pid(paths)
        if pid:
            os.kill(pid, signal.SIGKILL)
    print(f"killed session {paths.id}")
    return 0


def rm_sessions(ns: argparse.Namespace, ctx: Context) -> int:
    """``egg rm ID…``: remove ended sessions; a running one is refused (exit 2), the others go."""
    from egg_core.session import housekeeping
    from egg_core.session.store import SessionRecord, daemon_alive, find_session, read_json

    home = _egg_home(ctx)
    records = []
    for ident in ns.ids:
        paths = find_session(home, ident)
        records.append(SessionRecord(paths, read_json(paths.meta), daemon_alive(paths)))
    ended, refused = housekeeping.removable(records)
    for record in ended:
        done = housekeeping.remove(record, with_history=ns.with_history)
        print(f"session {record.paths.id}: {done}")
    for line in refused:
        print(f"egg: {line}", file=sys.stderr)
    return 2 if refused else 0


def replay_session(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.session.audit import OUTPUT, read_records
    from egg_core.session.store import find_session

    paths = find_session(_egg_home(ctx), ns.id)
    if not paths.audit.exists():
        raise EggError(f"session {paths.id} has no audit log (run it with --audit)")
    previous: float | None = None
    out = sys.stdout.buffer
    for stamp, kind, data in read_records(paths.audit):
        if kind != OUTPUT:
            continue
        if previous is not None and not ns.no_delay:
            time.sleep(min(max(stamp - previous, 0) / ns.speed, 5.0))
        previous = stamp
        out.write(data)
        out.flush()
    return 0
