"""The exec cache's tests can fail: with fact checking taken out of egg (a mutant build, loaded
through ``sitecustomize`` by every egg process the tests start), every ``fact_check`` test must
fail. A test that still passed would be one that never relied on the check it claims to cover."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANT = """\
import egg_core.execcache as execcache

# the mutation: a cached entry's facts always hold (those the spawn rests on, and the rest)
execcache.facts_hold = lambda entry, part="spawn_facts": None
"""


@pytest.mark.slow
def test_every_fact_check_test_fails_when_fact_checking_is_disabled(tmp_path: Path) -> None:
    mutant = tmp_path / "mutant"
    mutant.mkdir()
    (mutant / "sitecustomize.py").write_text(MUTANT)
    files = [
        "tests/test_exec_cache.py",
        "tests/test_exec_cache_facts.py",
        "tests/test_exec_cache_agents.py",
    ]
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "fact_check"]
    collected = subprocess.run(
        [*pytest, "-o", "addopts=", "--collect-only", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    wanted = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(wanted) >= 10, collected.stdout
    result = subprocess.run(
        [*pytest, "-o", "addopts=", "-rf", *files],
        cwd=ROOT,
        env={**os.environ, "EGG_TEST_MUTANT": str(mutant)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    failed = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED")}
    survivors = sorted(set(wanted) - failed)
    assert not survivors, (
        f"passed with fact checking disabled: {survivors}\n{result.stdout[-2000:]}"
    )
    assert re.search(rf"\b{len(wanted)} failed\b", result.stdout), result.stdout[-2000:]
