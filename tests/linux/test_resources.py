"""Resource exhaustion (DESIGN.md §9 J): each limit stops the attack inside the sandbox, the host
keeps working, and egg says why the command died. Memory and process limits need cgroups, which
only root can create here (cgroup v1, not delegated): as uid 65534 they are an EnforcementError
before anything starts, never a silent fallback."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import Box

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
def test_memory_hog_is_killed_and_egg_says_it_was_the_memory_limit(box: Box) -> None:
    result = box.py(MEMORY_HOG, config={"resources": {"memory": "128MB"}})

    assert result.returncode == 137  # SIGKILL from the OOM killer
    assert "survived" not in result.stdout
    assert "memory limit" in result.stderr
    assert "out of memory" in result.stderr
    assert host_can_spawn()


@as_nobody
@pytest.mark.parametrize(
    ("resources", "named"), [({"max_pids": 32}, "max_pids"), ({"memory": "128MB"}, "memory")]
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


def test_cpu_spinner_is_killed_and_egg_says_it_was_the_cpu_limit(box: Box) -> None:
    result = box.py("while True: pass", config={"resources": {"cpu": "1s"}}, timeout=30)

    assert result.returncode == 152  # 128 + SIGXCPU
    assert "CPU-time limit" in result.stderr
