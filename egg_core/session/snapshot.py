"""Agent settings snapshot: copy hook-bearing settings before a session, restore them after.

An agent's settings files (``~/.claude/settings.json`` and the like) can define hooks and commands
that run *outside* the sandbox the next time the agent is used without egg. The agent may write
them during a session (its config dir is writable), so they are copied into the session directory
before the agent starts and put back when it exits: changed files get their old content, files the
agent created are removed. The snapshot lives in the session directory, so if the daemon dies
without restoring, the next ``egg`` command finds it and restores it (and says so).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from egg_core.session.store import SessionPaths, read_json, write_json

MANIFEST = "manifest.json"


def take(paths: SessionPaths, files: list[Path]) -> None:
    """Record each file's content (or absence) under ``paths.settings``."""
    paths.settings.mkdir(mode=0o700, exist_ok=True)
    entries = []
    for index, path in enumerate(files):
        entry: dict[str, object] = {"path": str(path), "copy": None}
        if path.is_file() and not path.is_symlink():
            copy = paths.settings / f"{index}.orig"
            shutil.copy2(path, copy)
            entry["copy"] = copy.name
            entry["mode"] = os.stat(path).st_mode & 0o7777
        elif path.exists() or path.is_symlink():
            entry["skipped"] = "not a regular file"
        entries.append(entry)
    write_json(paths.settings / MANIFEST, {"files": entries, "restored": False})


def pending(paths: SessionPaths) -> bool:
    manifest = read_json(paths.settings / MANIFEST)
    return bool(manifest) and not manifest.get("restored", False)


def restore(paths: SessionPaths) -> list[str]:
    """Put every snapshotted file back; return one line per file that the session changed."""
    manifest = read_json(paths.settings / MANIFEST)
    if not manifest or manifest.get("restored"):
        return []
    changed = []
    for entry in manifest.get("files", []):
        if not isinstance(entry, dict) or entry.get("skipped"):
            continue
        target = Path(str(entry["path"]))
        copy = entry.get("copy")
        if copy:
            original = (paths.settings / str(copy)).read_bytes()
            try:
                current = target.read_bytes() if target.is_file() else None
            except OSError:
                current = None
            if current != original:
                if target.is_symlink() or (target.exists() and not target.is_file()):
                    _remove(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.egg-restore")
                tmp.write_bytes(original)
                os.chmod(tmp, int(str(entry.get("mode", 0o600))))
                os.replace(tmp, target)
                changed.append(f"restored {target}")
        elif target.exists() or target.is_symlink():
            _remove(target)
            changed.append(f"removed {target} (created during the session)")
    manifest["restored"] = True
    write_json(paths.settings / MANIFEST, manifest)
    return changed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
