"""Shared helpers for egg's own tests. The public fixtures come from the ``egg`` pytest plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import volumes

volumes.register_profiles()  # hypothesis: CI's example counts, or EGG_TEST_FULL=1's

#: workers per core for ``-n auto`` (pyproject's addopts): the suite spends most of its time
#: waiting on the sandboxes, terminals, agents and servers it starts, not computing (measured:
#: four workers on two cores, 27 min down to under 14, the machine shared with other work)
WORKERS_PER_CORE = 2
MAX_WORKERS = 8


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown when run with -p no:xdist
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` starts: ``EGG_TEST_WORKERS`` if set, else two per core
    (at most eight: each worker is one more run beside the others, and the suite must pass
    beside another run, not beside a dozen)."""
    configured = os.environ.get("EGG_TEST_WORKERS")
    if configured:
        return max(1, int(configured))
    return min(MAX_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1))


def pytest_configure(config: pytest.Config) -> None:
    """In the controlling process (xdist's workers have ``workerinput``) of a run that includes
    the real-agent tier: start installing its CLIs now (:mod:`tests.agent_clis`)."""
    if hasattr(config, "workerinput"):
        return
    from tests import agent_clis

    if agent_clis.wanted_by(list(config.args), Path(str(config.rootpath))):
        agent_clis.start_early()


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path for test plugin modules, removed again afterwards."""
    path = tmp_path / "plugin-src"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [
        m for m, mod in sys.modules.items() if str(path) in str(getattr(mod, "__file__", ""))
    ]:
        del sys.modules[name]


@pytest.fixture
def cache_workspace(tmp_path: Path, egg_home: Path):
    """(workspace, environment) for egg exec's cache tests: a workspace and home the sandbox
    sees (not under /tmp, which is private inside it), the cache saying why it missed."""
    # /tmp is private inside the sandbox: the workspace and home must live elsewhere to be seen
    base = Path(os.path.realpath(os.environ.get("EGG_LINUX_TEST_DIR", "/var/tmp")))
    root = base / f"egg-cache-test-{os.getpid()}-{tmp_path.name}"
    work, home = root / "work", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "EGG_HOME": str(egg_home),
        "EGG_EXEC_CACHE": "debug",
    }
    if os.environ.get("EGG_TEST_MUTANT"):  # test_cache_mutation: a build with a check taken out
        env["PYTHONPATH"] = os.environ["EGG_TEST_MUTANT"]
    yield work, env
    subprocess.run(["rm", "-rf", str(root)], check=False)


#: fixtures whose value holds a test's $EGG_HOME (or the directory its homes live under)
_HOMES = {
    "tmp_path": lambda value: value,
    "egg_home": lambda value: value,
    "box": lambda value: value.root,
}


@pytest.fixture(autouse=True)
def no_session_outlives_its_test(request: pytest.FixtureRequest):
    """Fail a test that leaves a session daemon or its sandbox running (issue 23: one did on
    every run, and a suite beside another run must not leave it sessions to trip over).

    The test's own directories are asked for here, before the test's other fixtures, so they
    are still there when this looks (a box removes its tree when it is done). What is left is
    found by those directories alone (:mod:`tests.leftovers`), killed, and reported."""
    from tests import leftovers

    places = [
        get(request.getfixturevalue(name))
        for name, get in _HOMES.items()
        if name in request.fixturenames
    ]
    yield
    roots = leftovers.session_roots(places)
    left = leftovers.wait_gone(roots)
    if left:
        leftovers.kill(left)
        pytest.fail(
            "the test left session processes running (killed now):\n"
            + "\n".join(f"  {item}" for item in left),
            pytrace=False,
        )
