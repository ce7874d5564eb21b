"""Threat O: a host program egg runs where a sandbox could write runs nothing the sandbox planted.

A host tool runs on the host, in the workspace, while the sandbox that can write there is still
running. Before its command starts, every repository git would reach from there is audited with
the same code as after a run (synchronously: no one-second window), and its PATH keeps only
entries no sandbox can write. Each attack plants a command that leaves a mark in a directory only
the host can write (:meth:`Box.witness`), then calls a tool whose command runs the host's git.
"""

from __future__ import annotations

import time

import pytest

from tests.linux.conftest import Box
from tests.linux.test_git_persistence import NESTED_REPO, assert_host_git_runs_nothing, make_repo

MONITOR = "core.fsmonitor"


def mark(box: Box, name: str = "PWNED") -> str:
    """A command that leaves a mark in the witness directory (and fails, so git carries on)."""
    return f"touch {box.witness(name)}; false"


def tool(box: Box, name: str, run: str) -> None:
    box.write(box.egg_home / "tools" / f"{name}.yaml", f"name: {name}\nrun: {run}\n")


def with_git_tool(box: Box, run: str = "git status --short", **config: object) -> None:
    tool(box, "gitstatus", run)
    box.config({"tools": ["gitstatus"], **config})


def test_a_repository_initialised_inside_runs_nothing_in_a_tool_calling_git(box: Box) -> None:
    with_git_tool(box)
    result = box.exec(
        "sh",
        "-c",
        f"git init -q . && git config {MONITOR} '{mark(box)}' && gitstatus; echo code=$?",
    )

    assert "code=0" in result.stdout, result.stderr
    assert not box.witness("PWNED").exists(), "the tool's git ran the sandbox's fsmonitor"
    assert "git: dropped core.fsmonitor" in result.stderr  # said, in one line
    assert "fsmonitor" not in (box.workspace / ".git" / "config").read_text()


def test_a_workspace_turned_into_a_bare_repository_runs_nothing_on_the_host(box: Box) -> None:
    """git takes a directory holding HEAD, objects and refs for a git directory before it looks
    for ``.git`` further up: the audit must find it the same way."""
    with_git_tool(box)
    result = box.exec(
        "sh",
        "-c",
        "git init -q --bare . && git config core.bare false && "
        f"git config core.worktree \"$PWD\" && git config {MONITOR} '{mark(box)}' && "
        "gitstatus; echo code=$?",
    )

    assert "code=0" in result.stdout, result.stderr
    assert not box.witness("PWNED").exists(), "the tool's git ran a bare repository's fsmonitor"
    assert "git: dropped core.fsmonitor" in result.stderr
    assert_host_git_runs_nothing(box)


def test_a_staged_nested_repository_runs_nothing_in_a_tool_calling_git(box: Box) -> None:
    make_repo(box)
    with_git_tool(box)
    attack = NESTED_REPO.format(monitor=MONITOR, command=mark(box))
    result = box.exec("sh", "-c", f"{attack} && gitstatus; echo code=$?")

    assert "code=0" in result.stdout, result.stderr
    assert not box.witness("PWNED").exists()
    assert "git: dropped core.fsmonitor" in result.stderr


def test_a_hook_in_a_directory_the_sandbox_made_read_only_is_still_taken(box: Box) -> None:
    """The sandbox owns what it made: ``chmod 555`` on the hooks directory must not keep a hook
    where the audit cannot move it (uid 65534 has no DAC override)."""
    with_git_tool(box, run="git commit -q --allow-empty -m tool")
    hook = f"#!/bin/sh\\n{mark(box)}\\n"
    result = box.exec(
        "sh",
        "-c",
        "git init -q . && git config user.name a && git config user.email a@b && "
        f"printf '{hook}' > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit && "
        "chmod 555 .git/hooks && gitstatus; echo code=$?",
    )

    assert "code=0" in result.stdout, result.stderr
    assert not box.witness("PWNED").exists(), "the tool's git commit ran the planted hook"
    assert "pre-commit" in result.stderr and "git: removed" in result.stderr


