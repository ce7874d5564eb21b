"""What capturing a conversation costs a session (egg_core.history), against baselines measured in
the same run.

1. The periodic look at an unchanged 100 MiB transcript (every 5 s while a session runs): the
   descriptor walk and fstat that find it unchanged, against a plain ``os.stat`` of the file.
   Target: under 1 ms.
2. Capturing a 100 MiB transcript (gzip level 1, fsync, rename): against copying the file with
   ``shutil.copyfile`` and against gzip level 1 alone. Target: under 2 s.
3. The relay while a capture runs: bytes per second an asyncio loop moves over a socket pair (the
   daemon's PTY-to-client path in miniature) with a 100 MiB capture running in a worker thread,
   as the daemon runs it, against the same loop with no capture. Target: the relay keeps its rate.
4. ``egg history show`` of a capture at the 256 MiB cap, in each agent's format (bench/
   _transcripts.py: Gemini's is a resumed conversation, half of it one line), the real CLI in a
   subprocess printing to a file: its time and peak RSS (``wait4``) against, in the same run,
   ``cat`` of the transcript to a file and Python reading the capture (gzip) and parsing each
   line with ``json.loads``, nothing kept. Targets: under 30 s, peak RSS under 200 MiB.

The transcript is JSONL text shaped like an agent's (repeated records with varying ids), so that
compression does real work. Run from a clean clone after ./scripts/setup:

    .venv/bin/python bench/history.py [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _transcripts
from _report import machine, median_seconds, write_section

from egg_core import history
from egg_core.session.store import create_session, write_json

SIZE = 100 * 1024 * 1024
SHOW_SIZE = history.MAX_BYTES
#: Python's floor for reading a capture: gunzip and parse every line, keep nothing
PARSE_ONLY = "import gzip, json, sys\nfor line in gzip.open(sys.argv[1]):\n    json.loads(line)\n"


def make_transcript(path: Path) -> None:
    with open(path, "w") as out:
        written, index = 0, 0
        while written < SIZE:
            record = {
                "type": "assistant" if index % 2 else "user",
                "uuid": f"{index:08x}-5e1f-4c3a-9d2b-{index * 7919 % 10**12:012d}",
                "message": {"role": "user", "content": f"step {index}: " + "text " * 40},
            }
            line = json.dumps(record) + "\n"
            out.write(line)
            written += len(line)
            index += 1


async def relay(seconds: float) -> float:
    """Bytes per second one loop moves from a writer to a reader over a socket pair."""
    left, right = socket.socketpair()
    left.setblocking(False)
    right.setblocking(False)
    loop = asyncio.get_running_loop()
    chunk = b"x" * 65536
    moved = 0
    stop = time.perf_counter() + seconds

    async def pump() -> None:
        while time.perf_counter() < stop:
            await loop.sock_sendall(left, chunk)

    task = asyncio.create_task(pump())
    start = time.perf_counter()
    while time.perf_counter() < stop:
        try:
            data = await asyncio.wait_for(loop.sock_recv(right, 1 << 20), 0.5)
        except TimeoutError:
            break
        moved += len(data)
    elapsed = time.perf_counter() - start
    task.cancel()
    left.close()
    right.close()
    return moved / elapsed


#: runs a command and says its peak RSS: measured from a process this small, because a child's
#: peak counts the memory of the process it was forked from (the benchmark's own)
LAUNCH = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stderr.write(f'{status} {usage.ru_maxrss}\\n')\n"
)


def timed(argv: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of one run of ``argv``, its stdout to ``out``."""
    with open(out, "wb") as sink:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCH, *argv],
            stdout=sink,
            stderr=subprocess.PIPE,
            env=env,
        )
        elapsed = time.perf_counter() - start
    status, peak = done.stderr.decode().split("\n")[-2].split()
    if status != "0":
        raise SystemExit(f"{argv[:6]} failed: status {status}: {done.stderr[-300:]!r}")
    return elapsed, int(peak) * 1024


