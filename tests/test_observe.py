"""egg_core.observe: each helper answers what its ``os`` namesake answers, and records the facts
that answer rests on (the exec cache's facts are exactly these)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from egg_core import observe
from egg_core.facts import code_at, origin_of, stale_fact


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
    "missing/../abs/deep",  # on through a symlink after a missing component, as realpath goes
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


# -- a platform's own kind of fact: admitted by its checker's file, not its name ---------------


@pytest.fixture
def outside_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checker in a module of no egg package (a third-party platform's), on sys.path; when
    called it leaves a mark, so a test sees whether it ran."""
    source = tmp_path / "modules" / "thirdparty_facts.py"
    source.parent.mkdir()
    source.write_text(
        "import pathlib\n"
        "def answer(mark):\n"
        "    pathlib.Path(mark).write_text('ran')\n"
        "    return 42\n"
    )
    monkeypatch.syspath_prepend(str(source.parent))
    monkeypatch.delitem(sys.modules, "thirdparty_facts", raising=False)
    return source


def test_a_checker_of_any_plugin_is_recorded_with_its_file_and_re_checked(
    outside_checker: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "ran"
    with observe.recording() as recorder:
        observe.custom("thirdparty_facts:answer", (str(mark),), 42)
    facts = recorder.facts()

    assert [f[0] for f in facts] == ["c", "x"] and facts[0][1] == str(outside_checker)
    assert facts[1][1] == ("thirdparty_facts:answer", (str(mark),), str(outside_checker))
    assert stale_fact(facts) is None and mark.read_text() == "ran"


def test_a_checker_whose_code_changed_is_stale_before_it_runs(
    outside_checker: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "ran"
    with observe.recording() as recorder:
        observe.custom("thirdparty_facts:answer", (str(mark),), 42)
    outside_checker.write_text("def answer(mark):\n    raise SystemExit('planted code ran')\n")

    stale = stale_fact(recorder.facts())

    assert stale is not None and stale[0] == "c" and stale[1] == str(outside_checker)


def test_a_checker_loaded_from_another_file_than_recorded_never_matches(
    outside_checker: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "ran"
    elsewhere = str(tmp_path / "elsewhere.py")
    fact = ("x", ("thirdparty_facts:answer", (str(mark),), elsewhere), 42)

    assert stale_fact([fact]) == fact
    assert not mark.exists()  # refused before it was called


def test_code_a_name_now_leads_to_in_another_file_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name's file is compared before the module is imported: a module (or a package's
    ``__init__``) that another file now provides under the recorded name is never executed,
    not even its top level."""
    mark = tmp_path / "imported"
    recorded = tmp_path / "recorded" / "thirdparty_pkg" / "facts.py"
    planted = tmp_path / "planted" / "thirdparty_pkg"
    planted.mkdir(parents=True)
    for name in ("__init__.py", "facts.py"):
        (planted / name).write_text(
            f"open({str(mark)!r}, 'a').write({name!r} + '\\n')\ndef answer():\n    return 42\n"
        )
    monkeypatch.syspath_prepend(str(planted.parent))
    for name in ("thirdparty_pkg", "thirdparty_pkg.facts"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    assert code_at("thirdparty_pkg.facts:answer", str(recorded)) is None
    assert not mark.exists()  # neither the package nor the module ran
    # where it was recorded, the same name is admitted (and only then imported)
    found = code_at("thirdparty_pkg.facts:answer", str(planted / "facts.py"))
    assert found is not None and found() == 42
    assert mark.read_text().split() == ["__init__.py", "facts.py"]


@pytest.mark.parametrize(
    "spec", ["thirdparty_facts", "thirdparty_facts:", ":answer", "thirdparty_facts:missing"]
)
def test_a_checker_that_names_no_function_of_a_file_is_refused(
    outside_checker: Path, spec: str
) -> None:
    with pytest.raises(ValueError, match="module:function from a file"):
        observe.custom(spec, (), None)
    assert origin_of(spec) is None and code_at(spec, str(outside_checker)) is None