def test_a_tool_call_is_refused_when_the_repositories_cannot_all_be_audited(box: Box) -> None:
    """Submodules nested deeper than the audit follows: git would reach what egg did not read,
    so the call is refused (exit 125 to the caller), in one line, and nothing runs."""
    make_repo(box)
    with_git_tool(box)
    chain = " && ".join(
        [
            "set -e",
            "d=$PWD",
            *(
                "mkdir -p n && cd n && git init -q && git commit -q --allow-empty -m n"
                for _ in range(10)
            ),
            f"git config {MONITOR} '{mark(box)}'",
            # stage each repository in its parent's index, deepest first
            'while [ "$PWD" != "$d" ]; do h=$(git rev-parse HEAD); cd ..; '
            'git update-index --add --cacheinfo "160000,$h,n"; done',
        ]
    )
    result = box.exec("sh", "-c", f"{chain}; set +e; gitstatus; echo code=$?")

    assert "code=125" in result.stdout, result.stderr
    refusals = [line for line in result.stderr.splitlines() if "refused" in line]
    assert len(refusals) == 1 and "gitstatus" in refusals[0], result.stderr
    assert not box.witness("PWNED").exists()


def test_a_sandbox_that_plants_again_while_the_tool_runs_cannot_win_the_race(box: Box) -> None:
    """The sandbox keeps running while it waits for its tool: a loop puts the fsmonitor back
    right after each audit. It is paused for the audit and the tool's git, so it never wins."""
    with_git_tool(box)
    loop = f"while :; do git config {MONITOR} '{mark(box)}'; done"
    calls = " ".join(["gitstatus >/dev/null 2>&1;"] * 20)
    result = box.exec(
        "sh", "-c", f"git init -q . && ({loop}) & sleep 0.3; {calls} kill $!; echo done"
    )

    assert "done" in result.stdout, result.stderr
    assert not box.witness("PWNED").exists(), "the sandbox won the race against the audit"


def test_a_sandbox_is_paused_while_its_tool_runs_and_carries_on_after(box: Box) -> None:
    with_git_tool(box, run="sleep 1")
    result = box.exec(
        "sh",
        "-c",
        "(while :; do echo x >> ticks; sleep 0.01; done) & p=$!; sleep 0.3; "
        "a=$(wc -l < ticks); gitstatus; b=$(wc -l < ticks); sleep 0.5; c=$(wc -l < ticks); "
        'kill $p; echo "during=$((b-a)) after=$((c-b))"',
    )

    assert result.returncode == 0, result.stderr
    counts = {k: int(v) for k, v in (part.split("=") for part in result.stdout.split())}
    # ~100 ticks a second when running; the few before the pause are the client starting up
    assert counts["during"] < 30, counts
    assert counts["after"] >= 10, counts


def test_a_session_audits_before_a_tool_call_not_a_second_later(box: Box) -> None:
    """Plant and call at once: the periodic audit's window must not matter."""
    with_git_tool(box)
    script = (
        f"git init -q . && git config {MONITOR} '{mark(box)}' && gitstatus > called.txt 2>&1; "
        "echo done >> called.txt; sleep 60"
    )
    started = box.run("run", "--detach", "--", "sh", "-c", script)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        called = box.workspace / "called.txt"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "done" not in (
            called.read_text() if called.exists() else ""
        ):
            time.sleep(0.1)
        assert "done" in called.read_text()
        assert not box.witness("PWNED").exists()
        log = (box.egg_home / "sessions" / session / "egg.log").read_text()
        assert "git: dropped core.fsmonitor" in log
    finally:
        box.run("kill", session)


def test_a_tools_path_keeps_no_entry_the_sandbox_can_write(box: Box) -> None:
    """Empty and relative entries (the workspace, where the tool runs) and directories the
    sandbox can write, at, above or below: a ``git`` planted there never runs on the host."""
    payload = f"#!/bin/sh\n{mark(box, 'PATH-' + '{}')}\n"
    box.write(box.home / "tools" / "bin" / "git", '#!/bin/sh\nexec /usr/bin/git "$@"\n', 0o755)
    box.mkdir(box.home / "other" / "bin")
    box.mkdir(box.home / "linked" / "bin")
    (box.home / "linked" / "bin" / "git").symlink_to(box.workspace / "linked-git")
    host_path = ":".join(
        [
            "",
            ".",
            "bin",
            f"{box.workspace}/bin",  # under rw:./
            f"{box.home}/tools/bin",  # holds a file the sandbox may write (rw:~/tools/bin/git)
            f"{box.home}/other/bin",  # under rw:~/other
            f"{box.home}/linked/bin",  # holds a link to a file in the workspace
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
        ]
    )
    with_git_tool(
        box,
        run='git --version; echo "PATH=$PATH"',
        fs=["rw:./", "rw:~/tools/bin/git", "rw:~/other"],
    )
    plant = " && ".join(
        f"mkdir -p {d} && printf '{payload.format(i)}' > {d}/git && chmod 755 {d}/git"
        for i, d in enumerate(["bin", ".", f"{box.home}/other/bin"])
    )
    plant += f" && printf '{payload.format('tools')}' > {box.home}/tools/bin/git"
    plant += f" && printf '{payload.format('linked')}' > linked-git && chmod 755 linked-git"
    result = box.exec("sh", "-c", f"{plant} && gitstatus", env={"PATH": host_path})

    assert result.returncode == 0, result.stderr
    assert "git version" in result.stdout
    assert not list(box.witness("").glob("PATH-*")), "a planted git ran on the host"
    shown = next(line for line in result.stdout.splitlines() if line.startswith("PATH="))
    assert shown == "PATH=/usr/local/bin:/usr/bin:/bin"


