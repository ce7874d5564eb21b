"""``egg plugins``: what is installed, what loaded, and why something did not."""

from __future__ import annotations

import argparse

from egg_core.cli.context import Context
from egg_core.cli.table import render_table
from egg_core.sanitize import json_text, visible


def run(ns: argparse.Namespace, ctx: Context) -> int:
    reports = ctx.pm.reports()
    if ns.json:
        print(json_text([r.to_json() for r in reports]))
        return 0
    rows = [
        [
            r.name,
            r.distribution or "-",
            r.version or "-",
            r.status,
            ", ".join(h.removeprefix("egg_") for h in r.hooks) or "-",
        ]
        for r in reports
    ]
    print(render_table(["NAME", "DISTRIBUTION", "VERSION", "STATUS", "HOOKS"], rows))
    for r in reports:
        if r.error:
            print(visible(f"{r.name}: {r.error}"))
    return 0
