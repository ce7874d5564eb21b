"""The session replay ring: feed() throughput, snapshot() latency, memory.

Targets: feed() at least 200 MiB/s on plain text and 100 MiB/s on TUI-style output (colour SGR
and cursor movement), so the ring never slows a PTY that delivers 60-90 MiB/s; snapshot() under
150 ms after 4 MiB of TUI output at 200x50 and after 20 MiB of plain output. How long pyte takes
to draw the payload is reported for information (``egg status --screen`` pays it; a real terminal
is one to two orders of magnitude faster).

The output is fed in 4 KiB chunks, what a PTY read returns; a 64 KiB row shows the per-call cost.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, median_seconds, write_section

from egg_core.session.ring import ReplayRing
from egg_core.session.screen import render

MiB = 1024 * 1024
WORDS = [
    b"build",
    b"ok",
    b"warning:",
    b"src/egg_core/session/ring.py",
    b"\xc3\xa9t\xc3\xa9",
    b"\xe4\xb8\xad\xe6\x96\x87",
]
WORDS += [b"test_replay_ring_wraps", b"PASSED", b"[100%]", b"0.42s", b"--", b"=" * 12]


def plain(size: int, seed: int = 1) -> bytes:
    """Log-like lines of text, CR LF terminated as a PTY delivers them."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        line = b" ".join(rng.choices(WORDS, k=rng.randint(1, 14))) + b"\r\n"
        lines.append(line)
        total += len(line)
    return b"".join(lines)[:size]


def tui(
    size: int,
    rows: int = 50,
    cols: int = 200,
    seed: int = 2,
    resets: bool = True,
    clear_every: int = 100,
) -> bytes:
    """Frames of a full-screen program: synchronized update, cursor moves, colour runs.

    ``resets`` ends each run with ESC[0m (ncurses, ratatui); without it runs end with the
    per-attribute closers chalk and Ink use (ESC[39m, ESC[22m), the tracker's slower path.
    """
    rng = random.Random(seed)
    palette = rng.sample(range(256), 32)  # a theme's colours
    out, total, frame = [b"\x1b[?1049h\x1b[H\x1b[2J"], 0, 0
    while total < size:
        parts = [b"\x1b[?2026h\x1b[?25l"]
        if frame % clear_every == 0:
            parts.append(b"\x1b[H\x1b[2J")
        for _ in range(rng.randint(3, 12)):
            parts.append(b"\x1b[%d;%dH" % (rng.randint(1, rows), rng.randint(1, cols - 40)))
            for _ in range(rng.randint(2, 6)):
                colour = rng.choice(palette)
                bold = b"1;" if rng.random() < 0.2 else b""
                parts.append(b"\x1b[%s38;5;%dm%s" % (bold, colour, rng.choice(WORDS)))
                parts.append(b"\x1b[0m" if resets else b"\x1b[39m\x1b[22m")
            parts.append(b"\x1b[K")
        parts.append(b"\x1b[?25h\x1b[?2026l")
        chunk = b"".join(parts)
        out.append(chunk)
        total += len(chunk)
        frame += 1
    return b"".join(out)[:size]


def ink(size: int, seed: int = 3) -> bytes:
    """An Ink/chalk agent UI: text with coloured spans closed per attribute (ESC[39m, ESC[22m),
    and a status area redrawn by erasing lines upwards (ESC[2K ESC[1A), as Claude Code does."""
    rng = random.Random(seed)
    theme = [tuple(rng.randrange(256) for _ in range(3)) for _ in range(24)]  # 24-bit colours
    out, total, line = [], 0, 0
    while total < size:
        words = []
        for word in rng.choices(WORDS, k=rng.randint(3, 16)):
            if rng.random() < 0.15:
                word = b"\x1b[38;2;%d;%d;%dm%s\x1b[39m" % (*rng.choice(theme), word)
            elif rng.random() < 0.05:
                word = b"\x1b[1m%s\x1b[22m" % word
            words.append(word)
        part = b" ".join(words) + b"\r\n"
        line += 1
        if line % 20 == 0:
            part += b"\x1b[2K\x1b[1A" * 4 + b"\x1b[2K\x1b[G"
            part += (
                b"\x1b[2m" + b"\xe2\x94\x80" * 60 + b"\x1b[22m\r\n\x1b[36m> \x1b[39mthinking\r\n"
            ) * 2
        out.append(part)
        total += len(part)
    return b"".join(out)[:size]


