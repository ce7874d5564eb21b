"""macos-seatbelt's ssh route and filtered agent, the host side, against a real ``sshd`` and
``ssh-agent`` on loopback: ``sandbox-exec`` exists only on macOS, so (as in
test_seatbelt_platform) a stand-in runs the command without a sandbox — what is checked is what
prepare() gives it (``PATH``'s ssh/scp/sftp with egg's config, the proxy, the agent socket) and
the profile's holes for them, not Seatbelt's enforcement (the golden profiles show that).

The server's name resolves through the test network seam (a public-looking address whose
connections go to the sshd's loopback port), so the proxy decides as in production.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from egg_core.testing.network import transport
from egg_plugins.platforms.macos_seatbelt import MacSeatbelt
from tests.platforms.sbpl_check import check_profile
from tests.platforms.test_seatbelt_platform import launch_for
from tests.sshd import Server, keygen
from tests.sshd import start as start_sshd

HOST = "git.example.test"
PUBLIC = "93.184.216.41"
BATCH = ("-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes")


@pytest.fixture
def client_key(tmp_path: Path) -> Path:
    key = tmp_path / "client_key"
    keygen(key)
    return key


@pytest.fixture
def sshd(tmp_path: Path, client_key: Path) -> Iterator[Server]:
    server = start_sshd(tmp_path / "sshd", client_key.with_suffix(".pub").read_text())
    try:
        yield server
    finally:
        server.stop()


def ssh_launch(tmp_path: Path, server: Server, argv: list[str], *, entry: str, **env: str):
    """A launch of ``argv`` allowed ``entry``, with the user's known_hosts line for the server
    and the seam that sends HOST to it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "known_hosts").write_text(
        f"{HOST} {server.public_key}\nsecret.corp.example {server.public_key}\n"
    )
    launch = launch_for(
        tmp_path, "shell-default", network_need="https-filtered", domains=(entry,), home=home
    )
    seam = transport(f"{HOST}={PUBLIC}@127.0.0.1:{server.port}")
    return attrs.evolve(
        launch,
        argv=argv,
        env={**launch.env, **env},
        network_transport=seam,
        network_log=tmp_path / "network.log",
    )


