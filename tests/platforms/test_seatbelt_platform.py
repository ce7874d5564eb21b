"""The macos-seatbelt platform object: availability, capabilities, command, and prepare().

``sandbox-exec`` exists only on macOS, so :meth:`prepare` is exercised here with the host check
patched and ``sandbox-exec`` replaced by a stand-in that ignores the profile and execs the command:
that checks everything prepare() does on the host side (argv, environment, rlimits, session, the
filtering proxy, cleanup, the compile check's error path), not Seatbelt's enforcement.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
from pathlib import Path

import attrs
import pytest

from egg_core import netproxy
from egg_core import sandbox as caps
from egg_core.errors import EnforcementError
from egg_core.sandbox import Launch
from egg_plugins.platforms.macos_seatbelt import MacSeatbelt
from tests.platforms.sbpl_check import check_profile, strings
from tests.platforms.seatbelt_cases import case, policy_for

REPORT = (
    "import json, os, resource; print(json.dumps({'env': dict(os.environ), "
    "'nofile': resource.getrlimit(resource.RLIMIT_NOFILE), "
    "'leader': os.getsid(0) == os.getpid()}))"
)


def launch_for(tmp_path: Path, name: str = "shell-default", **changes: object) -> Launch:
    policy = policy_for(case(name))
    if changes:
        policy = attrs.evolve(policy, **changes)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return Launch(
        policy=policy,
        argv=[sys.executable, "-c", REPORT],
        env={"PATH": os.environ.get("PATH", ""), "API_KEY": "sk-VERYSECRET"},
        cwd=tmp_path,
        work_dir=work,
        egg_home=tmp_path / "egg",
        tty=False,
    )


def run(prepared) -> dict:
    with prepared:
        proc = subprocess.run(
            prepared.argv,
            env=prepared.env,
            cwd=prepared.cwd,
            preexec_fn=prepared.preexec_fn,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- describing itself


@pytest.mark.skipif(sys.platform == "darwin", reason="the real host is macOS")
def test_unavailable_off_macos_with_a_clear_reason():
    ok, reason = MacSeatbelt().available()
    assert not ok
    assert "needs macOS" in reason and sys.platform in reason


def test_claims_no_memory_pids_or_jail_and_does_claim_the_escape_set():
    claimed = MacSeatbelt.capabilities
    assert not {caps.LIMIT_MEMORY, caps.LIMIT_PIDS, caps.FS_JAIL} & claimed
    assert {caps.SYSCALL_FILTER, caps.NET_FILTERED, caps.FS_DENY_READ, caps.ENV_FILTER} <= claimed


def test_the_default_policy_has_no_gaps():
    assert MacSeatbelt().gaps(policy_for(case("claude-filtered"))) == []


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"memory_bytes": 1 << 30}, "resources.memory needs limit.memory"),
        ({"max_pids": 100}, "resources.max_pids needs limit.pids"),
    ],
)
def test_limits_macos_cannot_enforce_are_gaps_with_a_fix(changes, needle):
    policy = attrs.evolve(policy_for(case("shell-default")), **changes)
    gaps = MacSeatbelt().gaps(policy)
    assert len(gaps) == 1 and needle in gaps[0] and "linux-ns" in gaps[0]


def test_command_is_sandbox_exec_with_the_profile_then_the_argv(tmp_path):
    launch = launch_for(tmp_path)
    command = MacSeatbelt().command(launch)
    assert Path(command[0]).name == "sandbox-exec" and command[1] == "-p"
    assert command[3:] == list(launch.argv)
    check_profile(command[2], preview=True)


def test_describe_shows_the_same_profile_and_the_proxy_variables(tmp_path):
    launch = launch_for(tmp_path, "claude-filtered")
    detail = MacSeatbelt().describe(launch)
    assert detail["profile"] == MacSeatbelt().command(launch)[2]
    assert '"localhost:<port>"' in detail["profile"]
    assert {"HTTPS_PROXY", "https_proxy", "NO_PROXY"} <= set(detail["env_added"])


def test_no_environment_value_is_on_the_command_line(tmp_path):
    launch = launch_for(tmp_path)
    assert "sk-VERYSECRET" not in " ".join(MacSeatbelt().command(launch))


def test_explain_shows_the_profile_on_any_os(egg_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = egg_cli.run("explain", "claude", "--platform", "macos-seatbelt", "--json").json()
    assert data["platform"] == "macos-seatbelt"
    profile = data["platform_detail"]["profile"]
    assert data["command"][2] == profile
    assert str(tmp_path) in "".join(strings(check_profile(profile, preview=True)))


# -- prepare()


@pytest.mark.skipif(sys.platform == "darwin", reason="the real host is macOS")
def test_prepare_off_macos_is_an_enforcement_error(tmp_path):
    with pytest.raises(EnforcementError, match="needs macOS"):
        MacSeatbelt().prepare(launch_for(tmp_path))


def test_prepare_refuses_a_memory_limit_before_starting_anything(tmp_path, on_macos):
    launch = launch_for(tmp_path, memory_bytes=1 << 30)
    with pytest.raises(EnforcementError, match="limit.memory"):
        MacSeatbelt().prepare(launch)


def test_prepare_refuses_max_fds_above_the_hard_limit(tmp_path, on_macos):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here")
    with pytest.raises(EnforcementError, match="resources.max_fds"):
        MacSeatbelt().prepare(launch_for(tmp_path, max_fds=hard + 1))


def test_prepared_argv_passes_the_profile_and_the_environment_not_on_the_command_line(
    tmp_path, on_macos
):
    prepared = MacSeatbelt().prepare(launch_for(tmp_path))
    assert prepared.argv[:2] == [str(on_macos), "-p"]
    check_profile(prepared.argv[2])
    assert "sk-VERYSECRET" not in " ".join(prepared.argv)
    report = run(prepared)
    assert report["env"]["API_KEY"] == "sk-VERYSECRET"
    assert "HTTPS_PROXY" not in report["env"]


def test_rlimits_and_a_new_session_apply_to_the_command(tmp_path, on_macos):
    prepared = MacSeatbelt().prepare(launch_for(tmp_path, max_fds=256))
    report = run(prepared)
    assert report["nofile"] == [256, 256]
    assert report["leader"], "without a terminal the command gets its own session"


def test_with_a_terminal_the_command_keeps_the_session(tmp_path, on_macos):
    launch = attrs.evolve(launch_for(tmp_path), tty=True)
    assert MacSeatbelt().prepare(launch).preexec_fn is None


def test_a_per_process_cpu_limit_kill_is_explained(tmp_path, on_macos):
    launch = attrs.evolve(
        launch_for(tmp_path, cpu_per_process_seconds=1.0),
        argv=[sys.executable, "-c", "while True: pass"],
    )
    prepared = MacSeatbelt().prepare(launch)
    with prepared:
        proc = subprocess.run(
            prepared.argv, env=prepared.env, preexec_fn=prepared.preexec_fn, timeout=60
        )
    code = prepared.command_exit_code(proc.returncode)
    assert prepared.exit_reason(code) == (
        "killed by the per-process CPU-time limit (resources.cpu_per_process)"
    )


def test_a_sandbox_cpu_budget_is_a_gap_that_names_the_per_process_limit(tmp_path):
    """macOS has nothing that accounts a session's processes together: resources.cpu is not
    quietly turned into a per-process limit."""
    gaps = MacSeatbelt().gaps(launch_for(tmp_path, cpu_seconds=60.0).policy)

    assert len(gaps) == 1
    assert gaps[0].startswith("resources.cpu needs limit.cpu")
    assert "resources.cpu_per_process" in gaps[0]


def test_a_profile_sandbox_exec_rejects_is_an_enforcement_error(tmp_path, on_macos):
    on_macos.write_text(
        '#!/bin/sh\necho "sandbox-exec: unbound variable: file-link" >&2\nexit 65\n'
    )
    with pytest.raises(EnforcementError, match="rejected the generated profile: .*file-link"):
        MacSeatbelt().prepare(launch_for(tmp_path))


# -- the filtering proxy on loopback


@pytest.fixture
def echo_server():
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _connect(port: int, target: str) -> tuple[bytes, socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head, sock


def _finish(sock: socket.socket) -> None:
    """Half-close and read to EOF: the proxy has finished with the connection when we get it."""
    with sock:
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(4096):
            pass


def test_filtered_network_runs_the_proxy_on_loopback(tmp_path, on_macos, echo_server):
    from egg_core.testing.network import transport

    launch = launch_for(
        tmp_path,
        "shell-default",
        network_need="https-filtered",
        domains=("allowed.example",),
    )
    seam = transport(f"allowed.example=93.184.216.34@127.0.0.1:{echo_server}")
    launch = attrs.evolve(launch, network_transport=seam)
    prepared = MacSeatbelt().prepare(launch)
    url = prepared.env["HTTPS_PROXY"]
    assert url.startswith("http://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1])
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        assert prepared.env[name] == url
    assert prepared.env["NO_PROXY"] == prepared.env["no_proxy"] == netproxy.NO_PROXY_INSIDE
    assert f'(remote tcp "localhost:{port}")' in prepared.argv[2]
    try:
        head, sock = _connect(port, "evil.example:443")
        _finish(sock)
        assert head.startswith(b"HTTP/1.1 403")
        head, sock = _connect(port, "allowed.example:443")
        assert head.startswith(b"HTTP/1.1 200")
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        _finish(sock)
    finally:
        prepared.cleanup()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    decisions = [
        json.loads(line) for line in (launch.work_dir / "network.log").read_text().splitlines()
    ]
    assert [(d["host"], d["decision"]) for d in decisions] == [
        ("evil.example", "deny"),
        ("allowed.example", "allow"),
    ]


def test_no_proxy_without_domains(tmp_path, on_macos):
    prepared = MacSeatbelt().prepare(launch_for(tmp_path, "ollama-local"))
    with prepared:
        assert "HTTPS_PROXY" not in prepared.env
        assert "localhost:11434" in strings(check_profile(prepared.argv[2]))
