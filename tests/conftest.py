"""Shared helpers for egg's own tests. The public fixtures come from the ``egg`` pytest plugin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


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
