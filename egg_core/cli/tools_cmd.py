"""``egg tools [--json]``: every host tool the plugins define, where, its params, load errors.

Names, descriptions, sources and errors are printed through :func:`egg_core.sanitize.visible`
(an error quotes what a file holds; a plugin's tools may come from anywhere)."""

from __future__ import annotations

import argparse
import sys

from egg_core.cli.context import Context
from egg_core.sanitize import json_text, visible


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.config.files import discover_config
    from egg_core.paths import egg_home
    from egg_core.tools.model import collect

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
        print(json_text(data))
        return 0
    if not found.tools and not found.errors:
        print(visible(f"no tools defined (put one per file in {home / 'tools'}/NAME.yaml)"))
    for name, tool in sorted(found.tools.items()):
        mark = "enabled here" if name in enabled else "not enabled here"
        print(visible(f"{tool.usage()}  ({mark}; {tool.source})"))
        if tool.description:
            print(f"    {visible(tool.description)}")
    for source, why in found.errors:
        print(visible(f"egg: cannot load {source}: {why}"), file=sys.stderr)
    return 0
