"""The CPU budget on cgroup v2 (DESIGN.md §9 J). This host's egg uses cgroup v1 (the hierarchies
egg's other limits need are v1 here), but it also mounts the v2 hierarchy (hybrid mode): as root
the budget's v2 half — ``cpu.stat``'s ``usage_usec`` and ``cgroup.kill`` — runs there for real,
against processes that fork and spin outside any sandbox."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from egg_plugins.platforms.linux import cgrouprun, cpubudget

from .conftest import PY
from .test_resources import BURN, burnt

UNIFIED = Path("/sys/fs/cgroup/unified")


@pytest.fixture
def v2_parent() -> Path:
    """Where a v2 cgroup can be made here: the hybrid mount, or the root of a v2-only host."""
    for candidate in (UNIFIED, Path("/sys/fs/cgroup")):
        if (candidate / "cgroup.controllers").exists() and os.access(candidate, os.W_OK):
            return candidate
    pytest.skip("no writable cgroup v2 hierarchy here")


def test_forking_burners_in_a_v2_cgroup_are_killed_at_the_budget(
    v2_parent: Path, tmp_path: Path
) -> None:
    running = cgrouprun.start(
        cgrouprun.new_name(), {"version": 2, "parents": {"cpu": str(v2_parent)}, "cpu": 1.0}
    )
    directory = Path(running.group.dirs["cpu"])
    (tmp_path / "burnt").mkdir()  # the burners make their files
    try:
        proc = subprocess.Popen([*running.prefix(), PY, "-I", "-c", BURN], cwd=tmp_path)
        running.started()
        returncode = proc.wait(timeout=60)
        # the forked burners were sent SIGKILL with it; on a busy host some take a moment to
        # end (a burner never killed burns on: the cgroup would stay full)
        deadline = time.monotonic() + 10
        while (directory / "cgroup.procs").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (directory / "cgroup.procs").read_text() == ""
        budget = running.budget
        assert budget is not None and budget.tripped
        used = burnt(tmp_path)
        assert 0.5 < used < 1.5, f"the burners used {used:.2f} s together"
        assert returncode == -9  # every process of the cgroup: SIGKILL
        assert running.exit_code(lambda rc: 128 - rc)(returncode) == cpubudget.EXIT_CODE
        assert (running.reason(137) or "").startswith(cpubudget.REASON)
    finally:
        running.close()
    assert not directory.exists()
