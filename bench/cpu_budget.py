"""``resources.cpu``, the whole sandbox's CPU budget: how far past it a sandbox gets, and what
holding it costs a launch.

Overshoot: a sandbox of ``cpu: 1s`` forks 1, 2 and 4 processes that spin until egg kills them;
egg's one line says what the sandbox used in all (the cgroup's own accounting, read once every
process is dead). The ratio is that total to the budget (1.00x: no overshoot); the watcher wakes
no later than the rest of the budget could be spent with every CPU busy (20 ms to 1 s).

Cost: ``egg exec -- /bin/true`` from the exec cache without limits (the baseline) and with
``cpu: 30m`` (its cgroup made, joined, watched and removed on every run), interleaved; medians.

Needs root (cgroups; see ``egg doctor``). Run after ./scripts/setup:
    sudo .venv/bin/python bench/cpu_budget.py [--write]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, write_section

BURN = """
import os, sys
for _ in range(int(sys.argv[1]) - 1):
    if os.fork() == 0:
        break
while True:
    pass
"""
USED = re.compile(r"the sandbox used ([0-9.]+) s of CPU time")


def once(
    argv: list[str], env: dict[str, str], cwd: str
) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: only root has cgroups on this kind of host (egg doctor)")
    egg = shutil.which("egg", path=str(Path(sys.executable).parent)) or "egg"
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": tmp,
            "EGG_HOME": f"{tmp}/.egg",
            "LANG": "C.UTF-8",
        }
        plain, limited, burning = (os.path.join(tmp, n) for n in ("plain", "limited", "burning"))
        for directory, config in (
            (plain, ""),
            (limited, "resources: {cpu: 30m}\n"),
            (burning, "resources: {cpu: 1s}\n"),
        ):
            os.mkdir(directory)
            Path(directory, "egg.yaml").write_text(config)
        true = [egg, "exec", "--", "/bin/true"]
        for _ in range(3):  # fill the exec cache
            once(true, env, plain)
            once(true, env, limited)
        for directory in (plain, limited):
            _, result = once(true, {**env, "EGG_EXEC_CACHE": "debug"}, directory)
            _, result = once(true, {**env, "EGG_EXEC_CACHE": "debug"}, directory)
            if "exec cache hit" not in result.stderr:
                raise SystemExit(f"no exec cache hit in {directory}: {result.stderr}")
        base, held = [], []
        for _ in range(args.runs):
            base.append(once(true, env, plain)[0])
            held.append(once(true, env, limited)[0])
        rows = []
        for burners in (1, 2, 4):
            used = []
            for _ in range(max(5, args.runs // 3)):
                _, result = once(
                    [egg, "exec", "--", python, "-I", "-c", BURN, str(burners)], env, burning
                )
                found = USED.search(result.stderr)
                if result.returncode != 152 or found is None:
                    raise SystemExit(
                        f"not killed for its budget (exit {result.returncode}): {result.stderr}"
                    )
                used.append(float(found.group(1)))
            median, worst = statistics.median(used), max(used)
            rows.append(
                f"| {burners} | {median:.3f} s ({median:.2f}x) | {worst:.3f} s ({worst:.2f}x) |\n"
            )
    b, h = statistics.median(base) * 1000, statistics.median(held) * 1000
    body = (
        f"Machine: {machine()}, {os.cpu_count()} CPUs. Cost: interleaved, medians of "
        f"{len(base)} runs each; overshoot: {max(5, args.runs // 3)} runs per row.\n\n"
        "| what | median | ratio |\n|---|---|---|\n"
        f"| egg exec -- /bin/true, exec cache, no limits (baseline) | {b:.1f} ms | 1.0x |\n"
        f"| the same with `cpu: 30m` (cgroup made, joined, watched, removed) | {h:.1f} ms | "
        f"{h / b:.2f}x |\n\n"
        "A `cpu: 1s` sandbox of spinning processes, killed by egg; what it used in all (cgroup "
        "accounting) against its budget:\n\n"
        "| processes | median used | worst used |\n|---|---|---|\n" + "".join(rows)
    )
    print(body)
    if args.write:
        write_section("CPU budget: overshoot and cost", body)


if __name__ == "__main__":
    main()
