"""``egg exec -- /bin/true`` against raw bubblewrap, interleaved in one run; median ratios.

Baseline: ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent
/bin/true``. egg is measured as users call it repeatedly — the exec cache answers after the first
call — plainly and with agents (``--agent claude`` and ``--agent codex``: a home layer, settings
snapshots, and the network allowlist's proxy, served from a child process on a hit, on
listeners made in the sandbox's own network namespace) — and with
the cache off (``EGG_EXEC_CACHE=0``: every call resolves config, plugins and policy). The cached
calls run with ``EGG_EXEC_CACHE=debug`` so that only hits are counted (a shared host changes what
a sandbox sees now and then: such a call is a miss, and is reported, not timed). Targets: a hit
at most 5x raw bwrap, an agent's hit at most 2x a plain hit.

Rows beside them give the floor a Python program starts from: the interpreter's own start,
measured the same way (it is part of every egg call, and of no raw bwrap call); that start then
exec'ing the same raw bwrap (the floor of any launcher written in Python); and the same with
``ctypes`` imported first (the standard library's only way to the ``seccomp()`` call that
installs the socket gate's user-notification filter, so a floor of any launcher with that gate).

Then the same with 0 and 5,000 live host sockets the sandbox sees (bound and listening by this
script, in one directory and spread over 500): the socket gate judges connects when they happen,
so a launch should cost the same whatever the host's socket table holds (target: at most 3x the
cost with none).

Run from a clean clone after ./scripts/setup:  .venv/bin/python bench/spawn.py [--write]
"""

from __future__ import annotations

import argparse
import atexit
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


def cached_once(argv: list[str], env: dict[str, str], cwd: str) -> float | None:
    """A call's time if the exec cache answered it (``EGG_EXEC_CACHE=debug`` in ``env``)."""
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed with {result.returncode}: {result.stderr.strip()}")
    return elapsed if "egg: exec cache hit" in result.stderr else None


