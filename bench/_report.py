"""Shared helpers for benchmarks: timing, medians, and updating BENCHMARKS.md sections."""

from __future__ import annotations

import platform
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "BENCHMARKS.md"


def median_seconds(fn: Callable[[], object], runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def machine() -> str:
    return f"{platform.machine()}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def write_section(name: str, body: str) -> None:
    """Replace (or append) the ``## name`` section of BENCHMARKS.md."""
    text = (
        REPORT.read_text()
        if REPORT.exists()
        else "# Benchmarks\n\nRun `python bench/<name>.py --write` to refresh a section.\n"
    )
    section = f"## {name}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = (
        pattern.sub(section + "\n", text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + section
    )
    REPORT.write_text(text.rstrip() + "\n")
