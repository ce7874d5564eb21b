"""Threat H, class 1: nothing a sandbox writes into git's metadata runs on the host's git.

Every attack plants a command (``core.fsmonitor``, a hook, ``core.hooksPath``) that would touch a
marker file, then the host's real git runs as the user would (``git status`` as a shell prompt
does, ``git diff``, ``git commit``) and the marker must not appear.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.linux.conftest import Box

MONITOR = "core.fsmonitor"


def host_git(box: Box, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The host's git, as the box's user, with the user's own environment."""
    return subprocess.run(
        box.identity.wrap(["git", *args]),
        cwd=cwd or box.workspace,
        env=box.env({"GIT_AUTHOR_DATE": "2026-01-01T00:00:00", "GIT_EDITOR": "true"}),
        capture_output=True,
        text=True,
        timeout=60,
    )


def make_repo(box: Box, where: Path | None = None) -> Path:
    where = where or box.workspace
    box.mkdir(where)
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        done = host_git(box, *args, cwd=where)
        assert done.returncode == 0, done.stderr
    box.write(where / "file.txt", "one\n")
    host_git(box, "add", "file.txt", cwd=where)
    host_git(box, "commit", "-q", "-m", "file", cwd=where)
    return where


def marker(box: Box, name: str = "PWNED") -> Path:
    return box.witness(name)


def evil(box: Box, name: str = "PWNED") -> str:
    """A command that leaves the marker (and fails, so fsmonitor falls back quietly)."""
    return f"touch {marker(box, name)}; false"


def assert_host_git_runs_nothing(box: Box, cwd: Path | None = None) -> None:
    """status (a shell prompt's), diff, and a commit with a change: no marker appears."""
    cwd = cwd or box.workspace
    status = host_git(box, "status", "--short", cwd=cwd)
    assert status.returncode == 0, status.stderr
    host_git(box, "diff", cwd=cwd)
    box.write(cwd / "host-change.txt", f"{time.time()}\n")
    host_git(box, "add", "host-change.txt", cwd=cwd)
    commit = host_git(box, "commit", "-q", "-m", "host commit", cwd=cwd)
    assert commit.returncode == 0, commit.stderr
    assert not marker(box).exists(), "the host's git ran a command the sandbox planted"
    assert not list(box.witness("").glob("PWNED*"))


# -- existing repositories: protected while the sandbox runs ------------------------------------


def test_commondir_cannot_point_the_hosts_git_at_a_sandbox_config(box: Box) -> None:
    make_repo(box)
    attack = box.exec(
        "sh",
        "-c",
        f"mkdir -p elsewhere/hooks && printf '[core]\\n\\tfsmonitor = \"{evil(box)}\"\\n' "
        "> elsewhere/config && cp -r .git/objects .git/refs .git/HEAD elsewhere/ && "
        'echo "$PWD/elsewhere" > .git/commondir',
    )

    assert attack.returncode != 0
    assert "Read-only" in attack.stderr
    assert not (box.workspace / ".git" / "commondir").exists()
    assert_host_git_runs_nothing(box)


