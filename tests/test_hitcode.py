"""egg_core.hitcode: an exec cache hit's imports served from one file of its cache — only while
every module's source is the file it was compiled from, only from a file that is the user's
own, and as the usual import would have found them (their ``__file__``, ``__spec__.origin``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg_core import execcache, hitcode
from tests.test_exec_cache import cached_call, egg_exec, hit


@pytest.fixture
def package(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A package of two modules on ``sys.path`` (``hitpkg``, ``hitpkg.leaf``), and an
    environment whose ``$EGG_HOME`` is the test's own; removed from ``sys.modules`` after."""
    root = tmp_path / "src"
    (root / "hitpkg").mkdir(parents=True)
    (root / "hitpkg" / "__init__.py").write_text("WHERE = 'package'\n")
    (root / "hitpkg" / "leaf.py").write_text("VALUE = 1\n")
    home = tmp_path / "egg-home"
    home.mkdir(mode=0o700)
    sys.path.insert(0, str(root))
    execcache._installed = None  # (what is installed: sys.path changed)
    try:
        yield root, {"EGG_HOME": str(home)}
    finally:
        sys.path.remove(str(root))
        execcache._installed = None
        for name in [n for n in sys.modules if n == "hitpkg" or n.startswith("hitpkg.")]:
            del sys.modules[name]
        for finder in [f for f in sys.meta_path if isinstance(f, hitcode.Served)]:
            sys.meta_path.remove(finder)


def forget() -> None:
    for name in [n for n in sys.modules if n == "hitpkg" or n.startswith("hitpkg.")]:
        del sys.modules[name]


def first_hit(env: dict[str, str]) -> hitcode.Served:
    """What a first hit does: nothing served yet, the modules imported as usual, recorded."""
    served = hitcode.install(env)
    assert served.modules == {}
    import hitpkg.leaf  # noqa: F401

    hitcode.record(served)
    hitcode.uninstall(served)
    forget()
    return served


def test_a_hit_imports_what_the_last_one_recorded_from_the_file(package) -> None:
    root, env = package
    first_hit(env)

    served = hitcode.install(env)
    import hitpkg.leaf

    assert set(served.modules) >= {"hitpkg", "hitpkg.leaf"}
    assert hitpkg.leaf.VALUE == 1
    assert isinstance(hitpkg.leaf.__loader__, hitcode._Loader)
    assert hitpkg.leaf.__loader__.served is served
    assert hitpkg.leaf.__file__ == str(root / "hitpkg" / "leaf.py")
    assert hitpkg.leaf.__spec__.origin == str(root / "hitpkg" / "leaf.py")
    assert hitpkg.__path__ == [str(root / "hitpkg")]


def test_a_changed_source_leaves_the_whole_file_unused(package) -> None:
    root, env = package
    first_hit(env)
    (root / "hitpkg" / "leaf.py").write_text("VALUE = 2\n")

    served = hitcode.install(env)
    import hitpkg.leaf

    assert served.modules == {}
    assert hitpkg.leaf.VALUE == 2
    assert not isinstance(hitpkg.leaf.__loader__, hitcode._Loader)
    assert not isinstance(sys.modules["hitpkg"].__loader__, hitcode._Loader)


@pytest.mark.parametrize("how", ["group-writable", "another-owner", "garbage"])
def test_a_file_that_is_not_the_users_own_or_not_one_is_never_served(package, how: str) -> None:
    root, env = package
    first_hit(env)
    path = Path(hitcode.path_of(env["EGG_HOME"]))
    assert path.exists()
    if how == "group-writable":
        path.chmod(0o664)
    elif how == "another-owner":
        os.chown(path, 65534, 65534)
    else:
        path.write_bytes(b"\x00not marshal")

    served = hitcode.install(env)
    import hitpkg.leaf

    assert served.modules == {}
    assert not isinstance(hitpkg.leaf.__loader__, hitcode._Loader)


def test_a_module_added_where_one_was_found_leaves_the_file_unused(package) -> None:
    """A package ``hitpkg/leaf/`` beside ``hitpkg/leaf.py`` takes its name (the import system
    prefers the package): the directory changed, so nothing is served from the file."""
    root, env = package
    first_hit(env)
    (root / "hitpkg" / "leaf").mkdir()
    (root / "hitpkg" / "leaf" / "__init__.py").write_text("VALUE = 'the package'\n")

    served = hitcode.install(env)
    import hitpkg.leaf

    assert served.modules == {}
    assert hitpkg.leaf.VALUE == "the package"


