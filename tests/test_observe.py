"""egg_core.observe: each helper answers what its ``os`` namesake answers, and records the facts
that answer rests on (the exec cache's facts are exactly these)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_core import observe


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "deep" / "file").write_text("x")
    (tmp_path / "abs").symlink_to(tmp_path / "real")
    (tmp_path / "rel").symlink_to("real/deep")
    (tmp_path / "up").symlink_to("real/deep/..")
    (tmp_path / "chain").symlink_to("abs")
    (tmp_path / "dangling").symlink_to("nowhere/at/all")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    return tmp_path


PATHS = [
    "real/deep/file",
    "abs/deep/file",
    "rel/file",
    "rel/../deep",
    "up/deep/file",
    "chain/deep/../deep/file",
    "dangling",
    "dangling/more",
    "missing/../real",
    "loop1",
    "abs/deep/missing/x",
    "",
    ".",
]


@pytest.mark.parametrize("relative", PATHS)
def test_realpath_answers_as_os_does(tree: Path, relative: str) -> None:
    path = str(tree / relative) if relative else str(tree)
    with observe.recording():
        assert observe.realpath(path) == os.path.realpath(path)


def test_a_retargeted_symlink_on_the_way_changes_a_fact(tree: Path) -> None:
    with observe.recording() as recorder:
        observe.realpath(str(tree / "chain" / "deep" / "file"))
    before = dict(((k, s), v) for k, s, v in recorder.facts())
    (tree / "abs").unlink()
    (tree / "abs").symlink_to(tree / "real" / "deep")  # same name, elsewhere
    from egg_core.facts import stale_fact

    stale = stale_fact(recorder.facts())
    assert stale is not None and stale[1] == str(tree / "abs")
    assert ("i", str(tree / "abs")) in before


def test_nothing_is_recorded_without_a_recorder(tree: Path) -> None:
    assert observe.active() is None
    assert observe.exists(str(tree / "abs" / "deep" / "file"))
    assert observe.which("sh", os.defpath) is not None


def test_two_different_observations_of_one_path_make_the_recording_inconsistent(tree: Path):
    target = tree / "made-later"
    with observe.recording() as recorder:
        assert not observe.lexists(str(target))
        target.mkdir()
        assert observe.lexists(str(target))
    assert not recorder.consistent and recorder.conflicts[0][1] == str(target)


def test_environment_reads_are_recorded_by_name(monkeypatch) -> None:
    environ = observe.RecordingEnviron({"A": "1", "B": "2"})
    with observe.recording() as recorder:
        assert environ.get("A") == "1" and "C" not in environ
    assert recorder.env_read == {"A": "1", "C": None} and not recorder.env_listed
    with observe.recording() as recorder:
        assert dict(environ) == {"A": "1", "B": "2"}
    assert recorder.env_listed and recorder.env_read == {"A": "1", "B": "2"}
