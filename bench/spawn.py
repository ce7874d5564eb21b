"""``egg exec -- /bin/true`` against raw bubblewrap, interleaved in one run; median ratios.

Baseline: ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent
/bin/true``. egg is measured twice: as users call it repeatedly (the exec cache answers after the
first call) and with the cache off (``EGG_EXEC_CACHE=0``: every call resolves config, plugins and
policy). Target: at most 8x raw bwrap.

Then the same with 0, 50 and 500 live host sockets in the workspace (bound and listening by this
script): each is one mask egg must mount, so the launch cost grows with them. The "bwrap with
the masks" row runs raw bwrap with one ``--ro-bind`` per socket, to show how much of the growth
is bwrap's own mounting.

Run from a clean clone after ./scripts/setup:  .venv/bin/python bench/spawn.py [--write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, machine, write_section

RAW = [
    "bwrap",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--unshare-all",
    "--die-with-parent",
    "/bin/true",
]


def once(argv: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed with {result.returncode}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    egg = shutil.which("egg", path=str(Path(sys.executable).parent)) or "egg"
    # Installed code has byte-compiled modules; make sure an editable checkout does too, even
    # where PYTHONDONTWRITEBYTECODE is set.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "egg_core"), str(ROOT / "plugins")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": tmp,
            "EGG_HOME": f"{tmp}/.egg",
            "LANG": "C.UTF-8",
        }
        cold = {**env, "EGG_EXEC_CACHE": "0"}
        work = f"{tmp}/work"
        os.mkdir(work)
        command = [egg, "exec", "--", "/bin/true"]
        for _ in range(3):  # warm the file cache, the plugin cache and the exec cache
            once(RAW, env, work)
            once(command, env, work)
            once(command, cold, work)
        raw, cached, uncached = [], [], []
        for _ in range(args.runs):
            raw.append(once(RAW, env, work))
            cached.append(once(command, env, work))
            if len(uncached) < max(10, args.runs // 3):
                uncached.append(once(command, cold, work))
        socket_rows = _with_sockets(egg, env, cold, work, args.runs)
    r, c, u = (statistics.median(x) for x in (raw, cached, uncached))
    body = (
        f"Machine: {machine()}. Interleaved runs, medians ({len(raw)} / {len(cached)} / "
        f"{len(uncached)} samples).\n\n"
        "| what | median | ratio to raw bwrap |\n|---|---|---|\n"
        f"| raw bwrap (baseline) | {r * 1000:.1f} ms | 1.0x |\n"
        f"| egg exec -- /bin/true, repeated (exec cache) | {c * 1000:.1f} ms | {c / r:.1f}x |\n"
        f"| egg exec -- /bin/true, EGG_EXEC_CACHE=0 (full resolution) | {u * 1000:.1f} ms | "
        f"{u / r:.1f}x |\n\n"
        f"Target: at most 8x raw bwrap — {'met' if c / r <= 8 else 'NOT met'} for repeated calls; "
        f"a first call (or any call after a change) pays the full resolution.\n\n"
        "With live host sockets in the workspace (each one a mask; medians, ms):\n\n"
        "| live sockets | bwrap with the masks | egg exec (cache) | egg exec (no cache) |\n"
        "|---|---|---|---|\n" + socket_rows
    )
    print(body)
    if args.write:
        write_section("Spawn: egg exec vs raw bwrap", body)


def _with_sockets(egg: str, env: dict[str, str], cold: dict[str, str], work: str, runs: int) -> str:
    """Rows for 0, 50 and 500 listening sockets in the workspace."""
    rows = []
    empty = os.path.join(env["HOME"], "empty")
    open(empty, "w").close()
    command = [egg, "exec", "--", "/bin/true"]
    for count in (0, 50, 500):
        directory = os.path.join(work, f"sockets-{count}")
        os.mkdir(directory)
        held = []
        for i in range(count):
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(os.path.join(directory, f"s{i}.sock"))
            sock.listen(1)
            held.append(sock)
        masks = [a for i in range(count) for a in ("--ro-bind", empty, f"{directory}/s{i}.sock")]
        raw = RAW[:-1] + masks + RAW[-1:]
        for _ in range(2):
            once(raw, env, work)
            once(command, env, work)
        samples: dict[str, list[float]] = {"raw": [], "cached": [], "cold": []}
        for _ in range(max(10, runs // 3)):
            samples["raw"].append(once(raw, env, work))
            samples["cached"].append(once(command, env, work))
            samples["cold"].append(once(command, cold, work))
        for sock in held:
            sock.close()
        shutil.rmtree(directory)
        m = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        rows.append(f"| {count} | {m['raw']:.1f} | {m['cached']:.1f} | {m['cold']:.1f} |\n")
    share = m["raw"] / m["cached"]
    rows.append(
        f"\nThe ceiling is bubblewrap's own mounting: with {count} sockets, bwrap making the masks "
        f"is {share:.0%} of a cached egg exec and {m['raw'] / m['cold']:.0%} of an uncached one "
        "(each mount in a namespace that already holds many costs more than the last); the "
        "rest is egg re-reading the kernel's socket table and judging it."
    )
    return "".join(rows)


if __name__ == "__main__":
    main()
