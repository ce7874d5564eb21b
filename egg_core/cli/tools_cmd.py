"""``egg tools [--json]``: every host tool the plugins define, where, its params, load errors."""

from __future__ import annotations

import argparse
import json
import sys

from egg_core.cli.context import Context


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.config_files import discover_config
    from egg_core.paths import egg_home
    from egg_core.tools import collect

    home = egg_home(ctx.environ)
    resolved = discover_config(None, None, ctx.environ)
    found = collect(ctx.pm, resolved.config, home)
    enabled = set(resolved.config.tools)
    if ns.json:
        data = {
            "tools": [
                {**tool.describe(), "enabled": name in enabled}
                for name, tool in sorted(found.tools.items())
            ],
            "errors": [{"source": source, "error": why} for source, why in found.errors],
        }
        print(json.dumps(data, indent=2))
        return 0
    if not found.tools and not found.errors:
        print(f"no tools defined (put one per file in {home / 'tools'}/NAME.yaml)")
    for name, tool in sorted(found.tools.items()):
        params = " ".join(p.name if p.required else f"[{p.name}]" for p in tool.params)
        mark = "enabled here" if name in enabled else "not enabled here"
        print(f"{name} {params}".rstrip() + f"  ({mark}; {tool.source})")
        if tool.description:
            print(f"    {tool.description}")
    for source, why in found.errors:
        print(f"egg: cannot load {source}: {why}", file=sys.stderr)
    return 0