def run(prepared) -> subprocess.CompletedProcess[str]:
    with prepared:
        return subprocess.run(
            prepared.argv, env=prepared.env, cwd=prepared.cwd, preexec_fn=prepared.preexec_fn,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip


def test_ssh_and_scp_on_path_reach_an_allowed_host_through_the_proxy(
    tmp_path: Path, on_macos: Path, sshd: Server, client_key: Path
) -> None:
    """``ssh`` and ``scp`` found on PATH are egg's: through the proxy (logged), with the allowed
    host's known_hosts line only, strict host key checking on; the profile reads the route."""
    out = tmp_path / "copied"
    script = (
        f"ssh -i {client_key} {' '.join(BATCH)} root@{HOST} echo over-ssh && "
        f"scp -q -i {client_key} {' '.join(BATCH)} root@{HOST}:{sshd.root}/authorized_keys {out}"
        " && command -v ssh"
    )
    launch = ssh_launch(tmp_path, sshd, ["sh", "-c", script], entry=f"{HOST}:22")

    prepared = MacSeatbelt().prepare(launch)
    route = prepared.env["PATH"].split(":")[0].removesuffix("/bin")
    result = run(prepared)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["over-ssh", f"{route}/bin/ssh"]
    assert len(sshd.logins()) == 2  # ssh's and scp's
    assert out.read_text() == client_key.with_suffix(".pub").read_text()
    assert route.startswith(str(launch.egg_home / "cache" / "ssh-route"))
    assert (Path(route) / "known_hosts").read_text() == f"{HOST} {sshd.public_key}\n"
    decisions = [json.loads(line) for line in (tmp_path / "network.log").read_text().splitlines()]
    assert any(d.get("host") == HOST and d.get("port") == 22 and d["decision"] == "allow"
               for d in decisions), decisions  # fmt: skip
    profile = prepared.argv[2]
    check_profile(profile)
    assert f'(allow file-read* (subpath "{route}"))' in profile
    assert f'(deny file-write* (subpath "{route}"))' in profile


def test_ssh_to_a_port_the_allowlist_does_not_name_fails_naming_the_entry(
    tmp_path: Path, on_macos: Path, sshd: Server, client_key: Path
) -> None:
    argv = ["ssh", "-i", str(client_key), *BATCH, f"root@{HOST}", "true"]
    launch = ssh_launch(tmp_path, sshd, argv, entry=HOST)

    result = run(MacSeatbelt().prepare(launch))

    assert result.returncode == 255
    assert f"add {HOST}:22 to network: in egg.yaml" in result.stderr, result.stderr
    assert sshd.logins() == []


@pytest.fixture
def agent(tmp_path: Path, client_key: Path) -> Iterator[Path]:
    """A real ssh-agent holding the client key."""
    sock = tmp_path / "agent" / "agent.sock"
    sock.parent.mkdir(mode=0o700)
    started = subprocess.run(
        ["ssh-agent", "-s", "-a", str(sock)], capture_output=True, text=True, timeout=30,
        check=True,
    )  # fmt: skip
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
    subprocess.run(["ssh-add", "-q", str(client_key)], env=env, check=True, timeout=30)
    try:
        yield sock
    finally:
        os.kill(pid, 15)


def test_the_filtered_agent_logs_in_and_refuses_changes(
    tmp_path: Path, on_macos: Path, sshd: Server, agent: Path
) -> None:
    """With SSH_AUTH_SOCK passed, the command's is egg's socket (in the launch's directory, a
    hole in the profile), it logs in to the allowed host and cannot remove the host's keys."""
    script = (
        f'echo "sock=$SSH_AUTH_SOCK"; ssh {" ".join(BATCH)} root@{HOST} echo via-agent; '
        'ssh-add -D; echo "D=$?"'
    )
    launch = ssh_launch(
        tmp_path, sshd, ["sh", "-c", script], entry=f"{HOST}:22", SSH_AUTH_SOCK=str(agent)
    )

    prepared = MacSeatbelt().prepare(launch)
    result = run(prepared)

    inside = launch.work_dir / "agent.sock"
    assert result.stdout.splitlines() == [f"sock={inside}", "via-agent", "D=1"], result.stderr
    listed = subprocess.run(
        ["ssh-add", "-L"], env={**os.environ, "SSH_AUTH_SOCK": str(agent)},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert listed.stdout.startswith("ssh-ed25519 ")  # the host's agent keeps its key
    assert f'(remote unix-socket (path-literal "{inside}"))' in prepared.argv[2]
    refused = [
        json.loads(line)
        for line in (tmp_path / "network.log").read_text().splitlines()
        if '"ssh-agent"' in line
    ]
    assert any("remove every key" in r["reason"] for r in refused), refused


def test_without_ssh_auth_sock_passed_there_is_no_agent_and_no_hole(
    tmp_path: Path, on_macos: Path, sshd: Server
) -> None:
    launch = ssh_launch(
        tmp_path, sshd, ["sh", "-c", 'echo "${SSH_AUTH_SOCK-unset}"'], entry=f"{HOST}:22"
    )
    launch = attrs.evolve(launch, env={k: v for k, v in launch.env.items() if k != "SSH_AUTH_SOCK"})

    prepared = MacSeatbelt().prepare(launch)
    result = run(prepared)

    assert result.stdout.strip() == "unset", result.stderr
    assert "agent.sock" not in prepared.argv[2]


def test_explain_describes_the_route_and_the_agent(tmp_path: Path, sshd: Server) -> None:
    launch = ssh_launch(tmp_path, sshd, ["true"], entry=f"{HOST}:22", SSH_AUTH_SOCK="/x/agent")

    detail = MacSeatbelt().describe(launch)

    assert "hole: ssh goes through egg's filtering proxy" in detail["ssh"]
    assert "host keys: 1 line(s)" in detail["ssh"]
    assert "SSH_AUTH_SOCK is egg's filtered ssh agent" in detail["ssh"]
    assert "/cache/ssh-route/" in detail["profile"]
    assert not (launch.egg_home / "cache" / "ssh-route").exists()  # a preview makes nothing
