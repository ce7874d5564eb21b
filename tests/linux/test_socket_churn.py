"""Launches on a busy host: unix sockets come and go around every launch.

A program binds a socket every 10 ms (100/s) — in directories that come and go and in one that
stays, under the workspace, under ``$HOME`` and outside both — and removes each 50 ms later,
while launches run (``egg exec`` with the exec cache on and off, ``egg run``, and ``egg run
--detach``): 48 of them (12 of each) in CI, 300 with ``EGG_TEST_FULL=1``. Every launch must
succeed, no host socket may be reachable from inside one — not even one bound while it runs
(the socket gate judges each connect) — and no session daemon may be left once its program
ended."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests import leftovers
from tests.linux.conftest import PY, Box, Result
from tests.volumes import volume

LAUNCHES = volume(ci=48, full=300)

CHURN = r"""
import json, os, socket, sys, time
roots = sys.argv[1:-1]
log = open(sys.argv[-1], "w", buffering=1)
live = []  # (removal time, path, sock, dir to remove or None)
n = 0
while True:
    now = time.time()
    for item in [i for i in live if i[0] <= now]:
        _, path, sock, gone = item
        sock.close()
        try:
            os.unlink(path)
            if gone:
                os.rmdir(os.path.dirname(path)); os.rmdir(gone)
        except OSError:
            pass
        log.write(json.dumps({"path": path, "removed": time.time()}) + "\n")
        live.remove(item)
    root = roots[n % len(roots)]
    if n % 2:  # a directory that comes and goes with its socket
        gone = os.path.join(root, f"c{n}")
        os.makedirs(os.path.join(gone, "sub"))
        path = os.path.join(gone, "sub", f"x{n}.sock")
    else:  # a directory that stays
        gone = None
        os.makedirs(os.path.join(root, "persist"), exist_ok=True)
        path = os.path.join(root, "persist", f"x{n}.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(path)
    sock.listen(64)
    log.write(json.dumps({"path": path, "created": time.time()}) + "\n")
    live.append((time.time() + 0.05, path, sock, gone))
    n += 1
    time.sleep(0.01)
"""

#: inside: connect to every socket the churn roots hold, report the ones that answered
PROBE = r"""
import json, os, socket, sys
reached = []
for root in sys.argv[1:]:
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(0.2)
            try:
                s.connect(path)
                reached.append(path)
            except OSError:
                pass
            finally:
                s.close()
print(json.dumps({"reached": reached}))
"""


#: the launch paths each churn test takes in turn
KINDS = ("exec cached", "exec uncached", "run", "run --detach")


def launch(box: Box, kind: str, probe: list[str], env: dict[str, str]) -> Result:
    """One launch of ``kind``: ``probe`` run by ``egg exec`` or ``egg run``; a detached session
    runs ``true`` (its output is the session's)."""
    if kind == "run":
        return box.run("run", "--", *probe, env=env)
    if kind == "run --detach":
        return box.run("run", "--detach", "--", "true", env=env)
    return box.exec(*probe, env=env)


def test_launches_never_fail_and_never_reach_a_host_socket(box: Box) -> None:
    outside = box.mkdir(box.root / "outside")  # neither in the workspace nor in $HOME
    roots = [box.workspace / "churn", box.home / "churn", outside / "churn"]
    for root in roots:
        box.mkdir(root)
    log = box.home / "churn.log"
    churn = subprocess.Popen(
        box.identity.wrap([PY, "-I", "-c", CHURN, *map(str, roots), str(log)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    probe = [PY, "-I", "-c", PROBE, *map(str, roots)]
    launches = []
    try:
        time.sleep(0.3)
        for i in range(LAUNCHES):
            kind = KINDS[i % len(KINDS)]
            env = {"EGG_EXEC_CACHE": "0" if kind == "exec uncached" else "1"}
            started = time.time()
            result = launch(box, kind, probe, env)
            launches.append((kind, started, time.time(), result))
    finally:
        churn.terminate()
        churn.wait(10)
    assert churn.returncode is not None

    failures = [(kind, r.returncode, r.stderr[-300:]) for kind, _, _, r in launches if r.returncode]
    assert failures == [], f"{len(failures)} of {len(launches)} launches failed: {failures[:3]}"
    # every detached session ends, and leaves no daemon behind (its program ended)
    left = leftovers.wait_gone(leftovers.session_roots([box.egg_home]), timeout=60)
    assert left == [], f"session daemons outlived their launch: {left}"
    reached = []
    for kind, _, _, result in launches:
        if kind == "run --detach":
            continue  # its output is the session's
        line = next(x for x in result.stdout.splitlines() if '{"reached"' in x)
        reached += [(kind, path) for path in json.loads(line[line.index("{") :])["reached"]]
    assert reached == [], f"host sockets were reachable: {reached[:5]}"
    assert sum(1 for _ in Path(log).read_text().splitlines()) > 200  # the churn really ran


def test_a_launch_that_fails_before_its_command_says_why_in_one_line(box: Box) -> None:
    """bwrap's own reason is part of egg's one line; egg run also names its log, which has it;
    egg run --detach waits for the command to start, and says the same when it never did."""
    box.config({"resources": {"max_fds": 5}})  # bwrap itself cannot start with so few

    ran = box.exec("true")
    session = box.run("run", "--", "true")
    detached = box.run("run", "--detach", "--", "true")

    assert ran.returncode == 125
    assert ran.stderr.count("\n") == 1
    assert "the sandbox failed before the command started: bwrap: " in ran.stderr
    assert session.returncode == 125
    line = next(x for x in session.stderr.splitlines() if "failed before" in x)
    assert "bwrap: " in line
    # a detached session that never ran its command is not a session id and exit 0
    assert detached.returncode == 125, detached.stdout + detached.stderr
    assert detached.stdout == ""
    line = next(x for x in detached.stderr.splitlines() if "failed before" in x)
    assert "bwrap: " in line
    log = Path(line.split("(log: ", 1)[1].rstrip(")]"))
    assert "bwrap: " in log.read_text()


MASK_LAUNCHES = volume(ci=24, full=200)

#: an ssh-agent socket and a denied file that exist half the time, 15 ms on, 15 ms off
FLICKER = r"""
import os, socket, sys, time
agent, denied = sys.argv[1:3]
while True:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(agent)
    sock.listen(8)
    with open(denied, "w") as f:
        f.write("secret\n")
    time.sleep(0.015)
    sock.close()
    os.unlink(agent)
    os.unlink(denied)
    time.sleep(0.015)
"""


def test_a_masked_file_that_vanishes_before_the_mount_never_fails_a_launch(box: Box) -> None:
    """egg masks files it finds (an ssh-agent's socket, a container engine's, a ``deny:`` file)
    by binding an empty file over each; one gone by the time bwrap mounts would make bwrap
    create its mount point in a read-only tree and abort. An ssh-agent socket vanishes whenever
    the ``ssh -A`` session that made it ends: launches must not fail over it, on any path, and
    the socket stays unreachable whenever it is there (the socket gate judges it, mask or none).
    A denied file that does not exist when a launch is prepared is not hidden from that launch
    (the README says so), so what was read of it is not asserted."""
    agent_dir = box.mkdir(box.root / "ssh-agent")
    agent = agent_dir / "agent.sock"
    denied = box.mkdir(box.root / "secrets") / "token"
    box.config({"fs": [f"deny:{denied}"]})
    flicker = subprocess.Popen(
        box.identity.wrap([PY, "-I", "-c", FLICKER, str(agent), str(denied)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    probe = [
        PY,
        "-I",
        "-c",
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1]); reached = True\nexcept OSError:\n    reached = False\n"
        "try:\n    read = open(sys.argv[2]).read()\nexcept OSError:\n    read = ''\n"
        "print(json.dumps({'masked': [reached, read]}))",
        str(agent),
        str(denied),
    ]
    launches = []
    try:
        time.sleep(0.2)
        for i in range(MASK_LAUNCHES):
            kind = KINDS[i % len(KINDS)]
            env = {
                "EGG_EXEC_CACHE": "0" if kind == "exec uncached" else "1",
                "SSH_AUTH_SOCK": str(agent),
            }
            result = launch(box, kind, probe, env)
            launches.append((kind, result))
    finally:
        flicker.terminate()
        flicker.wait(10)
    assert flicker.returncode == -15, flicker.stderr.read()  # it flickered until stopped

    failures = [(kind, r.returncode, r.stderr[-300:]) for kind, r in launches if r.returncode]
    assert failures == [], f"{len(failures)} of {len(launches)} launches failed: {failures[:3]}"
    left = leftovers.wait_gone(leftovers.session_roots([box.egg_home]), timeout=60)
    assert left == [], f"session daemons outlived their launch: {left}"
    seen = []
    for kind, result in launches:
        if kind != "run --detach":
            line = next(x for x in result.stdout.splitlines() if '{"masked"' in x)
            seen.append(json.loads(line[line.index("{") :])["masked"])
    assert len(seen) == MASK_LAUNCHES * 3 // 4
    assert [reached for reached, _ in seen if reached] == []
