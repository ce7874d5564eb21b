"""``$EGG_HOME/quarantine``: where egg's guards put what they take away from a sandbox's output.

Nothing a guard removes is destroyed: a hook, a configuration, an extension the sandbox wrote is
moved here (one directory per run, the original path flattened into the name), so the user can
read what was attempted, and restore it by hand if it was wanted. Hidden from every sandbox, as
all of ``$EGG_HOME`` is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


class Quarantine:
    """``$EGG_HOME/quarantine/<time>-<pid>/``: where removed files go, for the user to read."""

    def __init__(self, egg_home: Path, label: str) -> None:
        self.root = egg_home / "quarantine"
        self.label = label
        self._dir: Path | None = None

    @property
    def directory(self) -> Path:
        if self._dir is None:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self._dir = self.root / f"{stamp}-{os.getpid()}-{os.urandom(3).hex()}"
            self._dir.mkdir(mode=0o700)
        return self._dir

    def destination(self, path: str) -> Path:
        return self.directory / path.strip("/").replace("/", "%")

    def take(self, path: str, why: str) -> str:
        """Move ``path`` (never followed if it is a symlink) into the quarantine."""
        target = self.destination(path)
        try:
            _move(path, target)
        except OSError as exc:
            return f"{self.label}: could not remove {path} ({why}): {exc.strerror}"
        return f"{self.label}: removed {path}: {why} (kept in {target})"


def _move(source: str, target: Path) -> None:
    try:
        os.rename(source, target)
    except OSError as exc:
        if exc.errno != 18:  # EXDEV: another filesystem; copy, then remove
            raise
        import shutil

        if os.path.isdir(source) and not os.path.islink(source):
            shutil.copytree(source, target, symlinks=True)
            shutil.rmtree(source)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
            os.unlink(source)
