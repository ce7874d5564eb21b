"""egg web against egg attach: a session's first paint, keystroke-to-echo latency, and the
daemon's throughput with a browser client attached against a terminal client, in one run.

- First paint: from asking for the session's page (Chromium, over loopback) until the program's
  banner is text in the page; against spawning ``egg attach ID`` in a PTY until the banner is
  read from it.
- Keystroke to echo: a key typed into the page (``egg web --allow-input``) until the session's
  echo of it is in the page; against a key written into ``egg attach``'s PTY until its echo is
  read back. The session runs ``cat`` (the terminal echoes).
- Throughput: the program writes N MiB (``cat FILE``) while one client is attached, a browser
  page or ``egg attach`` in a PTY drained as fast as this script can; MiB/s is N over the time
  the program took (``date`` before and after, inside), the daemon's pace with that client.

The browser is Debian's chromium driven by Playwright (no download), headless, with the flags
that keep it off the network. HOME and EGG_HOME are a private directory under /var/tmp.

Run from a clean clone after ./scripts/setup:  .venv/bin/python bench/web.py [--write]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# bench/pty.py would shadow the standard library's pty (which ptyprocess imports): this
# directory goes last on the path, for the shared helpers
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]
sys.path.append(str(_HERE))
sys.path.insert(0, str(_HERE.parent))  # the checkout: tests.browser, the tests' own browser

import ptyprocess  # noqa: E402
from _report import machine, write_section  # noqa: E402

from tests.browser import launch as browser_launch  # noqa: E402

MiB = 1 << 20
TEXT = "() => document.querySelector('.xterm-rows')?.innerText ?? ''"


class Bench:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.egg = str(Path(sys.executable).with_name("egg"))
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "EGG_HOME": str(root / ".egg"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
        }
        self.sessions: list[str] = []

    def session(self, script: str) -> str:
        result = subprocess.run(
            [self.egg, "run", "--detach", "--rows", "40", "--cols", "120", "--", "sh", "-c", script],
            env=self.env, cwd=self.work, capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.sessions.append(result.stdout.split()[-1])
        return self.sessions[-1]

    def kill_all(self) -> None:
        for ident in self.sessions:
            subprocess.run([self.egg, "kill", ident], env=self.env, capture_output=True)

    def attach(self, ident: str) -> ptyprocess.PtyProcess:
        return ptyprocess.PtyProcess.spawn(
            [self.egg, "attach", ident], env=self.env, cwd=str(self.work), dimensions=(40, 120)
        )


def read_until(fd: int, needle: bytes, timeout: float = 30) -> float:
    """Read ``fd`` until ``needle`` is seen; the time it was."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise SystemExit(f"timed out waiting for {needle!r}")
        seen = (seen + os.read(fd, 1 << 16))[-4096:]
    return time.perf_counter()


def drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while select.select([fd], [], [], 0.2)[0]:
            if not os.read(fd, 1 << 16):
                return


