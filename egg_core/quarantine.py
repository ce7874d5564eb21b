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
from collections.abc import Callable
from pathlib import Path


class Quarantine:
    """``$EGG_HOME/quarantine/<time>-<pid>/``: where removed files go, for the user to read."""

    def __init__(
        self, egg_home: Path, label: str, writable: Callable[[str], bool] | None = None
    ) -> None:
        self.root = egg_home / "quarantine"
        self.label = label
        #: whether the sandbox could write in a directory (its rules): a symlink found there on
        #: the way to what is taken was made by the sandbox, and is what gets taken (None: no
        #: symlink on the way is followed)
        self.writable = writable
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

    def locate(self, path: str) -> str | None:
        """What taking ``path`` takes, as a real path; None when nothing is there.

        Walking down from ``/``, a symlink in a directory the sandbox cannot write is the
        user's own and is followed; the first symlink (or file where a directory belongs) in
        one it can write was planted — ``./.claude`` pointing at the user's ``~/victim`` — and
        is taken itself, never what it points at."""
        current = "/"
        parts = [part for part in path.split("/") if part]
        for index, part in enumerate(parts):
            candidate = os.path.join(current, part)
            try:
                st = os.lstat(candidate)
            except OSError:
                return None
            if index == len(parts) - 1:
                return candidate
            planted = self.writable is None or self.writable(current)
            if stat.S_ISLNK(st.st_mode):
                if planted:
                    return candidate
                current = os.path.realpath(candidate)
                continue
            if not stat.S_ISDIR(st.st_mode):
                return candidate if planted else None
            current = candidate
        return None

    def take(self, path: str, why: str) -> str:
        """Move ``path`` into the quarantine: what :meth:`locate` finds there (never a symlink's
        target), through descriptors."""
        found = self.locate(path)
        if found is None:
            return f"{self.label}: {path} ({why}) was gone before it could be removed"
        if found != path:
            why = f"{why}; {found} stood on the way to {path}"
        target = self.destination(found)
        try:
            _move(found, target)
        except OSError as exc:
            return self.failure(f"{self.label}: could not remove {found} ({why}): {exc.strerror}")
        return f"{self.label}: removed {found}: {why} (kept in {target})"

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
    parent = os.path.dirname(source) or "/"  # a real path (Quarantine.locate)
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
