"""Fixtures of the macos-seatbelt tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg_plugins.platforms import macos_seatbelt as mod


@pytest.fixture
def on_macos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pretend to be macOS, with a sandbox-exec that runs the command without a sandbox."""
    fake = tmp_path / "sandbox-exec"
    fake.write_text('#!/bin/sh\n[ "$1" = "-p" ] || exit 64\nshift 2\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(mod, "_host", lambda: "darwin")
    monkeypatch.setattr(mod, "SANDBOX_EXEC", str(fake))
    return fake
