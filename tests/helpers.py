"""Helpers shared by egg's own tests."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from pathlib import Path

#: how long a test waits for a condition before it fails (generous: a busy 2-core host)
WAIT_TIMEOUT = 30.0


def wait_until(condition: Callable[[], object], what: str, timeout: float = WAIT_TIMEOUT) -> None:
    """Poll ``condition`` until it is true; fail with ``what`` (what was awaited) if it never is.

    A test that sleeps a fixed time and then asserts is slow when the host is idle and flaky
    when it is busy; waiting on the condition itself is neither."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.02)


def write_dist(
    root: Path, dist: str, version: str, entry_points: dict[str, str], modules: dict[str, str]
) -> Path:
    """Write an installed-looking distribution (dist-info + modules) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    eps = "[egg]\n" + "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(eps)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root
