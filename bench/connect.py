"""What the socket gate costs a program that connects: ``connect()`` inside ``egg exec`` (every
call judged and carried out by egg on the host) against the same program in raw bubblewrap (no
gate), in one run.

The program binds a unix socket and a TCP listener on loopback (inside its own network
namespace) with a thread accepting, then times N connects to each; the table gives the median
of several rounds, per connect, and the ratio to raw bwrap. Also: a process that makes no
connect pays nothing per system call — the gate stops only ``connect`` and ``bind``.

Run from a clean clone after ./scripts/setup:  .venv/bin/python bench/connect.py [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, write_section

PROGRAM = r"""
import json, os, socket, sys, threading, time
n = int(sys.argv[1])
path = os.path.join(os.getcwd(), "bench.sock")
if os.path.exists(path):
    os.unlink(path)
servers = [socket.socket(socket.AF_UNIX), socket.socket()]
servers[0].bind(path)
servers[1].bind(("127.0.0.1", 0))
for s in servers:
    s.listen(512)
    def accept(s=s):
        while True:
            c, _ = s.accept()
            c.close()
    threading.Thread(target=accept, daemon=True).start()
def timed(family, address):
    start = time.perf_counter()
    for _ in range(n):
        c = socket.socket(family)
        c.connect(address)
        c.close()
    return (time.perf_counter() - start) / n
out = {"unix": timed(socket.AF_UNIX, path), "tcp": timed(socket.AF_INET, servers[1].getsockname())}
start = time.perf_counter()
for _ in range(n):
    os.getpid()
out["getpid"] = (time.perf_counter() - start) / n
os.unlink(path)
print(json.dumps(out))
"""


def run(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {result.stderr[-500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connects", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    egg = shutil.which("egg", path=str(Path(sys.executable).parent)) or "egg"
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        env = {"PATH": os.environ["PATH"], "HOME": tmp, "EGG_HOME": f"{tmp}/.egg", "LANG": "C"}
        work = f"{tmp}/work"
        os.mkdir(work)
        program = [python, "-I", "-c", PROGRAM, str(args.connects)]
        raw = [
            "bwrap", "--ro-bind", "/", "/", "--bind", work, work, "--dev", "/dev",
            "--proc", "/proc", "--unshare-all", "--die-with-parent", "--chdir", work, *program,
        ]  # fmt: skip
        wrapped = [egg, "exec", "--", *program]
        samples: dict[str, dict[str, list[float]]] = {"raw": {}, "egg": {}}
        for _ in range(args.rounds):  # interleaved
            for name, argv in (("raw", raw), ("egg", wrapped)):
                for key, value in run(argv, env, work).items():
                    samples[name].setdefault(key, []).append(value)
    med = {
        name: {key: statistics.median(values) * 1e6 for key, values in found.items()}
        for name, found in samples.items()
    }
    rows = []
    for key, label in (
        ("unix", "connect() to its own unix socket"),
        ("tcp", "connect() to its own TCP port on loopback"),
        ("getpid", "getpid() (a call the gate does not stop)"),
    ):
        r, e = med["raw"][key], med["egg"][key]
        rows.append(f"| {label} | {r:.1f} µs | {e:.1f} µs | {e / r:.1f}x |")
    body = (
        f"Machine: {machine()}. {args.rounds} interleaved rounds of {args.connects} calls each, "
        "medians per call.\n\n"
        "| call inside the sandbox | raw bwrap (no gate) | egg exec (socket gate) | ratio |\n"
        "|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Each connect is a round trip to egg's gate thread (read the address, resolve the path in "
        "the caller's root, check the socket, connect the caller's own socket); other system "
        "calls never leave the kernel."
    )
    print(body)
    if args.write:
        write_section("Socket gate: what a connect costs", body)


if __name__ == "__main__":
    main()
