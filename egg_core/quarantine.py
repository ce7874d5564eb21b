"""``$EGG_HOME/quarantine``: where egg's guards put what they take away from a sandbox's output.

Nothing a guard removes is destroyed: a hook, a configuration, an extension the sandbox wrote is
moved here (one directory per run, the original path flattened into the name), so the user can
read what was attempted, and restore it by hand if it was wanted. Hidden from every sandbox, as
all of ``$EGG_HOME`` is.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path


class Quarantine:
    """``$EGG_HOME/quarantine/<time>-<pid>/``: where removed files go, for the user to read."""

    def __init__(self, egg_home: Path, label: str) -> None:
        self.root = egg_home / "quarantine"
        self.label = label
        self._dir: Path | None = None
        #: what could not be taken away (also among the lines :meth:`take` returned): the
        #: guard that asked has not made its place safe
        self.failed: list[str] = []

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
            return self.failure(f"{self.label}: could not remove {path} ({why}): {exc.strerror}")
        return f"{self.label}: removed {path}: {why} (kept in {target})"

    def failure(self, line: str) -> str:
        """Record that something could not be made safe; ``line`` says what."""
        self.failed.append(line)
        return line


def _move(source: str, target: Path) -> None:
    """Rename ``source`` into the quarantine through a descriptor of its directory, opened one
    component at a time without following a symlink (:func:`egg_core.hostfs.open_directory`).
    The sandbox owns what it made and may have taken its own write permission away (``chmod
    555`` on the directory, or on a directory being moved, whose ``..`` changes): the user's
    own permissions are taken back first."""
    from egg_core.hostfs import make_writable, open_directory, remove_at

    name = os.path.basename(source)
    parent = os.path.realpath(os.path.dirname(source) or "/")  # the user's own links stay
    parent_fd = open_directory(parent, {}, [], create=False)
    if parent_fd is None:
        raise FileNotFoundError(2, os.strerror(2), source)
    try:
        st = os.lstat(name, dir_fd=parent_fd)
        make_writable(parent_fd)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            os.chmod(
                name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=parent_fd, follow_symlinks=False
            )
        try:
            os.rename(name, target, src_dir_fd=parent_fd)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # another filesystem: copy, then remove
                raise
        import shutil

        real = os.path.join(parent, name)
        if stat.S_ISDIR(st.st_mode):
            shutil.copytree(real, target, symlinks=True)
        else:
            shutil.copy2(real, target, follow_symlinks=False)
        remove_at(parent_fd, name)
    finally:
        os.close(parent_fd)
