"""The process table and the environment (DESIGN.md §9 F, D): the sandbox sees no host process,
no secret is ever on a command line, and only the allowed variables pass."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from .conftest import PY, Box, Listen


def host_cmdlines() -> dict[int, bytes]:
    """Every host process's command line (processes that exit meanwhile are skipped)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
    return found


def wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def test_host_processes_are_invisible(box: Box) -> None:
    marker = f"egg-host-marker-{box.secret}"
    host = subprocess.Popen([PY, "-c", "import time; time.sleep(30)", marker])
    try:
        deadline = time.monotonic() + 10  # the control: the host sees it
        while marker.encode() not in host_cmdlines().get(host.pid, b""):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # the probe's own command line must not contain the marker: it is spelled backwards
        found = box.probe(
            f"marker = {marker[::-1].encode()!r}[::-1]\n"
            "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
            "lines = []\n"
            "for p in pids:\n"
            "    try: lines.append(read(f'/proc/{p}/cmdline'))\n"
            "    except OSError: pass\n"
            "report(pids=len(pids), marker=any(marker in line for line in lines),"
            f" host_pid=os.path.exists('/proc/{host.pid}/cmdline')"
            f" and marker in read('/proc/{host.pid}/cmdline'))"
        )
    finally:
        host.kill()
        host.wait()

    assert found["marker"] is False
    assert found["host_pid"] is False
    assert found["pids"] < 10


def test_host_process_environment_is_unreachable(box: Box) -> None:
    host = subprocess.Popen(["sleep", "30"], env={"EGG_HOST_SECRET": box.secret})
    try:
        result = box.exec("sh", "-c", f"cat /proc/{host.pid}/environ /proc/*/environ")
    finally:
        host.kill()
        host.wait()

    assert box.secret.encode() not in result.stdout.encode()


def test_secrets_never_appear_on_a_host_command_line(box: Box) -> None:
    box.config({"env": ["FAKE_API_KEY"]})
    seen, go = box.workspace / "seen", box.workspace / "go"
    script = "printenv FAKE_API_KEY > seen; while [ ! -e go ]; do sleep 0.05; done"
    proc = subprocess.Popen(
        box.command("exec", "--", "sh", "-c", script),
        env=box.env({"FAKE_API_KEY": box.secret}),
        cwd=box.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(seen)
        cmdlines = host_cmdlines()
    finally:
        go.touch()
        proc.communicate(timeout=30)

    sandbox = [c for c in cmdlines.values() if b"bwrap" in c and str(box.workspace).encode() in c]
    assert sandbox, "the bwrap process was not found on the host"
    assert seen.read_text().strip() == box.secret  # it did reach the command
    assert not [c for c in cmdlines.values() if box.secret.encode() in c]
    assert proc.returncode == 0


def test_unlisted_variables_do_not_reach_the_command(box: Box) -> None:
    env = {"FAKE_API_KEY": box.secret, "AWS_SECRET_ACCESS_KEY": box.secret}

    result = box.exec("env", env=env)

    assert result.returncode == 0
    assert box.secret not in result.stdout
    assert f"HOME={box.home}" in result.stdout.splitlines()


def test_the_terminal_time_zone_and_locale_reach_the_command_by_default(box: Box) -> None:
    """No egg.yaml: COLORTERM, TZ, LANGUAGE and every LC_* name pass as the host has them."""
    from tests.policy.test_env import DESK

    result = box.exec("/usr/bin/env", env=DESK)

    assert result.returncode == 0, result.stderr
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert {name: seen.get(name) for name in DESK} == DESK


def test_an_environment_with_no_base_is_exactly_what_egg_yaml_lists(box: Box) -> None:
    """``base: {env: none}``: no variable the user did not list, HOME and PATH included."""
    box.config({"base": {"env": "none"}, "env": ["CUSTOM_ONLY"]})

    host = {"CUSTOM_ONLY": "yes", "OTHER": "no"}
    result = box.exec("/usr/bin/env", env=host)
    shown = box.run("explain", "--json", env=host)

    assert result.returncode == 0, result.stderr
    # and PWD, which the sandbox sets to where the command starts (bwrap's --chdir)
    assert sorted(result.stdout.splitlines()) == ["CUSTOM_ONLY=yes", f"PWD={box.workspace}"]
    assert json.loads(shown.stdout)["env"] == ["CUSTOM_ONLY"]


def test_parent_agent_session_variables_never_reach_the_command(box: Box) -> None:
    box.config({"env": "*"})
    env = {
        "CLAUDECODE": "1",
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "CLAUDE_CODE_SSE_PORT": "12345",
        "EGG_ORDINARY": "passes",
    }

    result = box.exec("env", env=env)
    names = {line.partition("=")[0] for line in result.stdout.splitlines()}

    assert result.returncode == 0
    assert "EGG_ORDINARY=passes" in result.stdout.splitlines()
    assert not names & {"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT"}


def test_ssh_auth_sock_is_dropped_and_its_socket_masked(box: Box, listen: Listen) -> None:
    # an agent socket somewhere the read-only root would otherwise show
    agent_dir = box.mkdir("agent-sockets/deeper/still", mode=0o700)
    path = str(agent_dir / "agent.sock")
    agent = listen(socket.AF_UNIX, path)
    os.chown(path, box.identity.uid, box.identity.gid)

    found = box.probe(
        f"report(variable=os.environ.get('SSH_AUTH_SOCK'),"
        f" connect=attempt(connect, socket.AF_UNIX, {path!r}))",
        env={"SSH_AUTH_SOCK": path},
    )

    assert found["variable"] is None
    assert found["connect"] != "ok"
    assert agent.received_nothing()


def test_background_process_does_not_outlive_the_command(box: Box) -> None:
    marker = f"egg-orphan-{box.secret}"
    result = box.exec(
        "sh", "-c", f"setsid {PY} -c 'import time; time.sleep(60)' {marker} & echo started"
    )
    deadline = time.monotonic() + 5
    while any(marker.encode() in c for c in host_cmdlines().values()):
        assert time.monotonic() < deadline, "a process started in the sandbox outlived it"
        time.sleep(0.05)

    assert result.stdout == "started\n"
