"""Class 7 of the persistence review: a sandbox cannot deny the user their own session.

A sandbox that opened ~20,000 connections to its proxy socket exhausted the session daemon's
descriptors: ``egg status`` and ``egg attach`` stopped answering and ``egg kill`` needed its
SIGKILL fallback.
"""

from __future__ import annotations

import json
import subprocess
import time

from tests.linux.conftest import EGG, PY, Box

FLOOD = r"""
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
limit = min(hard, 30000)
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
held = []
for _ in range(min(20000, limit - 100)):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("/run/egg-net/proxy.sock")
    except OSError:
        s.close()
        continue
    held.append(s)
print("held", len(held), flush=True)
time.sleep(120)
"""


def test_a_connection_flood_leaves_the_session_answering_and_killable(box: Box) -> None:
    script = box.write(box.root / "flood.py", FLOOD)
    box.config({"network": ["example.com"]})
    # the daemon gets the usual 1024 descriptors; the sandbox may raise its own to 4096 and
    # open more connections than the daemon could hold
    started = subprocess.run(
        box.identity.wrap(
            ["prlimit", "--nofile=1024:4096", EGG, "run", "--detach", "--", PY, "-I", str(script)]
        ),
        env=box.env(),
        cwd=box.workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        deadline = time.monotonic() + 60
        screen = ""
        while "held" not in screen and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = box.run("status", session, "--screen", timeout=20).stdout
        assert "held" in screen, screen
        status = box.run("status", session, "--json", timeout=30)  # a stall is the flood's 120 s
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["state"] == "running"
    finally:
        killed = box.run("kill", session, timeout=30)
    assert killed.returncode == 0, killed.stderr
    assert "SIGKILL" not in killed.stdout + killed.stderr
    log = next((box.egg_home / "sessions").rglob("network.log")).read_text()
    assert "connections open at once" in log


def test_a_screen_that_is_slow_to_render_never_stalls_the_session(box: Box) -> None:
    """About 1 MiB of ``ESC # 8`` took pyte minutes on the daemon's event loop: status, attach
    and kill all waited. Now the render runs off the loop, within a budget."""
    flood = "import os, time; os.write(1, b'\\x1b#8' * 350000); time.sleep(60)"
    started = box.run("run", "--detach", "--", PY, "-I", "-c", flood)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        deadline = time.monotonic() + 30
        while json.loads(box.run("status", session, "--json").stdout)["bytes"] < 1_000_000:
            assert time.monotonic() < deadline, "the flood never arrived"
            time.sleep(0.1)
        screen = subprocess.Popen(
            box.command("status", session, "--screen"),
            env=box.env(),
            cwd=box.workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.3)  # the render has started
        # a render on the loop held it for minutes; a busy host takes seconds to start egg
        during = box.run("status", session, "--json", timeout=30)
        out, err = screen.communicate(timeout=30)
    finally:
        box.run("kill", session)
    assert during.returncode == 0, during.stderr
    assert screen.returncode == 0, err
    assert "rendering stopped after" in err
    assert "E" * 80 in out  # what DECALN fills the screen with