@contextlib.contextmanager
def web(bench: Bench) -> Iterator[tuple[str, str]]:
    proc = subprocess.Popen(
        [bench.egg, "web", "--listen", "127.0.0.1:0", "--allow-input"],
        env=bench.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        yield url, url.partition("/?token=")[0]
    finally:
        proc.terminate()
        proc.wait(10)


def first_paint(bench: Bench, page: object, base: str, rounds: int) -> tuple[float, float]:
    browser, terminal = [], []
    for number in range(rounds):
        banner = f"BANNER-{number}-OK"
        ident = bench.session(f"echo {banner}; exec sleep 600")
        time.sleep(0.5)  # the session is up
        start = time.perf_counter()
        page.goto(f"{base}/s/{ident}")  # type: ignore[attr-defined]
        page.wait_for_function(f"() => ({TEXT})().includes({banner!r})", polling="raf")  # type: ignore[attr-defined]
        browser.append(time.perf_counter() - start)
        start = time.perf_counter()
        client = bench.attach(ident)
        terminal.append(read_until(client.fd, banner.encode()) - start)
        client.terminate(force=True)
    return statistics.median(browser), statistics.median(terminal)


#: in the page: the time from the next keydown to the moment the terminal's rows hold the text
#: (a MutationObserver), kept in window.__eggEcho, so that Playwright's round trips are not
#: counted
ECHO_PROBE = """(typed) => {
  const rows = document.querySelector('.xterm-rows');
  window.__eggEcho = undefined;
  let start = null;
  const observer = new MutationObserver(() => {
    if (start !== null && rows.innerText.includes(typed)) {
      observer.disconnect();
      window.__eggEcho = performance.now() - start;
    }
  });
  observer.observe(rows, { childList: true, subtree: true, characterData: true });
  document.addEventListener('keydown', () => { start = performance.now(); },
    { capture: true, once: true });
}"""


def echo_latency(bench: Bench, page: object, base: str, keys: int) -> tuple[float, float]:
    ident = bench.session("echo READY; exec cat")
    page.goto(f"{base}/s/{ident}")  # type: ignore[attr-defined]
    page.wait_for_function(f"() => ({TEXT})().includes('READY')", polling="raf")  # type: ignore[attr-defined]
    page.locator("#terminal").click()  # type: ignore[attr-defined]
    browser = []
    for number in range(keys):
        typed = f"k{number}x"
        page.keyboard.type(typed[:-1])  # type: ignore[attr-defined]
        time.sleep(0.1)  # echoed by now
        page.evaluate(ECHO_PROBE, typed)  # type: ignore[attr-defined]
        page.keyboard.press(typed[-1])  # type: ignore[attr-defined]
        page.wait_for_function("() => window.__eggEcho !== undefined")  # type: ignore[attr-defined]
        browser.append(page.evaluate("() => window.__eggEcho") / 1e3)  # type: ignore[attr-defined]
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        time.sleep(0.05)
    page.goto("about:blank")  # type: ignore[attr-defined]
    client = bench.attach(ident)
    read_until(client.fd, b"READY")
    drain(client.fd)
    terminal = []
    for number in range(keys):
        typed = f"zz{number}q".encode()
        start = time.perf_counter()
        os.write(client.fd, typed)
        terminal.append(read_until(client.fd, typed) - start)
        os.write(client.fd, b"\r")
        drain(client.fd)
    client.terminate(force=True)
    return statistics.median(browser), statistics.median(terminal)


def socket_echo(bench: Bench, url: str, keys: int) -> float:
    """Keystroke to echo for a WebSocket client of egg web that is not a browser: egg's own part
    of the browser's latency (the rest is the page's rendering)."""
    from websockets.sync.client import connect

    ident = bench.session("echo READY; exec cat")
    base, _, token = url.partition("/?token=")
    port = base.rsplit(":", 1)[1]
    address = f"ws://127.0.0.1:{port}/ws/{ident}?rows=40&cols=120"
    found = []
    with connect(
        address, additional_headers={"Authorization": f"Bearer {token}"}, origin=base
    ) as ws:
        seen = b""
        while b"READY" not in seen:
            message = ws.recv(timeout=30)
            seen += message if isinstance(message, bytes) else b""
        for number in range(keys):
            typed = f"w{number}x".encode()
            start = time.perf_counter()
            ws.send(typed)
            seen = b""
            while typed not in seen:
                message = ws.recv(timeout=30)
                seen += message if isinstance(message, bytes) else b""
            found.append(time.perf_counter() - start)
            ws.send(b"\r")
            time.sleep(0.02)
    return statistics.median(found)


def throughput(
    bench: Bench, page: object, base: str, size: int, rounds: int
) -> tuple[float, float]:
    data = bench.work / "data.txt"
    line = b"the quick brown fox jumps over the lazy dog 0123456789 " * 2 + b"\n"
    with open(data, "wb") as handle:
        for _ in range(size // len(line)):
            handle.write(line)
    script = (
        "echo READY; read go; s=$(date +%s%N); cat data.txt; e=$(date +%s%N); "
        "echo ELAPSED=$((e-s))END; exec sleep 600"
    )
    found: dict[str, list[float]] = {"browser": [], "terminal": []}
    for _ in range(rounds):
        for kind in ("browser", "terminal"):
            ident = bench.session(script)
            if kind == "browser":
                page.goto(f"{base}/s/{ident}")  # type: ignore[attr-defined]
                page.wait_for_function(f"() => ({TEXT})().includes('READY')", polling="raf")  # type: ignore[attr-defined]
                page.locator("#terminal").click()  # type: ignore[attr-defined]
                page.keyboard.press("Enter")  # type: ignore[attr-defined]
                page.wait_for_function(f"() => /ELAPSED=\\d+END/.test(({TEXT})())", timeout=300_000)  # type: ignore[attr-defined]
                text = page.evaluate(TEXT)  # type: ignore[attr-defined]
            else:
                client = bench.attach(ident)
                read_until(client.fd, b"READY")
                os.write(client.fd, b"\r")
                seen = b""
                while not re.search(rb"ELAPSED=\d+END", seen[-200:]):
                    seen = (seen + os.read(client.fd, 1 << 16))[-4096:]
                text = seen.decode("latin-1")
                client.terminate(force=True)
            nanoseconds = int(re.search(r"ELAPSED=(\d+)END", text).group(1))  # type: ignore[union-attr]
            found[kind].append(size / MiB / (nanoseconds / 1e9))
            subprocess.run([bench.egg, "kill", ident], env=bench.env, capture_output=True)
    return statistics.median(found["browser"]), statistics.median(found["terminal"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--size", type=int, default=20, help="MiB the program writes")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        bench = Bench(Path(tmp))
        try:
            with web(bench) as (url, base), sync_playwright() as playwright:
                browser = browser_launch(playwright)
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                page.goto(url)
                paint = first_paint(bench, page, base, args.rounds)
                echo = echo_latency(bench, page, base, args.keys)
                bare = socket_echo(bench, url, args.keys)
                rate = throughput(bench, page, base, args.size * MiB, max(1, args.rounds // 2))
                browser.close()
        finally:
            bench.kill_all()
    rows = [
        f"| first paint of a session (to its banner) | {paint[0] * 1e3:.0f} ms | "
        f"{paint[1] * 1e3:.0f} ms | {paint[0] / paint[1]:.1f}x |",
        f"| keystroke to echo | {echo[0] * 1e3:.1f} ms | {echo[1] * 1e3:.1f} ms | "
        f"{echo[0] / echo[1]:.1f}x |",
        f"| keystroke to echo, a WebSocket client that is no browser | {bare * 1e3:.1f} ms | "
        f"{echo[1] * 1e3:.1f} ms | {bare / echo[1]:.1f}x |",
        f"| daemon throughput, {args.size} MiB of text | {rate[0]:.0f} MiB/s | {rate[1]:.0f} MiB/s "
        f"| {rate[0] / rate[1]:.2f}x |",
    ]
    body = (
        f"Machine: {machine()}. Medians: {args.rounds} first paints, {args.keys} keys, "
        f"{max(1, args.rounds // 2)} throughput runs each.\n\n"
        "| | egg web (Chromium) | egg attach (PTY) | ratio |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nA first paint in the browser includes loading the page and its scripts (xterm.js, "
        "about 480 KiB, from egg), opening the WebSocket and the daemon's repaint; egg attach "
        "includes starting a Python process. Echo in the page is measured from the key's keydown to "
        "the moment its echo is in the terminal's rows (xterm.js draws once per animation "
        "frame, 16.7 ms at 60 Hz); in the PTY, to the read. The row without a browser is egg's "
        "own part of the page's latency: the WebSocket, the bridge and the daemon."
    )
    print(body)
    if args.write:
        write_section("egg web: a browser client against egg attach", body)


if __name__ == "__main__":
    main()
