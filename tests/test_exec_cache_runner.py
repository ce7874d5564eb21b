"""The exec cache admits a cached launch's runner by the file it was recorded from, not by the
name of its module: a third-party platform's launch runs from the cache as egg's own do, and an
entry whose runner now loads from another file is a miss that says so (issue: structure, no
name-based privilege)."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from tests.helpers import write_dist
from tests.test_exec_cache import cached_call, egg_exec, miss_reason

#: a platform of no egg package whose launches carry a recipe with a runner of its own
PLATFORM = """
import os
from egg_core.api import Availability, Platform, Prepared, hookimpl


class Recipes(Platform):
    name = "recipes"
    description = "a third-party platform whose launches the exec cache may run"
    outer_boundary = True

    def available(self):
        return Availability(True, "a test platform")

    def command(self, launch):
        return list(launch.argv)

    def prepare(self, launch):
        prepared = Prepared(argv=["/bin/sh", "-c", "exit 7"], env=dict(launch.env), cwd=launch.cwd)
        prepared.recipe = {"runner": "eggtest_recipe_runner:run", "mark": os.environ["MARK"]}
        return prepared


@hookimpl
def egg_register_platforms(register):
    register(Recipes())
"""

#: its runner: what a hit calls instead of preparing the launch
RUNNER = """
def run(entry, env):
    with open(entry["mark"], "a") as handle:
        handle.write("ran from the cache\\n")
    return 7
"""

OPTIONS = ("--platform", "recipes")


@pytest.fixture
def third_party(cache_workspace, tmp_path: Path):
    """(workspace, environment, mark): the platform installed, its runner's mark file."""
    work, env = cache_workspace
    site = write_dist(
        tmp_path / "site",
        "egg-recipes",
        "1",
        {"recipes": "eggtest_recipes"},
        {"eggtest_recipes": PLATFORM, "eggtest_recipe_runner": RUNNER},
    )
    mark = tmp_path / "mark"
    # (after a mutation tier's copy of egg, when the environment names one)
    path = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(site)]))
    return work, {**env, "PYTHONPATH": path, "MARK": str(mark)}, mark


def test_a_third_party_platforms_launch_runs_from_the_cache(third_party) -> None:
    work, env, mark = third_party
    first = egg_exec(work, env, "true", options=OPTIONS)
    assert first.returncode == 7 and not mark.exists(), first.stderr

    second = cached_call(work, env, "true", options=OPTIONS)

    assert second.returncode == 7
    assert mark.read_text() == "ran from the cache\n"


def test_an_entry_whose_runner_now_loads_from_another_file_is_a_miss(
    third_party, egg_home: Path
) -> None:
    work, env, mark = third_party
    egg_exec(work, env, "true", options=OPTIONS)
    cached_call(work, env, "true", options=OPTIONS)
    mark.unlink()
    entries = [
        path
        for path in (egg_home / "cache" / "exec").iterdir()
        if not path.name.endswith(".env") and not path.name.startswith(".")
    ]
    assert entries
    for path in entries:
        entry = marshal.loads(path.read_bytes())
        entry["runner_file"] = str(work / "eggtest_recipe_runner.py")  # not where it loads from
        path.write_bytes(marshal.dumps(entry))

    result = egg_exec(work, env, "true", options=OPTIONS)

    assert result.returncode == 7 and not mark.exists()  # prepared afresh, never run from it
    assert miss_reason(result) == (
        "its runner eggtest_recipe_runner:run is not the code it was cached with"
    )