def feed_rate(data: bytes, chunk: int, runs: int) -> float:
    """MiB/s of ReplayRing.feed, best of ``runs`` (the machine is shared; best is least noisy)."""
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    best = float("inf")
    for _ in range(runs):
        ring = ReplayRing()
        feed = ring.feed
        start = time.perf_counter()
        for piece in pieces:
            feed(piece)
        best = min(best, time.perf_counter() - start)
    return len(data) / best / MiB


def once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def snapshot_row(name: str, data: bytes, runs: int, rows: int = 50, cols: int = 200) -> str:
    ring = ReplayRing()
    for i in range(0, len(data), 4096):
        ring.feed(data[i : i + 4096])
    cut = ring.cut(rows)
    payload = ring.snapshot(rows, cols)
    took = median_seconds(lambda: ring.snapshot(rows, cols), runs, warmup=1)
    drawn = once(lambda: render(payload, rows, cols))
    return (
        f"| {name} | {cut.kind} | {len(payload) / 1024:.0f} KiB | {took * 1000:.2f} ms "
        f"| {drawn:.2f} s |"
    )


def memory(data: bytes) -> tuple[float, float]:
    """MiB held by a ring after ``data`` (traced allocations), and the buffer's share."""
    tracemalloc.start()
    ring = ReplayRing()
    for i in range(0, len(data), 4096):
        ring.feed(data[i : i + 4096])
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return held / MiB, ring.capacity / MiB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=64, help="MiB fed per throughput row")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    size = args.size * MiB
    text, screen = plain(size), tui(size)
    tui_name = "TUI (cursor moves, colour runs ending in ESC[0m)"
    rates = [
        ("plain text", 4096, feed_rate(text, 4096, args.runs), 200),
        ("plain text", 65536, feed_rate(text, 65536, args.runs), 200),
        (tui_name, 4096, feed_rate(screen, 4096, args.runs), 100),
        (tui_name, 65536, feed_rate(screen, 65536, args.runs), 100),
        (
            "Ink-style agent UI (chalk closers, cursor-up redraws)",
            4096,
            feed_rate(ink(size), 4096, args.runs),
            0,
        ),
        (
            "worst case: that TUI with closers instead of ESC[0m",
            4096,
            feed_rate(tui(size, resets=False), 4096, args.runs),
            0,
        ),
    ]
    body = [
        f"Machine: {machine()}. {args.size} MiB per row, best of {args.runs}.\n",
        "| feed() | chunk | MiB/s | target |",
        "|---|---|---|---|",
    ]
    for name, chunk, rate, target in rates:
        verdict = f"{target} — {'met' if rate >= target else 'NOT met'}" if target else "—"
        body.append(f"| {name} | {chunk // 1024} KiB | {rate:.0f} | {verdict} |")
    body += [
        "",
        "| snapshot(), client 200x50 | cut | payload | snapshot() median | pyte draws it in |",
        "|---|---|---|---|---|",
        snapshot_row("4 MiB of TUI, clearing every 100 frames", tui(4 * MiB), 20),
        snapshot_row(
            "4 MiB of TUI, cleared once at the start", tui(4 * MiB, clear_every=10**9), 20
        ),
        snapshot_row("20 MiB of plain text", plain(20 * MiB, seed=3), 20),
        snapshot_row("20 MiB of Ink-style output", ink(20 * MiB), 5),
    ]
    held, buffer = memory(plain(20 * MiB, seed=4))
    body += [
        "",
        f"Memory after 20 MiB of output: {held:.2f} MiB traced, of which the ring's buffer is "
        f"{buffer:.0f} MiB (default capacity).",
        "",
        "Target for snapshot(): under 150 ms to produce the payload. A TUI is replayed from its "
        "last clear, a plain tail from two screens plus 500 lines up. The Ink-style row has no "
        "exact cut (cursor-up redraws, no clear in the ring): it replays the whole ring, and "
        "``Cut.exact`` is false so the daemon can ask the program to repaint. pyte's time is "
        "what ``egg status --screen`` pays (pass ``max_bytes`` to bound it); a real terminal "
        "draws the same payload one to two orders of magnitude faster.",
    ]
    report = "\n".join(body)
    print(report)
    if args.write:
        write_section("Session replay ring", report)


if __name__ == "__main__":
    main()
