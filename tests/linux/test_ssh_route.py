"""ssh and git over SSH inside the sandbox, against a real ``sshd`` on loopback: through egg's
filtering proxy (allowed ``HOST:PORT`` only, decided and logged), with the host user's known_hosts
lines for allowed hosts (a server presenting another key is refused), nothing of the user's
``~/.ssh`` readable and nothing the sandbox does reaching it.

The server's name resolves through the test network seam (``EGG_TEST_NETWORK``: a public-looking
address whose connections go to the sshd's loopback port), so the proxy's checks run as in
production. The client's key is a file of the workspace given with ``-i``: the user's own keys
stay unreadable (the agent filter is what gives a sandbox the use of them).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.linux.conftest import Box
from tests.sshd import Server
from tests.sshd import keygen as _keygen
from tests.sshd import start as start_sshd

HOST = "git.example.test"
PUBLIC = "93.184.216.40"  # public-looking: the proxy refuses non-public addresses


@pytest.fixture
def sshd(box: Box, tmp_path: Path) -> Iterator[Server]:
    """A real sshd on a loopback port (:mod:`tests.sshd`) that lets the box's client key in."""
    client = box.workspace / "client_key"
    _keygen(client)
    for path in (client, client.with_suffix(".pub")):
        os.chown(path, box.identity.uid, box.identity.gid)
    server = start_sshd(tmp_path / "sshd", client.with_suffix(".pub").read_text())
    try:
        yield server
    finally:
        server.stop()


def seam(server: Server) -> dict[str, str]:
    return {"EGG_TEST_NETWORK": f"{HOST}={PUBLIC}@127.0.0.1:{server.port}"}


def known_hosts(box: Box, *lines: str) -> Path:
    path = box.home / ".ssh" / "known_hosts"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    for p in (path.parent, path):
        os.chown(p, box.identity.uid, box.identity.gid)
    return path


def hashed(name: str) -> str:
    salt = os.urandom(20)
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