def test_the_commondir_placeholder_is_harmless_to_the_hosts_git_during_the_run(box: Box) -> None:
    """While the sandbox runs, the host sees ``.git/commondir`` holding ``.``: git works."""
    make_repo(box)
    script = (
        "cat .git/commondir; touch /run/egg-session/ready 2>/dev/null; "
        "i=0; while [ $i -lt 100 ] && [ ! -e host-done ]; do sleep 0.1; i=$((i+1)); done"
    )
    proc = subprocess.Popen(
        box.command("exec", "--", "sh", "-c", script),
        env=box.env(),
        cwd=box.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pointer = box.workspace / ".git" / "commondir"
        deadline = time.monotonic() + 30
        while not pointer.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pointer.read_text() == ".\n"
        status = host_git(box, "status", "--short")
        log = host_git(box, "log", "--oneline")
        box.write(box.workspace / "host-done", "")
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert status.returncode == 0 and log.returncode == 0, status.stderr + log.stderr
    assert "file" in log.stdout
    assert out.startswith("."), err
    assert not pointer.exists(), "the placeholder outlived the run"


def test_config_worktree_cannot_be_created_where_git_reads_it(box: Box) -> None:
    make_repo(box)
    host_git(box, "config", "extensions.worktreeConfig", "true")
    attack = box.exec(
        "sh", "-c", f"printf '[core]\\n\\tfsmonitor = \"{evil(box)}\"\\n' > .git/config.worktree"
    )

    assert attack.returncode != 0
    assert_host_git_runs_nothing(box)


def test_hooks_cannot_be_added_even_when_the_hooks_directory_is_missing(box: Box) -> None:
    make_repo(box)
    subprocess.run(["rm", "-rf", str(box.workspace / ".git" / "hooks")], check=True)
    attack = box.exec(
        "sh",
        "-c",
        f"mkdir -p .git/hooks; printf '#!/bin/sh\\n{evil(box)}\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit",
    )

    assert attack.returncode != 0
    assert not (box.workspace / ".git" / "hooks").exists(), "the placeholder outlived the run"
    assert_host_git_runs_nothing(box)


def test_config_cannot_gain_a_hooks_path_or_an_fsmonitor(box: Box) -> None:
    make_repo(box)
    attack = box.exec(
        "sh",
        "-c",
        f"git config {MONITOR} '{evil(box)}'; git config core.hooksPath ./myhooks; "
        f"printf '[core]\\n\\tfsmonitor = x\\n' >> .git/config",
    )

    assert attack.returncode != 0
    assert "fsmonitor" not in (box.workspace / ".git" / "config").read_text()
    assert_host_git_runs_nothing(box)


def test_an_existing_submodules_gitfile_and_gitdir_are_protected(box: Box) -> None:
    upstream = make_repo(box, box.root / "upstream")
    make_repo(box)
    added = host_git(
        box, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "lib"
    )
    assert added.returncode == 0, added.stderr
    host_git(box, "commit", "-q", "-m", "submodule")
    evil_dir = "$PWD/evil-gitdir"
    attack = box.exec(
        "sh",
        "-c",
        f"git -C lib config {MONITOR} '{evil(box)}'; "
        f"cp -r .git/modules/lib evil-gitdir; git --git-dir=evil-gitdir config {MONITOR} "
        f"'{evil(box)}'; echo \"gitdir: {evil_dir}\" > lib/.git; "
        f"printf '[core]\\n\\tfsmonitor = x\\n' >> .git/modules/lib/config",
    )

    assert attack.returncode != 0
    assert (box.workspace / "lib" / ".git").read_text().startswith("gitdir: ../.git/modules")
    assert_host_git_runs_nothing(box)


def test_the_agent_can_still_commit_branch_stash_and_rebase_inside(box: Box) -> None:
    make_repo(box)
    work = box.exec(
        "sh",
        "-c",
        "set -e; export GIT_AUTHOR_DATE=2026-01-01T00:00:00; "
        "git checkout -q -b feature; echo two >> file.txt; git commit -qam two; "
        "git checkout -q -; echo other > other.txt; git add other.txt; git commit -qm other; "
        "echo wip >> other.txt; git stash -q; git stash pop -q; git checkout -q other.txt; "
        "git checkout -q feature; git rebase -q -; git tag v1; git gc -q; "
        "git log --oneline | wc -l",
    )

    assert work.returncode == 0, work.stderr
    assert work.stdout.strip() == "4"
    log = host_git(box, "log", "--oneline", "feature")
    assert log.stdout.count("\n") == 4


# -- repositories that appear during the run: audited afterwards --------------------------------

NESTED_REPO = (
    "git init -q sub && git -C sub commit -q --allow-empty -m s && "
    "git -C sub config {monitor} '{command}' && "
    'git update-index --add --cacheinfo "160000,$(git -C sub rev-parse HEAD),sub"'
)


@pytest.mark.parametrize("path", ["exec (cache miss)", "exec (cache hit)"])
def test_a_staged_nested_repository_is_neutralized_after_the_run(box: Box, path: str) -> None:
    """``git status`` descends into every gitlink of the index, .gitmodules or not."""
    make_repo(box)
    script = box.write(box.root / "attack.sh", "true\n")
    if path == "exec (cache hit)":
        warm = box.exec("sh", str(script), env={"EGG_EXEC_CACHE": "debug"})
        assert "exec cache miss" in warm.stderr
    script.write_text(NESTED_REPO.format(monitor=MONITOR, command=evil(box)))
    attack = box.exec("sh", str(script), env={"EGG_EXEC_CACHE": "debug"})

    assert attack.returncode == 0, attack.stderr
    if path == "exec (cache hit)":
        assert "exec cache hit" in attack.stderr
    assert "git: dropped core.fsmonitor" in attack.stderr
    config = box.workspace / "sub" / ".git" / "config"
    assert "fsmonitor" not in config.read_text()
    quarantined = list((box.egg_home / "quarantine").rglob("*sub%.git%config"))
    assert quarantined and "fsmonitor" in quarantined[0].read_text()
    assert_host_git_runs_nothing(box)


def test_git_init_in_a_plain_directory_keeps_a_working_repository_and_nothing_runnable(
    box: Box,
) -> None:
    hook = f"#!/bin/sh\\n{evil(box)}\\n"
    attack = box.exec(
        "sh",
        "-c",
        "set -e; git init -q; git config user.name agent; git config remote.origin.url "
        f"https://example.com/r.git; git config {MONITOR} '{evil(box)}'; "
        "git config core.hooksPath .githooks; git config alias.st '!touch nope'; "
        f"printf '{hook}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        "git commit -q --allow-empty -m agent",
    )

    assert attack.returncode == 0, attack.stderr
    assert "git: dropped alias.st, core.fsmonitor, core.hookspath" in attack.stderr
    assert "git: removed" in attack.stderr and "pre-commit" in attack.stderr
    config = host_git(box, "config", "--list")
    assert "user.name=agent" in config.stdout
    assert "remote.origin.url=https://example.com/r.git" in config.stdout
    assert "fsmonitor" not in config.stdout and "hookspath" not in config.stdout
    assert [p.name for p in (box.workspace / ".git" / "hooks").iterdir()] == [] or all(
        p.name.endswith(".sample") for p in (box.workspace / ".git" / "hooks").iterdir()
    )
    assert_host_git_runs_nothing(box)
    assert host_git(box, "log", "--oneline").stdout.count("\n") == 2


def test_a_linked_worktree_created_inside_cannot_redirect_its_commondir(box: Box) -> None:
    make_repo(box)
    attack = box.exec(
        "sh",
        "-c",
        "set -e; git worktree add -q wt; mkdir -p evil/hooks; cp -r .git/objects .git/refs "
        f".git/HEAD evil/; printf '[core]\\n\\tfsmonitor = \"{evil(box)}\"\\n' > evil/config; "
        'echo "$PWD/evil" > .git/worktrees/wt/commondir',
    )

    assert attack.returncode == 0, attack.stderr
    assert "git: removed" in attack.stderr and "commondir" in attack.stderr
    assert_host_git_runs_nothing(box, box.workspace / "wt")


def test_a_session_neutralizes_a_new_nested_repository_while_it_still_runs(box: Box) -> None:
    """A shell prompt runs ``git status`` long before the session ends."""
    make_repo(box)
    script = NESTED_REPO.format(monitor=MONITOR, command=evil(box)) + "; sleep 60"
    started = box.run("run", "--detach", "--", "sh", "-c", script)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        log = box.egg_home / "sessions" / session / "egg.log"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if "git: dropped core.fsmonitor" in log.read_text():
                break
            time.sleep(0.2)
        assert "git: dropped core.fsmonitor" in log.read_text()
        assert "fsmonitor" not in (box.workspace / "sub" / ".git" / "config").read_text()
        status = box.run("status", session, "--json")
        assert '"running"' in status.stdout
        assert_host_git_runs_nothing(box)
    finally:
        box.run("kill", session)


def test_a_symlink_on_the_way_to_the_git_directory_retargeted_inside_is_audited(
    box: Box,
) -> None:
    """The workspace's ``.git`` file names its git directory through a symlink in the
    workspace: the gitfile is protected, the symlink is not (the sandbox may write there), so
    the sandbox points it at a git directory of its own with a planted fsmonitor. The host's
    git would take that one; the audit must see the new repository (the guard's watch holds
    every path its search passed through) and make it safe."""
    make_repo(box)
    gits = box.mkdir(box.workspace / "gits")
    (box.workspace / ".git").rename(gits / "real")
    (box.workspace / "link").symlink_to("gits/real")
    os.lchown(box.workspace / "link", box.identity.uid, box.identity.gid)
    box.write(box.workspace / ".git", "gitdir: link\n")
    assert host_git(box, "status", "--short").returncode == 0
    attack = box.exec(
        "sh",
        "-c",
        "set -e; cp -r gits/real gits/evil; "
        f"git --git-dir=gits/evil config {MONITOR} '{evil(box)}'; ln -sfn gits/evil link",
    )

    assert attack.returncode == 0, attack.stderr
    assert "git: dropped core.fsmonitor" in attack.stderr
    assert_host_git_runs_nothing(box)
