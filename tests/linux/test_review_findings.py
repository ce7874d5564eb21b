"""Escapes found in review, each attempted for real (and each now closed)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

from tests.linux.conftest import Box


def test_a_symlink_planted_in_a_writable_dir_does_not_redirect_an_agent_write_dir(box: Box) -> None:
    """A sandbox replaces ~/.cache/claude (claude's write dir, inside the writable ~/.cache) with
    a symlink to ~/.ssh; the next claude sandbox must not bind ~/.ssh through it. (The default's
    ~/.cache is the sandbox's own now; a config that gives it the host's is where this matters.)"""
    planted = box.exec(
        "sh",
        "-c",
        "rm -rf ~/.cache/claude && ln -s ../.ssh ~/.cache/claude",
        config={"fs": ["rw:~/.cache"]},
    )
    assert planted.returncode == 0, planted.stderr
    assert (box.home / ".cache" / "claude").is_symlink()

    result = box.exec(
        "sh",
        "-c",
        "cat ~/.ssh/id_ed25519; cat ~/.cache/claude/id_ed25519; "
        "echo pwned >> ~/.cache/claude/authorized_keys",
        options=["--agent", "claude"],
    )

    assert box.secret not in result.stdout + result.stderr
    assert not (box.home / ".ssh" / "authorized_keys").exists()


def test_a_symlink_planted_for_a_ro_rule_does_not_expose_a_denied_dir(box: Box) -> None:
    box.mkdir(box.workspace / "data")
    config = {"fs": ["ro:./data/shared"]}
    box.exec("sh", "-c", f"ln -s {box.home}/.ssh data/shared", config=config)
    assert (box.workspace / "data" / "shared").is_symlink()

    result = box.exec("cat", f"{box.home}/.ssh/id_ed25519")

    assert box.secret not in result.stdout + result.stderr


def test_settings_restore_does_not_write_through_a_planted_symlink(box: Box) -> None:
    """The agent plants ~/.claude/.settings.json.egg-restore -> a file elsewhere; restoring the
    settings snapshot must not write there, and must restore settings.json itself."""
    victim = box.write(box.root / "victim.txt", "untouched")
    settings = box.write(".claude/settings.json", '{"hooks": {}}')
    fake = box.write(
        box.workspace / "bin" / "claude",
        "#!/bin/sh\n"
        f'ln -s {victim} "$HOME/.claude/.settings.json.egg-restore"\n'
        'echo \'{"hooks": {"Stop": "evil"}}\' > "$HOME/.claude/settings.json"\n',
        mode=0o755,
    )
    env = {"PATH": f"{fake.parent}:/usr/local/bin:/usr/bin:/bin"}

    result = box.run("run", "claude", env=env, timeout=60)

    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "untouched"
    assert json.loads(settings.read_text()) == {"hooks": {}} and not settings.is_symlink()


def test_a_fifo_in_the_shared_dir_does_not_hang_the_session(box: Box) -> None:
    started = box.run(
        "run",
        "--detach",
        "--",
        "sh",
        "-c",
        "mkfifo /run/egg-session/browser-requests; sleep 30",
    )
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        time.sleep(1.5)
        status = box.run("status", session, "--json", timeout=15)
        assert status.returncode == 0, status.stderr
    finally:
        box.run("kill", session)


def test_an_empty_placeholder_egg_yaml_does_not_hide_the_user_global_config(box: Box) -> None:
    secret_dir = box.mkdir(box.root / "vault")
    box.write(secret_dir / "key", box.secret)
    box.config({"fs": [f"deny:{secret_dir}"]}, path=box.egg_home / "egg.yaml")
    box.write(box.workspace / "egg.yaml", "")  # what a crashed session leaves behind

    result = box.exec("cat", str(secret_dir / "key"))

    assert box.secret not in result.stdout


def test_an_empty_path_entry_does_not_run_a_workspace_bwrap(box: Box) -> None:
    marker = box.witness("bwrap-ran")
    box.write(box.workspace / "bwrap", f"#!/bin/sh\ntouch {marker}\n", mode=0o755)
    env = {"PATH": ":/usr/local/bin:/usr/bin:/bin"}

    box.exec("true", env=env)

    assert not marker.exists()


def test_an_exec_cache_entry_goes_stale_when_a_dangling_deny_target_appears(box: Box) -> None:
    vault = box.root / "vault-aws"
    shutil.rmtree(box.home / ".aws", ignore_errors=True)
    (box.home / ".aws").symlink_to(vault)  # deny:~/.aws, target missing for now
    env = {"EGG_EXEC_CACHE": "debug"}
    box.exec("cat", f"{vault}/credentials", env=env)
    assert "exec cache hit" in box.exec("cat", f"{vault}/credentials", env=env).stderr
    box.mkdir(vault)
    box.write(vault / "credentials", box.secret)

    result = box.exec("cat", f"{vault}/credentials", env=env)

    assert "exec cache miss" in result.stderr and box.secret not in result.stdout


def test_a_file_that_becomes_a_socket_is_refused_by_a_cached_launch(box: Box) -> None:
    # the socket gate judges connects as they happen: the cached launch (a hit: nothing it
    # rests on changed) refuses the host's new socket
    target = box.write(box.workspace / "ide.sock", "just a file")
    probe = (
        "import socket\ns=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect('ide.sock'); print('CONNECTED')\nexcept OSError: print('refused')\n"
    )
    env = {"EGG_EXEC_CACHE": "debug"}
    box.py(probe, env=env)
    assert "exec cache hit" in box.py(probe, env=env).stderr
    target.unlink()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(target))
    os.chown(target, box.identity.uid, box.identity.gid)
    server.listen()
    try:
        result = box.py(probe, env=env)
        assert "exec cache hit" in result.stderr and "CONNECTED" not in result.stdout
        assert "refused" in result.stdout
    finally:
        server.close()
        Path(target).unlink(missing_ok=True)


def test_an_exec_cache_entry_goes_stale_when_a_deep_socket_is_bound(box: Box) -> None:
    path = box.home / ".local" / "share" / "engine" / "sub" / "api.sock"
    box.mkdir(path.parent)
    probe = (
        "import socket\ns=socket.socket(socket.AF_UNIX)\n"
        f"try:\n s.connect({str(path)!r}); print('CONNECTED')\n"
        "except OSError as e: print('refused', e)\n"
    )
    env = {"EGG_EXEC_CACHE": "debug"}
    box.py(probe, env=env)
    assert "exec cache hit" in box.py(probe, env=env).stderr  # now from the cache
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen()
    try:
        result = box.py(probe, env=env)
        assert "CONNECTED" not in result.stdout
        assert "refused" in result.stdout
    finally:
        server.close()
        path.unlink(missing_ok=True)