def show_rows(base: Path, runs: int) -> list[str]:
    """One table row per agent: ``egg history show`` of a 256 MiB capture against cat and a
    parse-only read, in the same run, interleaved."""
    home = base / "egg-home"
    home.mkdir(mode=0o700)
    env = {**os.environ, "EGG_HOME": str(home)}
    rows = []
    for agent in ("claude", "codex", "gemini"):
        paths = create_session(home)
        write_json(paths.meta, {"agent": agent, "cwd": str(base), "started": time.time()})
        root = base / f"{agent}-dir"
        root.mkdir()
        source = root / "t.jsonl"
        _transcripts.write(agent, source, SHOW_SIZE - (1 << 20))
        transcript = history.Transcript(agent_session_id="bench", root=root, file="t.jsonl")
        meta = history.capture(transcript, paths.directory)
        history.write_meta(paths.directory, {**meta, "agent": agent, "title": None})
        chat = paths.directory / history.CHAT_FILE
        egg = [sys.executable, "-P", "-m", "egg_core.cli", "history", "show", paths.id]
        samples: dict[str, list[tuple[float, int]]] = {"egg": [], "cat": [], "parse": []}
        for _ in range(runs):
            samples["egg"].append(timed(egg, base / "egg.out", env))
            samples["cat"].append(timed(["cat", str(source)], base / "other.out"))
            parse = [sys.executable, "-c", PARSE_ONLY, str(chat)]
            samples["parse"].append(timed(parse, base / "other.out"))
        shown = (base / "egg.out").stat().st_size
        egg_s, cat_s, parse_s = (statistics.median(t for t, _ in samples[k]) for k in samples)
        egg_rss, parse_rss = (max(r for _, r in samples[k]) for k in ("egg", "parse"))
        mib = 1024 * 1024
        rows.append(
            f"| {agent}, {source.stat().st_size / mib:.0f} MiB, {shown / mib:.1f} MiB printed "
            f"| {egg_s:.1f} s, {egg_rss / mib:.0f} MiB peak "
            f"| cat {cat_s:.2f} s; gunzip + json.loads {parse_s:.1f} s, {parse_rss / mib:.0f} MiB "
            f"| {egg_s / parse_s:.1f}x parse, {egg_s / cat_s:.0f}x cat "
            f"| {'met' if egg_s < 30 and egg_rss < 200 * mib else 'NOT met'} |"
        )
        source.unlink()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--show-runs", type=int, default=3, help="runs of each show row")
    parser.add_argument("--only-show", action="store_true", help="only the history show rows")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    if args.only_show:
        with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
            print("\n".join(show_rows(Path(tmp), args.show_runs)))
        return
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        base = Path(tmp)
        root = base / "agent"
        (root / "projects").mkdir(parents=True)
        source = root / "projects" / "t.jsonl"
        make_transcript(source)
        session = base / "session"
        session.mkdir(mode=0o700)
        transcript = history.Transcript(agent_session_id="x", root=root, file="projects/t.jsonl")

        def fresh_capture() -> None:
            (session / history.META_FILE).unlink(missing_ok=True)  # nothing to compare with
            history.write_meta(session, history.capture(transcript, session))

        capture = median_seconds(fresh_capture, args.runs, warmup=1)
        copy = median_seconds(lambda: shutil.copyfile(source, base / "copy"), args.runs, warmup=1)

        def gzip_only() -> None:
            with open(source, "rb") as src, gzip.open(base / "g.gz", "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)

        packed = median_seconds(gzip_only, args.runs, warmup=1)
        history.write_meta(session, history.capture(transcript, session))
        unchanged = median_seconds(lambda: history.capture(transcript, session), 200)
        plain_stat = median_seconds(lambda: os.stat(source), 200)

        idle_rate = asyncio.run(relay(2.0))

        async def during() -> float:
            loop = asyncio.get_running_loop()
            done = threading.Event()

            def busy() -> None:
                while not done.is_set():
                    (session / history.META_FILE).unlink(missing_ok=True)
                    history.capture(transcript, session)

            worker = loop.run_in_executor(None, busy)
            try:
                return await relay(2.0)
            finally:
                done.set()
                await worker

        busy_rate = asyncio.run(during())
        shows = "\n".join(show_rows(base, args.show_runs))
    body = f"""Measured on {machine()} by `bench/history.py`, a 100 MiB JSONL transcript.

| what | egg | baseline | ratio |
|---|---|---|---|
| periodic look, transcript unchanged | {unchanged * 1e3:.3f} ms | os.stat {plain_stat * 1e3:.3f} ms | {unchanged / plain_stat:.1f}x |
| capture of 100 MiB (gzip -1, fsync, rename) | {capture:.2f} s | copyfile {copy:.2f} s; gzip -1 alone {packed:.2f} s | {capture / copy:.1f}x copy, {capture / packed:.2f}x gzip |
| relay rate while captures run back to back | {busy_rate / 1e6:.0f} MB/s | no capture {idle_rate / 1e6:.0f} MB/s | {busy_rate / idle_rate:.2f} |

Targets: the unchanged look under 1 ms ({"met" if unchanged < 1e-3 else "NOT met"}); a 100 MiB capture
under 2 s ({"met" if capture < 2 else "NOT met"}); the relay keeps its rate while a capture runs in
the daemon's worker thread (zlib releases the GIL while it compresses).

`egg history show` of a capture at the 256 MiB cap (the CLI in a subprocess, printing to a file;
medians of {args.show_runs} runs, peak RSS the largest):

| transcript | egg history show | baselines, same run | ratio | under 30 s and 200 MiB |
|---|---|---|---|---|
{shows}
"""
    print(body)
    if args.write:
        write_section("History: capturing a conversation", body)


if __name__ == "__main__":
    main()
