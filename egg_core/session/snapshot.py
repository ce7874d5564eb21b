"""Agent settings snapshot: copy hook-bearing settings before a session, restore them after.

An agent's settings files (``~/.claude/settings.json`` and the like) can define hooks and commands
that run *outside* the sandbox the next time the agent is used without egg. The agent may write
them during a session (its config dir is writable), so they are copied into the session directory
before the agent starts and put back when it exits: changed files get their old content (a
symlink its old target), files the agent created are removed. The snapshot lives in the session
directory, so if the daemon dies without restoring, the next ``egg`` command finds it and restores
it (and says so).

The agent controls the directories involved, so restoring trusts nothing in them: temporary files
are created exclusively (never through a planted symlink), permissions are set on the open file,
and a file whose directory no longer resolves to where it was is left alone and reported.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from egg_core.session.store import SessionPaths, read_json, write_json

MANIFEST = "manifest.json"


def take(paths: SessionPaths, files: list[Path]) -> None:
    """Record each file's content, link target or absence under ``paths.settings``."""
    paths.settings.mkdir(mode=0o700, exist_ok=True)
    entries = []
    for index, path in enumerate(files):
        entry: dict[str, object] = {
            "path": str(path),
            "parent": os.path.realpath(path.parent),
            "kind": "absent",
        }
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            entry.update(kind="symlink", target=os.readlink(path))
        elif st is not None and stat.S_ISREG(st.st_mode):
            copy = paths.settings / f"{index}.orig"
            shutil.copyfile(path, copy, follow_symlinks=False)
            entry.update(kind="file", copy=copy.name, mode=stat.S_IMODE(st.st_mode))
        elif st is not None:
            entry.update(kind="other")  # a directory or device: not a settings file; left alone
        entries.append(entry)
    write_json(paths.settings / MANIFEST, {"files": entries, "restored": False})


def pending(paths: SessionPaths) -> bool:
    manifest = read_json(paths.settings / MANIFEST)
    return bool(manifest) and not manifest.get("restored", False)


def restore(paths: SessionPaths) -> list[str]:
    """Put every snapshotted file back; return one line per file the session had changed."""
    manifest = read_json(paths.settings / MANIFEST)
    if not manifest or manifest.get("restored"):
        return []
    changed = []
    for entry in manifest.get("files", []):
        if isinstance(entry, dict) and entry.get("kind") != "other":
            line = _restore_one(paths, entry)
            if line:
                changed.append(line)
    manifest["restored"] = True
    write_json(paths.settings / MANIFEST, manifest)
    return changed


def _restore_one(paths: SessionPaths, entry: dict[str, object]) -> str | None:
    target = Path(str(entry["path"]))
    parent = target.parent
    if os.path.realpath(parent) != entry.get("parent"):
        if not parent.exists() and entry["kind"] == "absent":
            return None
        return f"NOT restored {target}: its directory now resolves elsewhere (left as is)"
    kind = entry["kind"]
    try:
        st = os.lstat(target)
    except OSError:
        st = None
    if kind == "absent":
        if st is None:
            return None
        _remove(target)
        return f"removed {target} (created during the session)"
    if kind == "symlink":
        wanted = str(entry["target"])
        if st is not None and stat.S_ISLNK(st.st_mode) and os.readlink(target) == wanted:
            return None
        _replace_with(target, lambda tmp: os.symlink(wanted, tmp))
        return f"restored {target} (symlink)"
    original = (paths.settings / str(entry["copy"])).read_bytes()
    if st is not None and stat.S_ISREG(st.st_mode):
        with open(target, "rb") as handle:
            if handle.read() == original and stat.S_IMODE(st.st_mode) == entry.get("mode"):
                return None
    mode = int(str(entry.get("mode", 0o600)))
    _replace_with(target, lambda tmp: _write_new(tmp, original, mode))
    return f"restored {target}"


def _write_new(path: str, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _replace_with(target: Path, create: Callable[[str], None]) -> None:
    """Create the replacement under a fresh name in the same directory, then rename it over.

    ``create`` must create exclusively (O_EXCL, or symlink()), so a name the agent planted is
    never written through; a taken name is retried with another.
    """
    for _ in range(20):
        tmp = str(target.parent / f".{target.name}.egg-{secrets.token_hex(6)}")
        try:
            create(tmp)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name next to {target}")
    try:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError:
        _remove(Path(tmp))
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
