"""What the home layer costs an agent's launch (egg_core.homefiles), interleaved in one run.

Claude Code replaces ``~/.claude.json`` atomically, so its sandbox gets a per-run layer over the
home: one bind per entry at the top of the home, a copy of the file, and a write-back after the
run. Baseline: the same ``egg exec --agent claude -- /bin/true`` with the layer off (``rw: ~``
makes the home itself writable, so nothing is staged) — the layer's cost is the difference —
and raw bubblewrap. Measured with 10, 100 and 500 entries at the top of the home (a typical home
has 30 to 80). Full resolution every call (``EGG_EXEC_CACHE=0``): claude's launches need the
proxy, which the exec cache does not hold.

Run from a clean clone after ./scripts/setup:  .venv/bin/python bench/home_layer.py [--write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, write_section
from spawn import RAW, once

ENTRIES = (10, 100, 500)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    egg = shutil.which("egg", path=str(Path(sys.executable).parent)) or "egg"
    rows = []
    for count in ENTRIES:
        with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
            home = Path(tmp)
            for index in range(count - 3):
                (home / f".entry{index}").write_text("x")
            (home / ".claude.json").write_text('{"numStartups": 1}')
            layered, flat = home / "layered", home / "flat"
            layered.mkdir()
            flat.mkdir()
            (flat / "egg.yaml").write_text("fs: ['rw:~']\n")
            env = {
                "PATH": os.environ["PATH"],
                "HOME": tmp,
                "EGG_HOME": f"{tmp}/.egg",
                "LANG": "C.UTF-8",
                "EGG_EXEC_CACHE": "0",
            }
            command = [egg, "exec", "--agent", "claude", "--", "/bin/true"]
            for _ in range(2):
                once(RAW, env, str(layered))
                once(command, env, str(layered))
                once(command, env, str(flat))
            raw, with_layer, without = [], [], []
            for _ in range(args.runs):
                raw.append(once(RAW, env, str(layered)))
                with_layer.append(once(command, env, str(layered)))
                without.append(once(command, env, str(flat)))
        r, w, f = (statistics.median(x) * 1000 for x in (raw, with_layer, without))
        rows.append(f"| {count} | {r:.1f} | {f:.1f} | {w:.1f} | {w - f:+.1f} ms ({w / f:.2f}x) |\n")
    body = (
        f"Machine: {machine()}. Interleaved runs, medians of {args.runs}, ms.\n\n"
        "| entries at the top of $HOME | raw bwrap | egg exec --agent claude, no layer "
        "(`rw: ~`) | with the layer | the layer's cost |\n|---|---|---|---|---|\n"
        + "".join(rows)
        + "\nThe cost is one bind per entry, and nearly all of it is bubblewrap's own mounting "
        "(the Python side of a 500-entry launch is ~50 ms, as with 500 socket masks in the "
        "spawn table); a home of 30 to 80 entries costs a few ms. Only agents with a home file "
        "(Claude Code) get a layer.\n"
    )
    print(body)
    if args.write:
        write_section("Home layer: an agent's own file at the top of $HOME", body)


if __name__ == "__main__":
    main()
