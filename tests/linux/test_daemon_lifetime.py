"""A session daemon never outlives its purpose (issue 23: churn checks left daemons with a PTY and
no child, asleep in epoll, surviving SIGTERM, an hour later).

A daemon whose program never started, or has ended, exits once its one client had the chance to
read the end; and SIGTERM ends a daemon in every state: starting, running, its program ended,
its launch failed. Real daemons started by the real ``egg run``, as root and as uid 65534; the
platforms and hooks that hold a daemon in a state are plugins loaded the way any plugin is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import leftovers
from tests.helpers import write_dist
from tests.linux.conftest import EGG, Box

#: seconds a daemon may take to be gone: after its program's end, or after SIGTERM when its
#: program ends at SIGTERM (KILL_GRACE is 5 s for a program that ignores it)
BOUND = 10.0

#: a platform whose first launch fails before its command starts for a reason that came and went
#: (so the daemon prepares it again, as it does when a host socket vanished under bwrap), and
#: whose second preparation is refused: the host changed under egg twice
REFIT = """
from egg_core.api import Availability, EnforcementError, Platform, Prepared, hookimpl


class Refit(Platform):
    name = "refit"
    description = "fails once, then cannot be prepared again"
    outer_boundary = True
    preparations = 0

    def available(self):
        return Availability(True, "a test platform")

    def command(self, launch):
        return list(launch.argv)

    def prepare(self, launch):
        Refit.preparations += 1
        if Refit.preparations > 1:
            raise EnforcementError("the host changed again under this launch")
        prepared = Prepared(
            argv=["/bin/sh", "-c", "sleep 0.5; exit 1"], env=dict(launch.env), cwd=launch.cwd
        )
        prepared.set_exit_code_reader(lambda returncode: None)  # the command never started
        prepared.set_retry_check(lambda said: True)  # ... for a reason that came and went
        return prepared


@hookimpl
def egg_register_platforms(register):
    register(Refit())
"""

#: a plugin whose session hook never returns (writing its mark first), holding the daemon in
#: that step: egg_session_started (start-up) or egg_session_ended (its program has ended).
#: The mark appears whole (renamed into place): a test that sees it reads the pid, never an
#: empty file the write has not filled yet
STUCK = """
import os, time
from egg_core.api import hookimpl

MARK = {mark!r}


