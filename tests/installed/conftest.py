"""The installed tier: egg as ``pip install`` gives it to a user, not as the suite's editable
install (which imports from the checkout, so it cannot see a package the wheel leaves out).

Once per session (:func:`installed`): the checkout's files are copied out, the sdist and a wheel
from it are built, and a wheel straight from the copy (what ``pip install .`` builds), the way
pip builds them (``build-system.requires`` from the index, in an isolated environment); the
sdist's wheel is installed with the ``mcp`` and ``web`` extras into a fresh virtualenv outside the checkout,
its dependencies pinned to the versions the suite's own venv runs. The tests run that venv's
``egg`` through the linux tier's boxes: the real bwrap, a fresh home and ``$EGG_HOME``, a working
directory outside the checkout, an environment without ``PYTHONPATH``, as root and as uid 65534
(the venv is root's and world-readable, as an installation under ``/opt`` is).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, BinaryIO

import attrs
import pytest
from build import BuildBackendException, BuildException, ProjectBuilder, RunnerType
from build.env import DefaultIsolatedEnv

from tests.linux.conftest import (  # the linux tier's fixtures, for this directory too
    box,
    boxes_dir,
    identity,
    listen,
    skip_without_sandbox,
)

__all__ = ["box", "boxes_dir", "identity", "listen"]

ROOT = Path(__file__).resolve().parents[2]
#: the interpreter the suite's venv was made from: the fresh venv is made from it too
BASE_PYTHON = os.path.realpath(sys.executable)
BUILD_TIMEOUT = 300


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip_without_sandbox(items, Path(__file__).parent)


@attrs.frozen
class Installed:
    """What the session built and where it installed it."""

    #: the copy of the checkout the sdist was built from
    source: Path
    sdist: Path
    #: built from the sdist: what pip makes of an sdist, and what gets installed
    wheel: Path
    #: built from the copy directly: what ``pip install .`` makes of a checkout
    tree_wheel: Path
    #: the fresh virtualenv
    prefix: Path

    @property
    def egg(self) -> str:
        return str(self.prefix / "bin" / "egg")

    @property
    def python(self) -> str:
        return str(self.prefix / "bin" / "python")


def checkout_files() -> list[str]:
    """The checkout's files as a clean clone of its next commit would hold them: tracked and
    untracked-but-not-ignored, never ``.venv``, caches or earlier build output."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and os.path.lexists(ROOT / name))


def copy_checkout(target: Path) -> None:
    for name in checkout_files():
        source, copy = ROOT / name, target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            copy.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, copy)


def log_to(log: BinaryIO) -> RunnerType:
    """A runner for the build backend's hooks that keeps their output for a failure's report."""

    def run(
        cmd: Sequence[str], cwd: str | None = None, extra_environ: Mapping[str, str] | None = None
    ) -> None:
        env = {**os.environ, **(extra_environ or {})}
        log.flush()
        subprocess.run(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)

    return run


def build_distributions(work: Path) -> tuple[Path, Path, Path]:
    """(sdist, the wheel built from it, the wheel built from the checkout) in ``work``.

    Each is what pip builds (``build-system.requires`` installed from the index into an
    isolated environment), all three in one environment: making one costs more than a build.
    Each build runs in a pristine copy of the checkout (a build leaves output behind).
    """
    sdist_source, tree_source, unpacked = work / "source", work / "tree-source", work / "unpacked"
    copy_checkout(sdist_source)
    copy_checkout(tree_source)
    out = work / "dist"
    log_path = work / "build.log"
    with log_path.open("wb") as log:
        try:
            with DefaultIsolatedEnv() as env:
                builder = ProjectBuilder.from_isolated_env(env, sdist_source, runner=log_to(log))
                env.install(builder.build_system_requires)
                env.install(builder.get_requires_for_build("sdist"))
                sdist = Path(builder.build("sdist", out))
                with tarfile.open(sdist) as archive:
                    archive.extractall(unpacked)  # our own sdist, just built
                (from_sdist,) = unpacked.iterdir()
                wheel_builder = ProjectBuilder.from_isolated_env(
                    env, from_sdist, runner=log_to(log)
                )
                env.install(wheel_builder.get_requires_for_build("wheel"))
                wheel = Path(wheel_builder.build("wheel", out))
                tree_builder = ProjectBuilder.from_isolated_env(
                    env, tree_source, runner=log_to(log)
                )
                tree_wheel = Path(tree_builder.build("wheel", work / "tree-dist"))
        except (BuildException, BuildBackendException, subprocess.CalledProcessError) as exc:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
            pytest.fail(f"building egg failed: {exc}\n{tail}")
    return sdist, wheel, tree_wheel


def pinned_versions(target: Path) -> Path:
    """The suite's venv's versions as constraints, so the installed tier runs what it runs."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # a direct reference (the example plugin, installed from examples/) is no constraint
    lines = [line for line in frozen.splitlines() if "==" in line and " @ " not in line]
    target.write_text("\n".join(lines) + "\n")
    return target


def run_step(argv: list[str], what: str) -> None:
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT, cwd="/", check=False
    )
    if result.returncode != 0:
        output = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{output}")


@pytest.fixture(scope="session")
def installed(boxes_dir: Path) -> Iterator[Installed]:
    """The sdist and wheels built from this checkout, the wheel installed in a fresh venv.

    Built once per run: the suite's workers (pytest-xdist) share one build, made by the first
    that asks, in a directory beside the boxes named after the run; the last to finish with it
    removes it."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        work = boxes_dir / "installed"
        work.mkdir(mode=0o755)
        yield build_and_install(work)
        return
    work = boxes_dir.parent / f"egg-installed-{run[:16]}"
    lock_path = boxes_dir.parent / f"egg-installed-{run[:16]}.lock"
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        users = _users(lock)
        done = work / "installed.json"
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(mode=0o755)
            built = build_and_install(work)
            done.write_text(json.dumps({k: str(v) for k, v in attrs.asdict(built).items()}))
        built = Installed(**{k: Path(v) for k, v in json.loads(done.read_text()).items()})
        _set_users(lock, users + 1)
    try:
        yield built
    finally:
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            users = _users(lock) - 1
            _set_users(lock, users)
            if users <= 0:
                shutil.rmtree(work, ignore_errors=True)
                os.unlink(lock_path)


def _users(lock: IO[str]) -> int:
    lock.seek(0)
    text = lock.read().strip()
    return int(text) if text else 0


def _set_users(lock: IO[str], users: int) -> None:
    lock.seek(0)
    lock.truncate()
    lock.write(str(users))
    lock.flush()


def build_and_install(work: Path) -> Installed:
    """Build the distributions in ``work`` and install the wheel into ``work/venv``."""
    assert ROOT not in work.parents, f"{work} is inside the checkout"
    sdist, wheel, tree_wheel = build_distributions(work)

    prefix = work / "venv"
    run_step([BASE_PYTHON, "-m", "venv", "--without-pip", str(prefix)], "creating the venv")
    run_step(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(prefix / "bin" / "python"),
            "install",
            "--quiet",
            "--constraint",
            str(pinned_versions(work / "constraints.txt")),
            f"{wheel}[mcp,web]",
        ],
        "installing the wheel",
    )
    return Installed(
        source=work / "source", sdist=sdist, wheel=wheel, tree_wheel=tree_wheel, prefix=prefix
    )


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}
