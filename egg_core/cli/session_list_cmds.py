"""``egg ls``, ``egg status``, ``egg kill``, ``egg rm`` and ``egg replay``: looking at sessions
and ending or removing them (``egg run`` and ``egg attach`` live in :mod:`session_cmds`).

A session's directory, command, exit reason and screen may all hold what a sandbox chose: each
is printed through :func:`egg_core.sanitize.visible`, and ``--json`` is ASCII. ``egg replay``
alone writes the program's own output as it was recorded: it is that terminal, replayed."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.errors import EggError
from egg_core.sanitize import json_text, visible


def _egg_home(ctx: Context) -> Path:
    from egg_core.paths import egg_home

    return egg_home(ctx.environ)


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


def session_table(records: list[Any], ctx: Context) -> str:
    from egg_core.cli.table import render_table
    from egg_core.history import has_capture
    from egg_core.session.listing import live_status

    rows = []
    for r in records:
        live = live_status(r) if r.alive else {}
        code = r.meta.get("exit_code")
        state = r.state
        if not r.alive and r.meta.get("exit_reason") in ("killed by egg kill", "idle timeout"):
            state = "killed" if r.meta["exit_reason"] == "killed by egg kill" else "idle timeout"
        elif code is not None and not r.alive:
            state += f" ({code})"
        if not r.alive and has_capture(r.paths.directory):
            state += ", resumable"  # egg run AGENT --resume ID
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
    from egg_core.session.listing import records as listed
    from egg_core.session.listing import row

    records = listed(_egg_home(ctx), ended=ns.all)
    if ns.json:
        print(json_text([row(r) for r in records]))
        return 0
    if not records:
        print("no sessions" if ns.all else "no running sessions (egg ls --all includes ended ones)")
        return 0
    print(session_table(records, ctx))
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
        print("\n".join(visible(str(line)) for line in screen))
        if data.get("screen_note"):
            print(f"egg: {visible(str(data['screen_note']))}", file=sys.stderr)
        return 0
    if ns.json:
        print(json_text(data))
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
        print(f"{key:11} {visible(str(value))}")
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
        print(visible(f"session {record.paths.id}: {done}"))
    for line in refused:
        print(f"egg: {visible(line)}", file=sys.stderr)
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
