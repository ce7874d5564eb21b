"""Fixtures every egg test (and every plugin's tests) can use.

Each test gets its own ``$EGG_HOME`` and ``$HOME`` so nothing reads or writes the developer's real
configuration, sessions or caches.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg_core.plugins import EggPluginManager, get_plugin_manager
from egg_core.testing.runner import CliRunner


@pytest.fixture
def egg_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``$HOME`` for this test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def egg_home(
    tmp_path: Path, egg_user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """An empty ``$EGG_HOME`` for this test (outside the isolated ``$HOME``).

    In ``tmp_path`` when a session's socket fits below it; else (a long test name, pytest-xdist's
    ``popen-gwN`` level) in a short directory of its own under the system's temporary
    directory, removed after the test: a unix socket's path holds at most 107 bytes."""
    from egg_core.paths import socket_fits

    path = tmp_path / "egg-home"
    short = None
    if not socket_fits(path / "sessions" / "12345678" / "egg.sock"):
        short = Path(tempfile.mkdtemp(prefix="egg-home-"))
        path = short / "egg-home"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("EGG_HOME", str(path))
    for name in ("EGG_LOAD_PLUGINS", "EGG_DISABLE_PLUGINS", "EGG_PLATFORM", "EGG_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    yield path
    if short is not None:
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def egg_plugin_manager(egg_home: Path) -> EggPluginManager:
    """A fresh plugin manager with every installed ``egg`` plugin loaded."""
    return get_plugin_manager(environ=dict(os.environ))


@pytest.fixture
def egg_cli(egg_home: Path) -> Iterator[CliRunner]:
    """Run ``egg`` with the isolated homes: ``egg_cli.run("plugins", "--json").json()``."""
    yield CliRunner(dict(os.environ))
