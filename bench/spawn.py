"""``egg exec -- /bin/true`` against raw bubblewrap, interleaved in one run; median ratios.

Baseline: ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent
/bin/true``. egg is measured twice: as users call it repeatedly (the exec cache answers after the
first call) and with the cache off (``EGG_EXEC_CACHE=0``: every call resolves config, plugins and
policy). Target: at most 8x raw bwrap.

Then the same with 0 and 5,000 live host sockets the sandbox sees (bound and listening by this
script, in one directory and spread over 500): the socket gate judges connects when they happen,
so a launch should cost the same whatever the host's socket table holds (target: at most 3x the
cost with none).

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
        "With live host sockets the sandbox sees (medians, ms; in brackets, the ratio to the "
        "same column with none — target at most 3x):\n\n"
        "| live host sockets | raw bwrap | egg exec (cache) | egg exec (no cache) |\n"
        "|---|---|---|---|\n" + socket_rows
    )
    print(body)
    if args.write:
        write_section("Spawn: egg exec vs raw bwrap", body)


def _with_sockets(egg: str, env: dict[str, str], cold: dict[str, str], work: str, runs: int) -> str:
    """Rows for no sockets and 5,000 listening host sockets (one directory; 500 of them)."""
    rows = []
    command = [egg, "exec", "--", "/bin/true"]
    base: dict[str, float] = {}
    for label, count, places in (
        ("none", 0, 1),
        ("5,000 in one directory", 5000, 1),
        ("5,000 in 500 directories", 5000, 500),
    ):
        directory = os.path.join(work, f"sockets-{count}-{places}")
        os.mkdir(directory)
        held = []
        for i in range(count):
            where = os.path.join(directory, f"d{i % places}")
            os.makedirs(where, exist_ok=True)
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(os.path.join(where, f"s{i}.sock"))
            sock.listen(1)
            held.append(sock)
        for _ in range(2):
            once(RAW, env, work)
            once(command, env, work)
        samples: dict[str, list[float]] = {"raw": [], "cached": [], "cold": []}
        for _ in range(max(10, runs // 3)):
            samples["raw"].append(once(RAW, env, work))
            samples["cached"].append(once(command, env, work))
            samples["cold"].append(once(command, cold, work))
        for sock in held:
            sock.close()
        shutil.rmtree(directory)
        m = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        if not base:
            base = m
        rows.append(
            f"| {label} | {m['raw']:.1f} | {m['cached']:.1f} ({m['cached'] / base['cached']:.2f}x) "
            f"| {m['cold']:.1f} ({m['cold'] / base['cold']:.2f}x) |\n"
        )
    return "".join(rows)


if __name__ == "__main__":
    main()
