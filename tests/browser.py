"""The browser egg web's tests and benchmark drive: Debian's chromium (scripts/setup installs
it) started by Playwright from its path — no browser download — with the flags that keep it off
the network (as root Playwright's default --no-sandbox applies)."""

from __future__ import annotations

from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-proxy-server",
    "--disable-dev-shm-usage",
]


def launch(playwright: Any) -> Any:
    """A headless chromium of Debian's, from a running ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
