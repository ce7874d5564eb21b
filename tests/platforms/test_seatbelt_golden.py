"""Golden profiles: the exact text macos-seatbelt generates for representative policies.

A change to the generator shows up here as a diff a reviewer can read. After an intended change,
regenerate with ``EGG_UPDATE_GOLDEN=1 pytest tests/platforms`` and review the diff of
``tests/platforms/golden/*.sb``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.platforms.sbpl_check import check_profile
from tests.platforms.seatbelt_cases import CASES, Case, profile_for

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("EGG_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_profile_matches_its_golden_file(case: Case) -> None:
    text = profile_for(case)
    path = GOLDEN / f"{case.name}.sb"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with EGG_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"{case.name}: the generated profile differs from {path.name}; if the change is "
        "intended, regenerate with EGG_UPDATE_GOLDEN=1 and review the diff"
    )


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.sb")), ids=lambda p: p.stem)
def test_every_golden_file_is_valid_sbpl(path: Path) -> None:
    check_profile(path.read_text(encoding="utf-8"))


def test_no_stale_golden_files() -> None:
    names = {f"{c.name}.sb" for c in CASES}
    stale = sorted(p.name for p in GOLDEN.glob("*.sb") if p.name not in names)
    assert not stale, f"golden files without a case: {stale}"


def test_generation_is_deterministic() -> None:
    for case in CASES:
        assert profile_for(case) == profile_for(case)
