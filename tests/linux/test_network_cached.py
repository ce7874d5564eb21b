"""An exec cache hit with an allowlisted network (``egg exec --agent claude``): no bridge runs in
the sandbox; the proxy's listeners are made in the sandbox's own network namespace before the
command starts, and a child of egg's serves them (``egg_plugins.platforms.linux.fastnet``).
Root and uid 65534. Every address is loopback: the name asked for is refused before anything
resolves it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.linux.conftest import PY, Box, until_cached

HIT = "egg: exec cache hit"
#: the loopback seam off: a launch with it is never cached (its transport is an object). The
#: system transport is safe here: the only name asked for is refused before it is resolved
DEBUG = {"EGG_EXEC_CACHE": "debug", "EGG_TEST_NETWORK": ""}
#: from the command's first instant: the sandbox's processes, and the proxy's answer on each
#: loopback address to a CONNECT for a host no agent allows
PROBE = r"""
import json, os, socket

def answer(host):
    try:
        sock = socket.create_connection((host, 3128), timeout=10)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"
    sock.sendall(b"CONNECT unlisted.example:443 HTTP/1.1\r\nHost: unlisted.example:443\r\n\r\n")
    return sock.recv(100).split(b"\r\n")[0].decode()

def ipv6():
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
        return True
    except OSError:
        return False

processes = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                processes.append(handle.read().replace(b"\0", b" ").decode())
        except OSError:
            pass
print(json.dumps({
    "proxy": os.environ.get("HTTPS_PROXY"),
    "v4": answer("127.0.0.1"),
    "v6": answer("::1") if ipv6() else None,
    "bridge": [p for p in processes if "/bridge" + ".pyc" in p],  # (not this text itself)
}))
"""


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_cached_network_launch_runs_no_bridge_and_its_proxy_answers(box: Box, agent: str) -> None:
    options = ("--agent", agent)
    runs = until_cached(lambda: box.exec(PY, "-I", "-c", PROBE, options=options, env=DEBUG))
    first, hit = runs[0], runs[-1]

    assert HIT in hit.stderr.splitlines(), [run.stderr for run in runs]
    assert hit.returncode == 0, hit.stderr
    found = hit.json()
    assert found["proxy"] == "http://127.0.0.1:3128"
    assert found["v4"] == "HTTP/1.1 403 Forbidden"
    assert found["v6"] in (None, "HTTP/1.1 403 Forbidden")
    assert found["bridge"] == []
    # the full path's sandbox answers the same, through its bridge
    assert first.returncode == 0, first.stderr
    assert first.json()["v4"] == "HTTP/1.1 403 Forbidden"
    assert first.json()["bridge"]


def test_listeners_that_cannot_be_made_are_a_reason_not_a_crash() -> None:
    """The sandbox's pid 1 gone before egg could enter its namespace: the runner says why (a
    miss under EGG_EXEC_CACHE=debug, and the full path runs the launch), nothing is left."""
    from egg_plugins.platforms.linux import fastnet

    gone = subprocess.Popen(["true"])
    gone.wait()
    served = fastnet._Served({"domains": [], "local_ports": [], "mode": "enforce"}, [3128], [], "")

    why = served.start(gone.pid, os.getpid())

    assert why is not None and why.startswith("cannot listen in the sandbox's network: "), why
    assert why.endswith("No such process"), why
    assert served.child is None