@hookimpl
def {hook}:
    with open(MARK + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.replace(MARK + ".tmp", MARK)
    time.sleep(600)
"""


def plugin(box: Box, name: str, source: str) -> dict[str, str]:
    """The environment that loads ``source`` as the plugin ``name`` (an installed distribution
    readable by the identity)."""
    site = write_dist(box.root / f"site-{name}", f"egg-{name}", "1", {name: name}, {name: source})
    return {"PYTHONPATH": str(site)}


def daemon_of(box: Box, session: str) -> int:
    return int((box.egg_home / "sessions" / session / "egg.pid").read_text())


def meta(box: Box, session: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (box.egg_home / "sessions" / session / "egg.meta").read_text()
    )
    return data


def still_running(box: Box, session: str, timeout: float = BOUND) -> list[leftovers.Leftover]:
    """The session's daemon and sandbox if they are still there after ``timeout`` seconds (an
    empty list, falsy, when they are gone by then)."""
    directory = box.egg_home / "sessions" / session
    return leftovers.wait_gone([directory], timeout)


def sigterm(box: Box, pid: int) -> None:
    """SIGTERM from the daemon's own user (what a user's ``kill`` sends)."""
    subprocess.run(box.identity.wrap(["kill", "-TERM", str(pid)]), check=True, timeout=10)


def detached(box: Box, *args: str, env: dict[str, str] | None = None) -> str:
    result = box.run("run", "--detach", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


# -- a daemon whose program never started exits -------------------------------------------------


def test_a_daemon_whose_bwrap_refused_to_start_exits(box: Box) -> None:
    box.config({"resources": {"max_fds": 5}})  # bwrap itself cannot start with so few
    result = box.run("run", "--detach", "--", "true")
    # --detach waits for the sandbox: it says so, and gives no id of a session that never ran
    assert result.returncode == 125, result.stderr
    assert result.stdout == ""
    session = result.stderr.split("egg: error: session ", 1)[1].split(":", 1)[0]

    assert not still_running(box, session)
    assert meta(box, session)["exit_code"] == 125


def test_a_daemon_whose_launch_cannot_be_prepared_again_exits_and_says_why(box: Box) -> None:
    session = detached(box, "--platform", "refit", "--", "true", env=plugin(box, "refit", REFIT))

    assert not still_running(box, session)
    ended = meta(box, session)
    assert ended["state"] == "exited" and ended["exit_code"] == 125
    assert "the host changed again under this launch" in str(ended["exit_reason"])


# -- SIGTERM ends a daemon in every state --------------------------------------------------------


def test_sigterm_ends_a_starting_daemon_and_its_sandbox(box: Box) -> None:
    mark = box.witness("started")
    env = plugin(box, "stuck", STUCK.format(mark=str(mark), hook="egg_session_started(session)"))
    run = subprocess.Popen(
        box.command("run", "--detach", "--", "sleep", "600", egg=EGG),
        env=box.env(env),
        cwd=box.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(mark)  # its sandbox runs; the daemon is still in its start-up
        (session,) = (p.parent.name for p in (box.egg_home / "sessions").glob("*/egg.pid"))
        sigterm(box, int(mark.read_text()))

        assert not still_running(box, session)
        _, stderr = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode != 0
    assert "SIGTERM" in stderr
    assert meta(box, session)["state"] == "failed"


def test_sigterm_ends_a_running_daemon_and_its_program(box: Box) -> None:
    session = detached(box, "--", "sleep", "600")

    sigterm(box, daemon_of(box, session))

    assert not still_running(box, session)
    ended = meta(box, session)
    assert ended["state"] == "exited" and ended["exit_reason"] == "ended by SIGTERM"


def test_sigterm_ends_a_daemon_whose_program_ignores_it(box: Box) -> None:
    """SIGKILL after KILL_GRACE, and the end recorded (not the deadline's kill, which cannot)."""
    session = detached(box, "--", "sh", "-c", "trap '' TERM; echo ready; sleep 600")
    wait_status(box, session, lambda data: bool(data["bytes"]))  # the trap is set

    sigterm(box, daemon_of(box, session))

    assert not still_running(box, session)
    ended = meta(box, session)
    assert ended["state"] == "exited" and ended["exit_reason"] == "ended by SIGTERM"


def test_sigterm_ends_a_daemon_whose_program_ended_while_a_hook_hangs(box: Box) -> None:
    """The daemon's loop is blocked in a plugin's hook: a handler that only sets a flag for the
    loop would never run; the daemon still goes, within TERM_DEADLINE."""
    from egg_core.session.daemon import TERM_DEADLINE

    mark = box.witness("ended")
    env = plugin(
        box, "stuck", STUCK.format(mark=str(mark), hook="egg_session_ended(session, exit_code)")
    )
    session = detached(box, "--", "true", env=env)
    wait_for(mark)

    sigterm(box, daemon_of(box, session))

    assert not still_running(box, session, TERM_DEADLINE + 5)


@pytest.mark.parametrize("program", ["ended", "never started"])
def test_sigterm_ends_a_daemon_waiting_for_its_client(box: Box, program: str) -> None:
    """``egg run`` (not detached) starts its daemon, which keeps the end of a program that ended
    at once until egg run attaches: SIGTERM ends that wait at once, program or no program."""
    if program == "never started":
        box.config({"resources": {"max_fds": 5}})
    run = subprocess.Popen(
        box.command("run", "--", "true", egg=EGG),
        env=box.env(),
        cwd=box.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        sessions = box.egg_home / "sessions"
        deadline = time.monotonic() + 30
        while not (list(sessions.glob("*/egg.pid")) if sessions.exists() else []):
            assert time.monotonic() < deadline, "the session never started"
            time.sleep(0.005)
        # the daemon has only begun its start-up: egg run, stopped now, never attaches
        os.killpg(run.pid, signal.SIGSTOP)
        (session,) = (p.parent.name for p in sessions.glob("*/egg.pid"))
        wait_status(box, session, lambda data: data["exit_code"] is not None)  # it has ended

        sigterm(box, daemon_of(box, session))

        assert not still_running(box, session, 3.0)  # at once: the wait for the client is 10 s
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(10)


def wait_status(box: Box, session: str, done: Callable[[dict[str, Any]], bool]) -> None:
    """Until what the daemon says of its session (``egg status --json``) satisfies ``done``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = box.run("status", session, "--json")
        if result.returncode == 0 and done(json.loads(result.stdout)):
            return
        time.sleep(0.1)
    raise AssertionError(f"session {session} never got there: {result.stdout}{result.stderr}")


def test_a_program_that_closes_its_terminal_leaves_the_daemon_serving(box: Box) -> None:
    """The terminal's end is not the program's: the daemon waits for its SIGCHLD, answering
    clients and SIGTERM meanwhile (a blocking wait would hold the loop for the whole sleep)."""
    session = detached(
        box,
        "--platform",
        "unsandboxed",
        "--",
        "sh",
        "-c",
        "echo closing; exec </dev/null >/dev/null 2>&1; sleep 600",
    )
    time.sleep(1)  # the terminal has no writer left by now

    status = box.run("status", session, "--json", timeout=30)  # a blocked loop: the sleep's 600 s
    assert status.returncode == 0 and json.loads(status.stdout)["exit_code"] is None
    sigterm(box, daemon_of(box, session))
    assert not still_running(box, session)
    assert meta(box, session)["exit_reason"] == "ended by SIGTERM"