#: the agents measured (each with its own row)
AGENTS = ("claude", "codex")
#: the console-script wrapper pip before 25.2 writes for an entry point (egg ships a launcher of
#: its own instead, launcher/egg: this one imports ``re`` before egg's first line)
OLD_PIP_WRAPPER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from egg_core.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


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
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": tmp,
            "EGG_HOME": f"{tmp}/.egg",
            "LANG": "C.UTF-8",
        }
        cold = {**env, "EGG_EXEC_CACHE": "0"}
        debug = {**env, "EGG_EXEC_CACHE": "debug"}
        work = f"{tmp}/work"
        os.mkdir(work)
        command = [egg, "exec", "--", "/bin/true"]
        # in a directory of its own, outside HOME (the first on its sys.path: egg protects it)
        wrapper_dir = tempfile.mkdtemp(dir="/var/tmp", prefix="egg-wrapper-")
        atexit.register(shutil.rmtree, wrapper_dir, ignore_errors=True)  # (however it ends)
        wrapper = os.path.join(wrapper_dir, "egg")
        with open(wrapper, "w") as handle:
            handle.write(OLD_PIP_WRAPPER.format(python=sys.executable))
        os.chmod(wrapper, 0o755)
        hits: dict[str, list[str]] = {
            "plain": command,
            **{agent: [egg, "exec", "--agent", agent, "--", "/bin/true"] for agent in AGENTS},
            "wrapped": [wrapper, "exec", "--", "/bin/true"],
        }
        for _ in range(3):  # warm the file cache, the plugin cache and the exec cache
            once(RAW, env, work)
            once(command, cold, work)
            for argv in hits.values():
                cached_once(argv, debug, work)
        raw: list[float] = []
        interpreter: list[float] = []  # the floor Python sets: its own start, nothing else
        launcher: list[float] = []  # Python's start, then raw bwrap in its place
        gated: list[float] = []  # the same with ctypes imported first
        exec_raw = f"import os; os.execvp({RAW[0]!r}, {RAW!r})"
        uncached: list[float] = []
        cached: dict[str, list[float]] = {name: [] for name in hits}
        for _ in range(args.runs):
            raw.append(once(RAW, env, work))
            interpreter.append(once([sys.executable, "-c", "pass"], env, work))
            launcher.append(once([sys.executable, "-c", exec_raw], env, work))
            gated.append(once([sys.executable, "-c", "import ctypes; " + exec_raw], env, work))
            for name, argv in hits.items():
                took = cached_once(argv, debug, work)
                if took is not None:
                    cached[name].append(took)
            if len(uncached) < max(10, args.runs // 3):
                uncached.append(once(command, cold, work))
        socket_rows = _with_sockets(egg, env, cold, work, args.runs)
    if any(not samples for samples in cached.values()):
        raise SystemExit(f"no exec cache hit for {[n for n, s in cached.items() if not s]}")
    r, u = statistics.median(raw), statistics.median(uncached)
    py = statistics.median(interpreter)
    floor, gate_floor = statistics.median(launcher), statistics.median(gated)
    m = {name: statistics.median(samples) for name, samples in cached.items()}
    c = m["plain"]
    rows = [
        f"| egg exec --agent {agent} -- /bin/true, repeated (exec cache hit) | "
        f"{m[agent] * 1000:.1f} ms | {m[agent] / r:.1f}x | {m[agent] / c:.2f}x |\n"
        for agent in AGENTS
    ]
    counted = ", ".join(f"{name} {len(cached[name])}/{args.runs}" for name in hits)
    worst = max(m[agent] / c for agent in AGENTS)
    body = (
        f"Machine: {machine()}, {os.cpu_count()} CPUs (load average {load:.2f} at the start). "
        f"Interleaved runs, medians ({len(raw)} raw / {len(uncached)} uncached samples; cached "
        f"calls that hit: {counted}).\n\n"
        "| what | median | ratio to raw bwrap | ratio to a plain hit |\n|---|---|---|---|\n"
        f"| raw bwrap (baseline) | {r * 1000:.1f} ms | 1.0x | — |\n"
        f"| Python's own start (`python -c pass`, the interpreter egg runs on) | "
        f"{py * 1000:.1f} ms | {py / r:.1f}x | {py / c:.2f}x |\n"
        f"| Python's start, then raw bwrap in its place (the floor of a launcher in Python) | "
        f"{floor * 1000:.1f} ms | {floor / r:.1f}x | {floor / c:.2f}x |\n"
        f"| the same with `ctypes` imported first (the floor of one that installs a seccomp "
        f"notification filter) | {gate_floor * 1000:.1f} ms | {gate_floor / r:.1f}x "
        f"| {gate_floor / c:.2f}x |\n"
        f"| egg exec -- /bin/true, repeated (exec cache hit) | {c * 1000:.1f} ms | {c / r:.1f}x "
        "| 1.00x |\n" + "".join(rows) + "| the same plain hit started by the console-script "
        "wrapper a pip before 25.2 would write for an entry point (it imports `re`; egg's own "
        "launcher does not; its directory, first on its `sys.path`, is protected too) | "
        f"{m['wrapped'] * 1000:.1f} ms | {m['wrapped'] / r:.1f}x | "
        f"{m['wrapped'] / c:.2f}x |\n"
        f"| egg exec -- /bin/true, EGG_EXEC_CACHE=0 (full "
        f"resolution) | {u * 1000:.1f} ms | {u / r:.1f}x | {u / c:.2f}x |\n\n"
        f"Targets: a hit at most 5x raw bwrap — {'met' if c / r <= 5 else 'NOT met'} "
        f"({c / r:.1f}x); an agent's hit at most 2x a plain hit — "
        f"{'met' if worst <= 2 else 'NOT met'} ({worst:.2f}x at most). A first call (or any "
        "call after a change) pays the full resolution. The ceiling on this machine: a launcher "
        f"in Python that installs the socket gate's filter starts at {gate_floor / r:.1f}x raw "
        f"bwrap before it has done anything, which leaves {max(0.0, 5 * r - gate_floor) * 1000:.1f}"
        " ms within 5x for all the rest of a hit (reading and checking the cache entry, the "
        "policy's own mounts and seccomp filter, the gate and its hold, the clean-up); egg's "
        f"hit spends {(c - gate_floor) * 1000:.1f} ms on it.\n\n"
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
