"""``egg doctor``: every registered platform, whether it can run here, and what it can enforce,
whether ``$EGG_HOME`` is usable (doctor runs when it is not: it says what to do), whether the
``egg`` script itself slows every command down, and the guard log's latest lines (they quote
paths a sandbox chose: printed through :func:`egg_core.sanitize.visible`, like every line
here)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from egg_core.cli.context import Context
from egg_core.sanitize import json_text, visible


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def collect(ctx: Context) -> dict[str, Any]:
    from egg_core import registry

    platforms = []
    failing: dict[str, list[str]] = {}
    for name, registered in sorted(registry.platforms(ctx.pm).items()):
        platform = registered.obj
        ok, reason = platform.available()
        checks = platform.diagnose() if ok or platform.diagnoses_when_unavailable else []
        for check in checks:
            if not check.ok or check.note:
                for feature in check.blocks:
                    failing.setdefault(feature, []).append(f"{name}: {check.name}")
        platforms.append(
            {
                "name": name,
                "plugin": registered.plugin,
                "description": platform.description,
                "available": ok,
                "reason": reason,
                "outer_boundary": platform.outer_boundary,
                "capabilities": sorted(platform.capabilities),
                "checks": [c.to_json() for c in checks],
            }
        )
    from egg_core import guardlog
    from egg_core.paths import egg_home, egg_home_problem

    home = egg_home(ctx.environ)
    return {
        "platforms": platforms,
        "failing_features": failing,
        "egg_home": {"path": str(home), "problem": egg_home_problem(home)},
        "guard_log": guardlog.recent(home),
        "launcher": launcher_problem(sys.argv[0]),
    }


def launcher_problem(path: str) -> str | None:
    """What slows every egg command down in the script that started this one (``egg``), if
    anything: the console script that pip before 25.2 writes imports ``re`` before egg's first
    line runs — 3 to 6 ms of every call, a quarter of an exec cache hit. egg ships a launcher
    of its own (``launcher/egg``) whatever pip installs it, so such a script is an older egg's.
    None for a launcher that does not (or when egg was not started by a script)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(2048)
    except OSError:
        return None
    if not head.startswith(b"#!") or b"\nimport re\n" not in head:
        return None
    return (
        f"{path} imports re before egg starts (a launcher pip older than 25.2 wrote for an "
        "older egg): every egg command starts 3-6 ms later; reinstall egg to replace it"
    )


def _say(line: str) -> None:
    print(visible(line, multiline=True))


def run(ns: argparse.Namespace, ctx: Context) -> int:
    data = collect(ctx)
    if ns.json:
        print(json_text(data))
        return 0
    for platform in data["platforms"]:
        mark = "ok" if platform["available"] else "unavailable"
        _say(f"{platform['name']} [{mark}] {platform['description']}")
        _say(f"  {platform['reason']}")
        if platform["capabilities"]:
            _say(f"  enforces: {', '.join(platform['capabilities'])}")
        withheld = [f for c in platform["checks"] if c.get("note") for f in c.get("blocks", [])]
        if withheld:
            _say(f"  not for this user: {', '.join(withheld)} (see the note below)")
        for check in platform["checks"]:
            mark = "note" if check.get("note") else "ok  " if check["ok"] else "FAIL"
            _say(f"  {mark} {check['name']}: {check['detail']}")
            if check["fix"] and (not check["ok"] or check.get("note")):
                _say(f"       fix: {check['fix']}")
    failing = data["failing_features"]
    if failing:
        _say("policy features that would fail here:")
        for feature, why in sorted(failing.items()):
            label = "every sandboxed policy" if feature == "*" else feature
            _say(f"  {label}: {'; '.join(why)}")
    else:
        _say("every policy feature can be enforced here")
    if data["egg_home"]["problem"]:
        _say(f"FAIL {data['egg_home']['problem']}")
    if data["launcher"]:
        _say(f"note {data['launcher']}")
    if data["guard_log"]:
        _say("persistence guard: what could not be done (latest last; $EGG_HOME/guard.log):")
        for line in data["guard_log"]:
            _say(f"  {line}")
    return 0
