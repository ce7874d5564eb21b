"""``egg policy suggest [SESSION | --log FILE ...] [--json]``: the allowlist a run needed, from its
network log (see :mod:`egg_core.suggest`). Observe first (``network: {mode: observe}``), then
suggest, then switch to ``mode: enforce``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from egg_core.cli.context import Context
from egg_core.errors import EggError, UsageError

if TYPE_CHECKING:
    from egg_core.config_files import ResolvedConfig
    from egg_core.suggest import Suggestion


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "words",
        nargs="*",
        metavar="suggest [SESSION]",
        help="suggest allowlist entries from a session's network log (default: the newest here)",
    )
    p.add_argument(
        "--log",
        action="append",
        metavar="FILE",
        help="read this network log instead of a session's (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    words = list(ns.words)
    if words[:1] != ["suggest"]:
        raise UsageError("egg policy has one command: suggest (egg policy suggest [SESSION])")
    if len(words) > 2:
        raise UsageError("egg policy suggest takes at most one SESSION")
    if len(words) == 2 and ns.log:
        raise UsageError("give a SESSION or --log FILE, not both")
    from egg_core import suggest
    from egg_core.config_files import discover_config

    logs = [Path(p) for p in ns.log] if ns.log else [_session_log(ctx, words[1:])]
    read = []
    corrupt = 0
    for path in logs:
        try:
            records, bad = suggest.read_log(path)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read the network log: {exc.strerror}") from None
        read.append((str(path), records))
        corrupt += bad
    config = discover_config(None, None, ctx.environ)
    domains = config.config.network.domains
    found = suggest.suggest(read, domains, corrupt)
    if ns.json:
        print(json.dumps({**found.to_json(), "config": str(config.path or "")}, indent=2))
        return 0
    _print(found, config, [name for name, _ in read])
    return 0


def _session_log(ctx: Context, words: list[str]) -> Path:
    from egg_core.paths import egg_home
    from egg_core.session.store import find_session, list_sessions

    home = egg_home(ctx.environ)
    if words:
        try:
            paths = find_session(home, words[0])
        except EggError as exc:
            raise UsageError(exc.message) from None
        if not paths.network_log.is_file():
            raise UsageError(
                f"session {paths.id} has no network log (it made no request through the proxy)"
            )
        return paths.network_log
    here = [
        r
        for r in list_sessions(home)
        if r.meta.get("cwd") == os.getcwd() and r.paths.network_log.is_file()
    ]
    if not here:
        raise UsageError(
            "no session here has a network log: pass SESSION (egg ls --all) or --log FILE"
        )
    return here[-1].paths.network_log


def _print(found: Suggestion, config: ResolvedConfig, sources: list[str]) -> None:
    from egg_core.cli.table import render_table

    print(f"read {found.records} requests from {', '.join(sources)}")
    if found.corrupt_lines:
        print(
            f"egg: skipped {found.corrupt_lines} lines that are not decision records",
            file=sys.stderr,
        )
    if found.hosts:
        print("\nenforce mode would have refused:")
        rows = [
            [
                h.host + ("  (did not resolve)" if h.unresolved else ""),
                ",".join(str(p) for p in sorted(h.ports)),
                str(h.count),
                h.first,
                h.last,
            ]
            for h in found.hosts
        ]
        print(render_table(["HOST", "PORTS", "COUNT", "FIRST", "LAST"], rows))
    if found.refused:
        print("\nnever suggested:")
        for r in found.refused:
            print(f"  {r.host}:{r.port} ({r.count}x): {r.why}")
    where = config.path or "egg.yaml"
    if found.add:
        print(f"\n{where}: add to network:")
        for entry in found.add:
            print(f"+  - {entry}")
        print("\nthen set network.mode: enforce (observe mode allows everything)")
    else:
        print("\nnothing to add: the allowlist already covers what the run needed")