def test_a_file_that_lies_about_a_module_serves_its_source_and_is_written_again(package) -> None:
    """A module whose code in the file cannot be read (a truncated file that still unmarshals)
    is loaded from its source, as usual; the hit writes the file afresh."""
    root, env = package
    first_hit(env)
    path = hitcode.path_of(env["EGG_HOME"])
    data = execcache.load_private(path, hitcode.FORMAT)
    origin, package_, print_, code = data["modules"]["hitpkg.leaf"]
    data["modules"]["hitpkg.leaf"] = (origin, package_, print_, code[: len(code) // 2])
    execcache.write_private(path, data)

    served = hitcode.install(env)
    import hitpkg.leaf

    assert hitpkg.leaf.VALUE == 1
    assert served.broken
    hitcode.record(served)
    hitcode.uninstall(served)
    forget()
    again = hitcode.install(env)
    import hitpkg.leaf

    assert not again.broken
    assert isinstance(hitpkg.leaf.__loader__, hitcode._Loader)
    assert hitpkg.leaf.VALUE == 1


def test_a_served_package_has_its_resources(package) -> None:
    root, env = package
    (root / "hitpkg" / "data.txt").write_text("bytes of the package\n")
    first_hit(env)
    hitcode.install(env)
    import importlib.resources

    import hitpkg

    assert isinstance(hitpkg.__loader__, hitcode._Loader)
    assert (importlib.resources.files("hitpkg") / "data.txt").read_text() == (
        "bytes of the package\n"
    )


def test_each_optimization_level_has_a_file_of_its_own(package) -> None:
    _, env = package
    where = "from egg_core import hitcode; print(hitcode.path_of('/home'))"
    plain, optimized = (
        subprocess.run([sys.executable, *flags, "-c", where], capture_output=True, text=True)
        for flags in ([], ["-O"])
    )
    assert plain.stdout != optimized.stdout
    assert plain.stdout.startswith("/home/cache/hitcode/")


def test_another_installation_has_a_file_of_its_own(package, tmp_path: Path) -> None:
    _, env = package
    here = hitcode.path_of(env["EGG_HOME"])
    other = tmp_path / "other"
    other.mkdir()
    sys.path.append(str(other))
    execcache._installed = None
    try:
        assert hitcode.path_of(env["EGG_HOME"]) != here
    finally:
        sys.path.remove(str(other))
        execcache._installed = None


def test_egg_exec_hits_import_the_runner_from_the_file(cache_workspace) -> None:
    """The real thing: after a hit has recorded them, the next hit's runner and socket gate
    come from the file — with the file their source is, so the runner is admitted as before."""
    work, env = cache_workspace
    egg_exec(work, env, "true")
    cached_call(work, env, "true")
    probe = (
        "import sys; from egg_core import cli\n"
        "code = cli.main(['exec', '--', 'true'])\n"
        "import egg_plugins.platforms.linux.fastrun as f, egg_plugins.platforms.linux.socketgate as g\n"
        "print(code, type(f.__loader__).__name__, type(g.__loader__).__name__, f.__file__)\n"
    )
    run = [sys.executable, "-P", "-c", textwrap.dedent(probe)]
    results = [subprocess.run(run, cwd=work, env=env, capture_output=True, text=True) for _ in "12"]
    kept = list((Path(env["EGG_HOME"]) / "cache" / "hitcode").iterdir())
    before = [(path, path.stat().st_ino, path.stat().st_mtime_ns) for path in kept]
    results += [subprocess.run(run, cwd=work, env=env, capture_output=True, text=True)]
    after = [(path, path.stat().st_ino, path.stat().st_mtime_ns) for path in kept]

    assert all(hit(r) for r in results), [r.stderr for r in results]
    assert before == after  # a hit that imported nothing new leaves the file as it is
    code, fastrun_loader, gate_loader, origin = results[-1].stdout.split()
    assert (code, fastrun_loader, gate_loader) == ("0", "_Loader", "_Loader")
    assert origin.endswith("/platforms/linux/fastrun.py")