SSH = ("ssh", "-i", "client_key", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes")


def test_ssh_reaches_an_allowed_host_through_the_proxy_with_its_known_host_key(
    box: Box, sshd: Server
) -> None:
    """``network: [HOST:22]`` and the user's (hashed) known_hosts line for it: ssh inside runs
    a command on the server with strict host key checking, through the proxy, logged."""
    known_hosts(box, f"{hashed(HOST)} {sshd.public_key}", f"other.example.org {sshd.public_key}")
    log = box.home / "network.log"

    result = box.exec(
        *SSH, f"root@{HOST}", "echo", "over-ssh", config={"network": [f"{HOST}:22"]},
        env=seam(sshd), options=["--network-log", str(log)],
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "over-ssh"
    assert len(sshd.logins()) == 1, sshd.logins()  # what the refused cases' empty list means
    decisions = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(d.get("host") == HOST and d.get("port") == 22 and d["decision"] == "allow"
               for d in decisions), decisions  # fmt: skip


def test_only_the_allowed_hosts_known_hosts_lines_are_visible_and_read_only(
    box: Box, sshd: Server
) -> None:
    kept = f"{HOST} {sshd.public_key}"
    path = known_hosts(box, kept, f"secret-host.corp.example {sshd.public_key}")

    result = box.exec(
        "sh", "-c", "cat /run/egg-ssh/known_hosts; echo x >> /run/egg-ssh/known_hosts; "
        f"cat {path}",
        config={"network": [f"{HOST}:22"]}, env=seam(sshd),
    )  # fmt: skip

    assert kept in result.stdout
    assert "secret-host" not in result.stdout  # neither the copy nor the user's file shows it
    assert "Read-only file system" in result.stderr or "Permission denied" in result.stderr
    assert path.read_text().count("\n") == 2  # the host's file is untouched


def test_a_server_presenting_another_key_under_an_allowed_name_is_refused(
    box: Box, sshd: Server, tmp_path: Path
) -> None:
    other = tmp_path / "other_key"
    _keygen(other)
    known_hosts(box, f"{HOST} " + " ".join(other.with_suffix(".pub").read_text().split()[:2]))

    result = box.exec(
        *SSH, f"root@{HOST}", "echo", "over-ssh", config={"network": [f"{HOST}:22"]},
        env=seam(sshd),
    )  # fmt: skip

    assert result.returncode != 0 and "over-ssh" not in result.stdout
    assert "IDENTIFICATION HAS CHANGED" in result.stderr or "verification failed" in result.stderr
    assert sshd.logins() == []


@pytest.mark.parametrize("allowed", [HOST, "other.example.test:22"], ids=["port", "host"])
def test_ssh_to_a_host_or_port_the_allowlist_does_not_name_fails_naming_the_entry(
    box: Box, sshd: Server, allowed: str
) -> None:
    """``HOST`` alone allows 80 and 443, and another host's entry allows nothing here: ssh to
    HOST:22 is refused by the proxy, the message says which egg.yaml entry would allow it, and
    the server never saw a login."""
    known_hosts(box, f"{HOST} {sshd.public_key}")

    result = box.exec(*SSH, f"root@{HOST}", "true", config={"network": [allowed]}, env=seam(sshd))

    assert result.returncode == 255
    assert f"add {HOST}:22 to network: in egg.yaml" in result.stderr, result.stderr
    assert sshd.logins() == []


def test_git_clones_and_pushes_over_ssh_through_the_proxy(
    box: Box, sshd: Server, tmp_path: Path
) -> None:
    """scp-style ``root@HOST:path`` and ``ssh://`` URLs: git finds egg's route through the
    system ssh config, whatever the agent's own settings."""
    repo = tmp_path / "served.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", str(seed)], check=True)
    (seed / "README").write_text("served over ssh\n")
    git = ["git", "-C", str(seed), "-c", "user.name=t", "-c", "user.email=t@example.test"]
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "seed"], check=True)
    subprocess.run([*git, "push", "-q", str(repo), "HEAD:refs/heads/main"], check=True)
    known_hosts(box, f"{HOST} {sshd.public_key}")
    key = box.workspace / "client_key"
    ssh_command = f"ssh -i {key} -o BatchMode=yes -o StrictHostKeyChecking=yes"
    script = (
        f"git -c core.sshCommand='{ssh_command}' clone -q root@{HOST}:{repo} scp-style && "
        f"git -c core.sshCommand='{ssh_command}' clone -q ssh://root@{HOST}/{repo} url-style && "
        "cd url-style && echo more >> README && "
        "git -c user.name=a -c user.email=a@example.test commit -qam more && "
        f"git -c core.sshCommand='{ssh_command}' push -q origin HEAD:refs/heads/pushed"
    )

    result = box.exec("sh", "-c", script, config={"network": [f"{HOST}:22"]}, env=seam(sshd))

    assert result.returncode == 0, result.stderr
    assert (box.workspace / "scp-style" / "README").read_text() == "served over ssh\n"
    pushed = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s", "pushed"], capture_output=True, text=True
    )
    assert pushed.stdout.split() == ["more", "seed"]


def test_explain_lists_the_ssh_route_and_the_host_keys(box: Box) -> None:
    known_hosts(box, f"{HOST} ssh-ed25519 AAAAkey", "secret-host.corp.example ssh-ed25519 AAAAk")

    result = box.run("explain", "--json", "--", "true", config={"network": [f"{HOST}:22"]})

    assert result.returncode == 0, result.stderr
    ssh = json.loads(result.stdout)["platform_detail"]["ssh"]
    assert "hole: ssh goes through egg's filtering proxy" in ssh
    assert "host keys: 1 line(s)" in ssh


