"""Resource exhaustion (DESIGN.md §9 J): each limit stops the attack inside the sandbox, the host
keeps working, and egg says why the command died. Memory, process and CPU-budget limits need
cgroups, which only root can create here (cgroup v1, not delegated): as uid 65534 they are an
EnforcementError before anything starts, never a silent fallback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pexpect
import pytest

from .conftest import PY, Box

as_root = pytest.mark.parametrize("identity", ["root"], indirect=True)
as_nobody = pytest.mark.parametrize("identity", ["nobody"], indirect=True)

FORK_BOMB = """
children = []
failure = None
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as exc:
        failure = errno.errorcode[exc.errno]
        break
    if pid == 0:
        time.sleep(10)
        os._exit(0)
    children.append(pid)
report(forked=len(children), failure=failure)
"""

MEMORY_HOG = """
chunks = []
for _ in range(64):
    chunks.append(bytearray(b"x" * (16 << 20)))  # touched, so really resident
report(survived=len(chunks))
"""


def host_can_spawn() -> bool:
    return subprocess.run(["true"], timeout=10).returncode == 0


@as_root
def test_fork_bomb_stops_at_max_pids(box: Box) -> None:
    found = box.probe(FORK_BOMB, config={"resources": {"max_pids": 32}})

    assert found["failure"] == "EAGAIN"
    assert 0 < found["forked"] < 32
    assert host_can_spawn()


@as_root
@pytest.mark.parametrize("path", ["exec (cache miss)", "exec (cache hit)"])
def test_memory_hog_is_killed_and_egg_says_it_was_the_memory_limit(box: Box, path: str) -> None:
    """A cached launch makes its cgroups afresh, with the same limits, and explains an OOM."""
    env = {"EGG_EXEC_CACHE": "debug"}
    result = box.py(MEMORY_HOG, config={"resources": {"memory": "128MB"}}, env=env)
    assert "exec cache miss" in result.stderr, result.stderr
    if path == "exec (cache hit)":
        result = box.py(MEMORY_HOG, env=env)
        assert "exec cache hit" in result.stderr, result.stderr

    assert result.returncode == 137  # SIGKILL from the OOM killer
    assert "survived" not in result.stdout
    assert "memory limit" in result.stderr
    assert "out of memory" in result.stderr
    assert host_can_spawn()


@as_nobody
@pytest.mark.parametrize(
    ("resources", "named"),
    [({"max_pids": 32}, "max_pids"), ({"memory": "128MB"}, "memory"), ({"cpu": "1s"}, "cpu")],
)
def test_cgroup_limit_without_cgroup_access_is_an_enforcement_error(
    box: Box, resources: dict[str, object], named: str
) -> None:
    result = box.exec("sh", "-c", "touch started", config={"resources": resources})

    assert result.returncode == 125
    assert f"resources.{named}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not (box.workspace / "started").exists()
    if named == "cpu":  # the per-process limit is named as what this user could choose instead
        assert "resources.cpu_per_process" in result.stderr


def test_fd_exhaustion_stops_at_max_fds(box: Box) -> None:
    found = box.probe(
        "fds = []\n"
        "failure = None\n"
        "while len(fds) < 5000:\n"
        "    try: fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "    except OSError as exc:\n"
        "        failure = errno.errorcode[exc.errno]; break\n"
        "report(opened=len(fds), highest=max(fds), failure=failure)",
        config={"resources": {"max_fds": 64}},
    )

    assert found["failure"] == "EMFILE"
    assert found["highest"] < 64


#: forks into BURNERS processes that spin, each writing its own CPU time to ``burnt/cpu-N`` every
#: 5 ms: what they used together, measured by the processes themselves (the files are made
#: beforehand by :func:`make_burnt`: the exec cache's facts include the workspace's entries)
BURNERS = 4
BURN = f"""
import os, time
def burn(index):
    fd = os.open(f"burnt/cpu-{{index}}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while True:
        until = time.process_time() + 0.005
        while time.process_time() < until:
            pass
        os.pwrite(fd, b"%12.6f" % time.process_time(), 0)
for index in range(1, {BURNERS}):
    if os.fork() == 0:
        burn(index)
burn(0)
"""
BUDGET_LINE = "egg: killed by the CPU-time limit (resources.cpu): the sandbox used "


def make_burnt(box: Box) -> None:
    for index in range(BURNERS):
        box.write(box.workspace / "burnt" / f"cpu-{index}")


def burnt(directory: Path) -> float:
    """The CPU seconds the burners run in ``directory`` reported, together."""
    total = 0.0
    for index in range(BURNERS):
        path = directory / "burnt" / f"cpu-{index}"
        text = path.read_text().strip() if path.exists() else ""
        total += float(text or 0)
    return total


def assert_held_to_one_second(box: Box, said: str) -> None:
    """Killed at about 1 s of CPU time for all the burners together (per process, they would
    have used BURNERS seconds), and egg said so."""
    used = burnt(box.workspace)
    assert 0.5 < used < 1.5, f"the burners used {used:.2f} s together"
    assert BUDGET_LINE in said and "its budget is 1 s" in said, said


@as_root
@pytest.mark.parametrize("path", ["exec (cache miss)", "exec (cache hit)"])
def test_forking_cpu_burners_are_killed_at_the_sandboxs_cpu_budget(box: Box, path: str) -> None:
    box.config({"resources": {"cpu": "1s"}})
    make_burnt(box)
    env = {"EGG_EXEC_CACHE": "debug"}
    result = box.exec(PY, "-I", "-c", BURN, env=env)
    assert "exec cache miss" in result.stderr, result.stderr
    if path == "exec (cache hit)":
        result = box.exec(PY, "-I", "-c", BURN, env=env)
        assert "exec cache hit" in result.stderr, result.stderr

    assert result.returncode == 152, result.stderr  # 128 + SIGXCPU, as documented
    assert_held_to_one_second(box, result.stderr)
    said = [line for line in result.stderr.splitlines() if not line.startswith("egg: exec cache")]
    assert len(said) == 1 and said[0].startswith(BUDGET_LINE), result.stderr
    assert host_can_spawn()


@as_root
def test_a_lone_spinner_is_ended_by_the_budget_before_its_rlimit_backstop(box: Box) -> None:
    """One process alone: the watcher, which says what the sandbox used, ends it — not the
    per-process RLIMIT_CPU kept a second past the budget for a watcher that failed."""
    result = box.py("while True: pass", config={"resources": {"cpu": "1s"}}, timeout=30)

    assert result.returncode == 152
    assert BUDGET_LINE in result.stderr, result.stderr


@as_root
def test_a_sessions_forking_cpu_burners_are_killed_at_its_cpu_budget(box: Box) -> None:
    """``egg run``: the session daemon holds the budget, and its client says why it ended."""
    box.config({"resources": {"cpu": "1s"}})
    make_burnt(box)
    argv = box.command("run", "--", PY, "-I", "-c", BURN)
    child = pexpect.spawn(
        argv[0], argv[1:], env=box.env(), cwd=str(box.workspace), timeout=60, encoding="utf-8"
    )
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 152, child.before
    assert "[exited 152: killed by the CPU-time limit (resources.cpu): the sandbox used" in (
        child.before
    )
    [meta] = [json.loads(m.read_text()) for m in box.egg_home.glob("sessions/*/egg.meta")]
    assert meta["exit_code"] == 152
    assert_held_to_one_second(box, "egg: " + meta["exit_reason"])


def test_a_per_process_cpu_limit_kills_a_spinner_and_needs_no_cgroup(box: Box) -> None:
    """resources.cpu_per_process is RLIMIT_CPU on each process: what a host without cgroups
    for this user can enforce, when the user chooses it."""
    result = box.py("while True: pass", config={"resources": {"cpu_per_process": "1s"}}, timeout=30)

    assert result.returncode == 152  # 128 + SIGXCPU
    assert "egg: killed by the per-process CPU-time limit (resources.cpu_per_process)" in (
        result.stderr
    )
