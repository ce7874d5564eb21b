"""``egg exec --agent AGENT`` from the cache: the second call is a hit, and what the agent's profile
made the decision read (its settings files, the variables it looks at) is what a later call is
checked against (``EGG_EXEC_CACHE=debug`` names what changed).

A launch whose network is an allowlist is cached with its proxy: the cached launch binds the
proxy's sockets itself and serves them, under the same rules, from a child process
(:mod:`egg_core.netchild`) that ends with the launch — also when egg itself is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.test_exec_cache import EGG, cached_call, egg_exec, hit, miss_reason

#: every built-in agent (each one's launch is cached, with its network if it has one)
AGENTS = sorted(
    ep.name for ep in entry_points(group="egg") if ep.value.startswith("egg_plugins.agents.")
)
#: asks the proxy, through the sandbox's 127.0.0.1 listener, for a host no agent allows
PROBE = (
    "import socket\n"
    "s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
    "s.sendall(b'CONNECT unlisted.example:443 HTTP/1.1\\r\\nHost: unlisted.example:443\\r\\n\\r\\n')\n"
    "print(s.recv(100).split(b'\\r\\n')[0].decode())\n"
)


def claude(work: Path, env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return egg_exec(work, env, *command, options=["--agent", "claude"])


def cached_claude(
    work: Path, env: dict[str, str], *command: str
) -> subprocess.CompletedProcess[str]:
    return cached_call(work, env, *command, options=["--agent", "claude"])


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_s_second_exec_is_a_hit(cache_workspace, agent: str) -> None:
    work, env = cache_workspace
    first = egg_exec(work, env, "true", options=["--agent", agent])
    assert first.returncode == 0, first.stderr
    cached_call(work, env, "true", options=["--agent", agent])


def test_the_builtin_agents_are_all_here() -> None:
    assert {"claude", "codex", "gemini", "shell"} <= set(AGENTS)


@pytest.mark.fact_check
def test_the_agent_s_settings_file_rewritten_is_a_miss_that_names_it(cache_workspace) -> None:
    work, env = cache_workspace
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    claude(work, env, "true")
    cached_claude(work, env, "true")
    # a hook that names a script: the decision read the file for the paths it names
    settings.write_text(json.dumps({"hooks": {"Stop": [{"command": str(work / "stop.sh")}]}}))
    result = claude(work, env, "true")
    assert not hit(result)
    assert miss_reason(result) == f"changed since it was cached: the contents of {settings}"


@pytest.mark.fact_check
def test_the_agent_s_project_settings_appearing_is_a_miss(cache_workspace) -> None:
    work, env = cache_workspace
    claude(work, env, "true")
    cached_claude(work, env, "true")
    (work / ".mcp.json").write_text('{"mcpServers": {}}\n')
    result = claude(work, env, "true")
    assert str(work / ".mcp.json") in miss_reason(result), result.stderr


def test_a_variable_the_agent_s_profile_reads_is_part_of_the_key(cache_workspace) -> None:
    work, env = cache_workspace
    claude(work, env, "true")
    cached_claude(work, env, "true")
    relocated = Path(env["HOME"]) / "claude-config"
    relocated.mkdir()
    result = claude(work, {**env, "CLAUDE_CONFIG_DIR": str(relocated)}, "true")
    assert miss_reason(result) == "the environment it read changed: CLAUDE_CONFIG_DIR"
    cached_claude(work, {**env, "CLAUDE_CONFIG_DIR": str(relocated)}, "true")


def test_a_cached_launch_s_proxy_enforces_the_agent_s_allowlist(cache_workspace) -> None:
    work, env = cache_workspace
    log = work.parent / "network.log"
    options = ["--agent", "claude", "--network-log", str(log)]
    first = egg_exec(work, env, sys.executable, "-c", PROBE, options=options)
    cached = cached_call(work, env, sys.executable, "-c", PROBE, options=options)
    assert first.stdout == cached.stdout == "HTTP/1.1 403 Forbidden\n", cached.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["host"], r["decision"]) for r in lines][-1] == ("unlisted.example", "deny")
    assert len(lines) >= 2  # the full path's proxy and the cached launch's both decided


def test_a_cached_launch_forwards_a_local_port(cache_workspace) -> None:
    work, env = cache_workspace
    with _echo_server() as port:
        (work / "egg.yaml").write_text(f"network:\n  local_ports: [{port}]\n")
        talk = (
            "import socket\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=10)\n"
            "s.sendall(b'hello'); print(s.recv(100).decode())\n"
        )
        first = egg_exec(work, env, sys.executable, "-c", talk)
        cached = cached_call(work, env, sys.executable, "-c", talk)
    assert first.stdout == cached.stdout == "pong:hello\n", cached.stderr


def test_the_network_seam_is_part_of_the_key_and_never_cached(cache_workspace) -> None:
    work, env = cache_workspace
    claude(work, env, "true")
    cached_claude(work, env, "true")
    seam = {**env, "EGG_TEST_NETWORK": "api.anthropic.com=203.0.113.7@127.0.0.1:9"}
    result = claude(work, seam, "true")
    assert miss_reason(result) == "the environment it read changed: EGG_TEST_NETWORK"
    # a plugin's transport is an object the cache cannot keep: every call is a full one
    assert not hit(claude(work, seam, "true"))


def test_the_proxy_child_ends_with_the_launch(cache_workspace) -> None:
    work, env = cache_workspace
    egg, child, tree = _running_hit(work, env)
    try:
        assert egg.stdin is not None
        egg.stdin.write("x")  # the command reads one byte and ends
        egg.stdin.close()
        assert egg.wait(timeout=30) == 0
        # egg killed and reaped it before it exited: not even a zombie is left
        assert not os.path.exists(f"/proc/{child}")
    finally:
        _end(egg, tree)


def test_the_proxy_child_ends_when_egg_is_killed(cache_workspace) -> None:
    work, env = cache_workspace
    egg, child, tree = _running_hit(work, env)
    try:
        egg.kill()
        egg.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        _end(egg, tree)


#: the command of the launches above: it waits for one byte on its stdin
WAITING = ["head", "-c1"]


def _running_hit(work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int, list[int]]:
    """A cached ``egg exec --agent claude -- head -c1`` whose command is running, the pid of
    its proxy child (the child of egg that is not bwrap), and every process under egg."""
    options = ["--agent", "claude"]
    egg_exec(work, env, *WAITING, options=options)  # stdin is empty: it ends at once
    for _ in range(5):
        egg = subprocess.Popen(
            [*EGG, "exec", *options, "--", *WAITING],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 10
        tree: list[int] = []
        while time.monotonic() < deadline and not any(_cmdline(p) == WAITING for p in tree):
            time.sleep(0.05)
            tree = _descendants(egg.pid)
        mine = [pid for pid in _children(egg.pid) if _cmdline(pid)[:1] == [sys.executable]]
        if mine:
            return egg, mine[0], tree
        # a miss (the shared host changed under the test): the full path serves the proxy
        # from a thread; the next call is a hit
        _, said = egg.communicate("x", timeout=30)
        assert not hit(subprocess.CompletedProcess([], 0, "", said)), said
    raise AssertionError("no cached launch with a proxy child")


def _end(egg: subprocess.Popen[str], tree: list[int]) -> None:
    """Leave nothing running, whatever the test found."""
    if egg.poll() is None:
        egg.kill()
    egg.wait(timeout=30)
    for pid in tree:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    for pipe in (egg.stdin, egg.stderr):
        if pipe is not None:
            pipe.close()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [a.decode() for a in handle.read().split(b"\0") if a]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """A process (not a zombie) has this pid."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@contextlib.contextmanager
def _echo_server() -> Iterator[int]:
    """A loopback TCP server on the host answering ``pong:`` and what it was sent; its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong:" + conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