def test_policy_suggest_proposes_host_22_for_a_refused_ssh_connection(
    box: Box, sshd: Server
) -> None:
    known_hosts(box, f"{HOST} {sshd.public_key}")
    log = box.home / "network.log"
    box.exec(
        *SSH, f"root@{HOST}", "true", config={"network": [HOST]}, env=seam(sshd),
        options=["--network-log", str(log)],
    )  # fmt: skip

    result = box.run("policy", "suggest", "--log", str(log), "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["add"] == [f"{HOST}:22"], result.stdout


def test_a_cached_launch_keeps_the_route_and_learns_a_changed_host_key(box: Box) -> None:
    """The second launch is an exec cache hit with the same route; a known_hosts line changed
    on the host is a miss that gives the sandbox the new line (the host keys are facts of the
    entry), so a key the user replaced is not trusted inside from a stale copy. The system's
    network transport (a launch through the test seam is never cached); nothing connects."""
    known_hosts(box, f"{HOST} ssh-ed25519 AAAAfirst")
    env = {"EGG_EXEC_CACHE": "debug", "EGG_DISABLE_PLUGINS": "test-network"}
    config = {"network": [f"{HOST}:22"]}
    command = ("sh", "-c", "cat /run/egg-ssh/known_hosts; grep -c ProxyCommand /etc/ssh/ssh_config")

    first = box.exec(*command, config=config, env=env)
    second = box.exec(*command, env=env)
    known_hosts(box, f"{HOST} ssh-ed25519 AAAAsecond")
    third = box.exec(*command, env=env)

    assert first.stdout == second.stdout == f"{HOST} ssh-ed25519 AAAAfirst\n1\n", first.stderr
    assert "exec cache hit" in second.stderr, second.stderr
    assert "exec cache hit" not in third.stderr
    assert third.stdout == f"{HOST} ssh-ed25519 AAAAsecond\n1\n", third.stderr


# -- the filtered ssh agent ----------------------------------------------------------------------


@contextlib.contextmanager
def running_agent(box: Box, key: Path, name: str = "agent") -> Iterator[Path]:
    """A real ssh-agent of the box's identity on the host, holding ``key``, whose file is then
    removed (no key file is left for the sandbox); ended afterwards."""
    directory = box.mkdir(box.root / name, mode=0o700)
    sock = directory / "agent.sock"
    started = subprocess.run(
        box.identity.wrap(["ssh-agent", "-s", "-a", str(sock)]),
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        os.chown(key, box.identity.uid, box.identity.gid)
        subprocess.run(
            box.identity.wrap(["ssh-add", "-q", str(key)]), env=env, check=True, timeout=30
        )
        key.unlink()
        yield sock
    finally:
        os.kill(pid, 15)


@pytest.fixture
def agent(box: Box, sshd: Server) -> Iterator[Path]:
    """The agent holding the client key (which the server lets in)."""
    with running_agent(box, box.workspace / "client_key") as sock:
        yield sock


def host_agent_keys(box: Box, sock: Path) -> list[str]:
    listed = subprocess.run(
        box.identity.wrap(["ssh-add", "-L"]), env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return [line for line in listed.stdout.splitlines() if line.startswith("ssh-")]


AGENT_CONFIG = {"network": [f"{HOST}:22"], "env": ["SSH_AUTH_SOCK"]}
BATCH = ("ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes")


def test_the_filtered_agent_logs_in_to_an_allowed_host_and_refuses_changes(
    box: Box, sshd: Server, agent: Path
) -> None:
    """With SSH_AUTH_SOCK in env:, ssh logs in with the user's agent (no key file anywhere in
    the sandbox); the socket inside is egg's, not the host's; listing works; removing every key
    and locking are refused, and the host's agent still holds its key."""
    known_hosts(box, f"{HOST} {sshd.public_key}")
    log = box.home / "network.log"
    script = (
        f'echo "sock=$SSH_AUTH_SOCK"; {" ".join(BATCH)} root@{HOST} echo via-agent; '
        'ssh-add -l >/dev/null && echo listed; ssh-add -D; echo "D=$?"'
    )

    result = box.exec(
        "sh", "-c", script, config=AGENT_CONFIG,
        env={**seam(sshd), "SSH_AUTH_SOCK": str(agent)}, options=["--network-log", str(log)],
    )  # fmt: skip

    lines = result.stdout.splitlines()
    assert "sock=/run/egg-net/agent.sock" in lines, result.stdout + result.stderr
    assert "via-agent" in lines and "listed" in lines, result.stdout + result.stderr
    assert "D=1" in lines
    assert len(host_agent_keys(box, agent)) == 1
    records = [json.loads(line) for line in log.read_text().splitlines()]
    refused = [r["reason"] for r in records if r.get("kind") == "ssh-agent" and
               r["decision"] == "deny"]  # fmt: skip
    assert any("remove every key" in r for r in refused), refused


def test_the_filtered_agent_signs_nothing_for_a_server_whose_key_is_not_an_allowed_hosts(
    box: Box, sshd: Server, agent: Path
) -> None:
    """The server's key is not in known_hosts (ssh is told to accept it anyway): its session
    binding names a key no allowed host has, so the agent signs nothing and the login fails."""
    known_hosts(box)
    log = box.home / "network.log"

    result = box.exec(
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", f"root@{HOST}",
        "echo", "via-agent", config=AGENT_CONFIG,
        env={**seam(sshd), "SSH_AUTH_SOCK": str(agent)}, options=["--network-log", str(log)],
    )  # fmt: skip

    assert result.returncode != 0 and "via-agent" not in result.stdout
    assert "Permission denied" in result.stderr, result.stderr
    reasons = [json.loads(line).get("reason", "") for line in log.read_text().splitlines()]
    assert any("a host key no allowed host has" in r for r in reasons), reasons
    assert sshd.logins() == []


def test_a_signature_without_a_session_binding_is_refused(
    box: Box, sshd: Server, agent: Path
) -> None:
    """A program that asks the agent to sign straight away (no ssh session at all), to lock it
    or to add a key gets the protocol's failure answer; listing works."""
    known_hosts(box, f"{HOST} {sshd.public_key}")
    probe = (
        "import os, socket, struct\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(os.environ['SSH_AUTH_SOCK'])\n"
        "def ask(kind, body=b''):\n"
        "    s.sendall(struct.pack('>IB', len(body) + 1, kind) + body)\n"
        "    n = struct.unpack('>I', s.recv(4))[0]; data = b''\n"
        "    while len(data) < n: data += s.recv(n - len(data))\n"
        "    return data\n"
        "ids = ask(11)\n"
        "blob_len = struct.unpack('>I', ids[5:9])[0]; blob = ids[9:9 + blob_len]\n"
        "s_ = lambda b: struct.pack('>I', len(b)) + b\n"
        "sign = ask(13, s_(blob) + s_(b'anything') + bytes(4))[0]\n"
        "print('identities', ids[0], 'sign', sign, 'lock', ask(22, s_(b'pw'))[0],"
        " 'add', ask(17, s_(b'ssh-ed25519'))[0])\n"
    )

    result = box.exec(
        "python3", "-I", "-c", probe, config=AGENT_CONFIG,
        env={**seam(sshd), "SSH_AUTH_SOCK": str(agent)},
    )  # fmt: skip

    assert result.stdout.split() == [
        "identities", "12", "sign", "5", "lock", "5", "add", "5"
    ], result.stderr  # fmt: skip
    assert sshd.logins() == []


def test_the_filtered_agent_logs_in_to_a_host_certified_by_an_allowed_hosts_authority(
    box: Box, tmp_path: Path
) -> None:
    """known_hosts trusts a certificate authority for the host (``@cert-authority``), not a
    key: the server presents a host certificate that authority signed for it, and the filtered
    agent binds the session as ssh accepts the server; another name's authority line would not
    do (the agent filter's unit tests hold the refusals)."""
    authority = tmp_path / "host_ca"
    _keygen(authority)
    client = box.workspace / "client_key"
    _keygen(client)
    server = start_sshd(
        tmp_path / "sshd", client.with_suffix(".pub").read_text(), certified_as=(authority, HOST)
    )
    try:
        ca = " ".join(authority.with_suffix(".pub").read_text().split()[:2])
        known_hosts(box, f"@cert-authority {HOST} {ca}")
        with running_agent(box, client, "agent-cert") as sock:
            result = box.exec(
                *BATCH, f"root@{HOST}", "echo", "via-certified-host", config=AGENT_CONFIG,
                env={**seam(server), "SSH_AUTH_SOCK": str(sock)},
            )  # fmt: skip
        assert result.stdout.strip() == "via-certified-host", result.stderr
        assert len(server.logins()) == 1
    finally:
        server.stop()


def test_without_ssh_auth_sock_in_env_there_is_no_agent_inside(
    box: Box, sshd: Server, agent: Path
) -> None:
    known_hosts(box, f"{HOST} {sshd.public_key}")

    result = box.exec(
        "sh", "-c", 'echo "sock=${SSH_AUTH_SOCK-unset}"', config={"network": [f"{HOST}:22"]},
        env={**seam(sshd), "SSH_AUTH_SOCK": str(agent)},
    )  # fmt: skip

    assert result.stdout.strip() == "sock=unset", result.stderr