@pytest.mark.parametrize("identity", ["root"], indirect=True)
def test_the_host_git_after_such_a_run_still_runs_nothing(box: Box) -> None:
    """The after-run audit is the same code: nothing was left for the user's own git either."""
    with_git_tool(box)
    box.exec("sh", "-c", f"git init -q . && git config {MONITOR} '{mark(box)}' && gitstatus")
    assert_host_git_runs_nothing(box)


def test_a_symlink_planted_where_a_code_directory_was_missing_is_taken_not_its_target(
    box: Box,
) -> None:
    """``./.claude`` did not exist: a sandbox that makes it a link to the user's own directory
    must not get the after-run quarantine to move that directory's ``skills`` and ``commands``."""
    for name in ("skills", "commands"):
        box.write(box.home / "victim" / name / "keep.md", "the user's own\n")
    result = box.exec(
        "sh", "-c", f"ln -s {box.home / 'victim'} .claude", options=["--agent", "claude"]
    )

    assert result.returncode == 0, result.stderr
    assert (box.home / "victim" / "skills" / "keep.md").read_text() == "the user's own\n"
    assert (box.home / "victim" / "commands" / "keep.md").exists()
    assert not (box.workspace / ".claude").is_symlink()
    assert "removed" in result.stderr and ".claude" in result.stderr


@pytest.mark.parametrize("pointer", ["hooks path", "include", "named command"])
def test_what_the_users_own_git_config_points_at_in_the_workspace_runs_nothing(
    box: Box, pointer: str
) -> None:
    """The repository's config is read-only for the run, but it points into the workspace:
    husky's ``core.hooksPath = .husky/_``, an ``include.path``, a command named by path."""
    make_repo(box)
    from tests.linux.test_git_persistence import host_git

    if pointer == "hooks path":
        box.mkdir(box.workspace / ".husky")
        host_git(box, "config", "core.hooksPath", ".husky/_")
        attack = f"mkdir -p .husky/_ && printf '#!/bin/sh\\n{mark(box)}\\n' > .husky/_/pre-commit"
        attack += " && chmod +x .husky/_/pre-commit"
    elif pointer == "include":
        box.write(box.workspace / "shared.gitconfig", "[user]\n\tname = Shared\n")
        host_git(box, "config", "include.path", "../shared.gitconfig")
        attack = f"printf '[core]\\n\\tfsmonitor = \"{mark(box)}\"\\n' >> shared.gitconfig"
    else:
        box.write(box.workspace / "tools" / "textconv", '#!/bin/sh\ncat "$1"\n', 0o755)
        host_git(box, "config", "diff.txt.textconv", "tools/textconv")
        box.write(box.workspace / ".gitattributes", "*.txt diff=txt\n")
        attack = f"printf '#!/bin/sh\\n{mark(box)}\\ncat \"$1\"\\n' > tools/textconv"
    with_git_tool(box, run="echo change >> file.txt; git diff >/dev/null; git commit -qam tool")

    result = box.exec("sh", "-c", f"{attack}; echo planted=$?; gitstatus; echo code=$?")

    assert "planted=0" not in result.stdout, result.stdout + result.stderr
    assert not box.witness("PWNED").exists(), "the host's git ran what the sandbox wrote"
    assert_host_git_runs_nothing(box)


def test_parallel_calls_from_a_program_that_vforks_are_all_answered(box: Box) -> None:
    """Python's subprocess vforks: a parent waiting for a child that is stopped before its exec
    never stops itself, and must not make the pause fail."""
    tool(box, "noop", '"true"\nmax_concurrent: 20')
    box.config({"tools": ["noop"]})
    found = box.probe(
        "import subprocess\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(20) as pool:\n"
        "    codes = list(pool.map(lambda _: subprocess.run(['noop'], capture_output=True,"
        " text=True), range(20)))\n"
        "report(codes=[c.returncode for c in codes], said=[c.stderr for c in codes if c.stderr])"
    )

    assert found["codes"] == [0] * 20, found["said"]
