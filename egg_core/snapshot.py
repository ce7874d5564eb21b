"""Agent settings snapshot: copy hook-bearing settings before a run, put them back after it.

Threat H. An agent's settings files (``~/.claude/settings.json``, ``.mcp.json`` in the workspace,
…) define hooks and commands that run *outside* the sandbox the next time the agent is used
without egg, and the agent may write them during a run (its directory is writable). So they are
copied into the run's own directory before the command starts and put back when it ends — on
every launch path: ``egg run``, ``egg exec`` and ``egg exec``'s cached fast path. Changed files get
their old content, files the run created are removed, a replaced parent symlink gets its old
target. The copy lives in the run's directory (hidden from the sandbox), so if egg dies before
restoring, the next ``egg`` command finds it and restores it (:func:`pending`).

Threat M: the restore runs on the host, as the user, on directories the sandbox shaped. It
trusts nothing there, and it completes against any shape (the descriptor walking is
:mod:`egg_core.hostfs`):

- every directory is opened one component at a time with ``O_NOFOLLOW`` from the real path
  recorded before the run, so a symlink the sandbox put in place of a directory (``./.claude``
  -> elsewhere) is never followed: it is removed and an empty directory made in its place, and
  the snapshotted files restored there;
- a directory the sandbox made unwritable (``chmod 555``) is made writable again — it is the
  user's own — and given back the mode it had before the run;
- whatever stands where a file belongs (a 3,000-level directory, a FIFO) is removed
  iteratively, through descriptors, so neither recursion nor path length limits it;
- replacements are written to a fresh name beside the target and renamed over it (a name the
  sandbox planted is never opened), and that name is removed on every failure;
- a file that cannot be restored is one line in the result, never an exception: the daemon
  does not crash and no later egg command fails because of it.

Standard library only (``os``, ``stat``, ``marshal``): the exec cache's fast path uses it. What
writes files and walks descriptors (:mod:`egg_core.hostfs`, :mod:`egg_core.safeio`) is imported
only when there is a file to copy or something to put back: a launch whose settings files are all
absent and stay so (``./.envrc``, on every plain ``egg exec``) records their absence and, after
the run, finds each still absent under the same directories (:func:`_untouched`), importing
neither.

Why one module of this size: taking a snapshot and writing it back are one format and one set
of path checks; apart, each half would have to re-derive what the other assumed.
"""

from __future__ import annotations

import marshal
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

MANIFEST = "manifest"
#: what an older egg wrote (JSON); still read so its crashed sessions are restored
LEGACY_MANIFEST = "manifest.json"
MAX_SETTINGS_BYTES = 64 << 20


# --- before the run ----------------------------------------------------------------------------


def take(
    directory: str,
    files: Sequence[str],
    keys: Mapping[str, Sequence[str]] | None = None,
    staged: Mapping[str, str] | None = None,
    reasons: Mapping[str, str] | None = None,
) -> None:
    """Record each file's content, link target or absence under ``directory`` (created 0700).

    ``keys``: for a file named there, only those key paths are put back after the run
    (:mod:`egg_core.settings_keys`); other files are restored whole. ``staged``: host path ->
    its copy in the run's home layer (:mod:`egg_core.homefiles`), written back first.
    ``reasons``: for a file named there, why it is guarded, said in the line that reports it
    put back (a restored credentials file says why the sign-in inside was not kept)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    keys = keys or {}
    reasons = {os.path.abspath(p): why for p, why in (reasons or {}).items()}
    staged = {os.path.abspath(p): layer for p, layer in (staged or {}).items()}
    given = [os.path.abspath(f) for f in files]
    sync_only = [p for p in staged if p not in given]
    entries: list[dict[str, Any]] = []
    for index, path in enumerate([*given, *sync_only]):
        parent = os.path.dirname(path)
        real_parent = os.path.realpath(parent)
        entry: dict[str, Any] = {
            "path": path,
            "real": os.path.join(real_parent, os.path.basename(path)),
            "kind": "absent",
            "modes": _directory_modes(real_parent),
        }
        if keys.get(path):
            entry["keys"] = list(keys[path])
        if reasons.get(path):
            entry["why"] = reasons[path]
        if path in staged:
            entry["staged"] = staged[path]
        if path in sync_only:
            entry["sync_only"] = True
        try:
            link = os.readlink(parent)
        except OSError:
            link = None
        if link is not None:  # a symlinked directory: its target is part of the settings
            entry["parent_link"] = link
            entry["parent_link_at"] = os.path.join(
                os.path.realpath(os.path.dirname(parent)), os.path.basename(parent)
            )
        try:
            st = os.lstat(entry["real"])
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            entry.update(kind="symlink", target=os.readlink(entry["real"]))
        elif st is not None and stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SETTINGS_BYTES:
            from egg_core.safeio import write_new

            copy = os.path.join(directory, f"{index}.orig")
            write_new(copy, _read_file(entry["real"]), 0o600)
            entry.update(kind="file", copy=copy, mode=stat.S_IMODE(st.st_mode))
        elif st is not None:
            entry.update(kind="other")  # a directory or device: not a settings file; left alone
        entries.append(entry)
    # written in place, not through a temporary name: the directory is new and the sandbox has
    # not started, so a manifest torn by a crash here has nothing to put back
    fd = os.open(
        os.path.join(directory, MANIFEST),
        os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    with os.fdopen(fd, "wb") as handle:
        marshal.dump({"files": entries, "restored": False}, handle)


def _directory_modes(real_parent: str) -> dict[str, int]:
    """The permission bits of the directory and its ancestors, to give back after a restore
    that had to make one writable."""
    modes = {}
    current = real_parent
    while current != "/":
        try:
            modes[current] = stat.S_IMODE(os.lstat(current).st_mode)
        except OSError:
            break
        current = os.path.dirname(current)
    return modes


# --- after the run -----------------------------------------------------------------------------


def pending(directory: str) -> bool:
    manifest = _load(directory)
    return manifest is not None and not manifest.get("restored", False)


def restore(directory: str, *, then_forget: bool = False) -> list[str]:
    """Put every snapshotted file back; one line per file the run changed or that could not be
    restored. Never raises for anything the sandbox can shape.

    The manifest is then marked restored, so that a crash before the directory is removed
    never restores it again over the user's later edits; ``then_forget`` removes it instead
    (one unlink, not a rewrite and a rename: the caller removes the directory next)."""
    manifest = _load(directory)
    if not manifest or manifest.get("restored"):
        return []
    lines = []
    for entry in manifest.get("files", []):
        if not isinstance(entry, dict):
            continue
        if entry.get("staged"):
            try:
                written = _write_back(entry)
            except Exception as exc:
                written = f"NOT written back {entry.get('path')}: {_why(exc)}"
            if written:
                lines.append(written)
        if entry.get("kind") == "other" or entry.get("sync_only") or _untouched(entry):
            continue
        try:
            line = _restore_one(entry)
        except Exception as exc:  # one bad file must not stop the others, nor the caller
            line = f"NOT restored {entry.get('path')}: {_why(exc)}"
        if line:
            lines.append(line)
    manifest["restored"] = True
    try:
        if then_forget:
            os.unlink(os.path.join(directory, MANIFEST))
        else:
            _save(directory, manifest)
    except OSError:
        pass
    return lines


def _untouched(entry: dict[str, Any]) -> bool:
    """A file that was absent is absent still, under the same directories with the same modes:
    there is nothing :func:`_restore_one` would change, so it is not run (nor its imports paid:
    the exec cache's fast path). Anything else — a parent symlink to put back, a file written
    back, a directory replaced by a symlink or given another mode, a name that now exists,
    anything unreadable — is left to :func:`_restore_one`."""
    if entry.get("kind") != "absent" or "parent_link" in entry or entry.get("staged"):
        return False
    modes = entry.get("modes")
    real = entry.get("real")
    if not isinstance(modes, dict) or not modes or not isinstance(real, str):
        return False
    try:
        os.lstat(real)
        return False  # it exists now
    except FileNotFoundError:
        pass
    except OSError:
        return False
    current = os.path.dirname(real)
    while current != "/":  # every directory take() recorded, from the parent up
        try:
            st = os.lstat(current)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or modes.get(current) != stat.S_IMODE(st.st_mode):
            return False
        current = os.path.dirname(current)
    return True


def failures(lines: Sequence[str]) -> list[str]:
    """The lines of :func:`restore` that say something could not be restored."""
    return [line for line in lines if line.startswith(("NOT restored", "NOT written back"))]


def _write_back(entry: dict[str, Any]) -> str | None:
    """A home file the run changed in its layer (:mod:`egg_core.homefiles`) goes back to the
    host: read without following anything (the layer was the sandbox's $HOME), and written
    beside the real file and renamed over it. If the host's file changed during the run too
    (another session, the agent outside egg), the keys the run changed are applied to the
    host's version (top-level keys of a JSON object), so neither side's update is lost.
    Returns None: writing back is the normal course; what the settings guard then reverts is
    what gets reported."""
    from egg_core.hostfs import open_directory, replace_at
    from egg_core.safeio import read_regular
    from egg_core.safeio import write_new as _write_new

    try:
        new = read_regular(str(entry["staged"]), MAX_SETTINGS_BYTES)
    except OSError:
        return None  # gone, or the sandbox put something else there: nothing to write back
    original = _read_file(str(entry["copy"])) if entry.get("copy") else None
    if new == original:
        return None
    path = str(entry["path"])
    real = str(entry.get("real") or path)
    parent_fd = open_directory(os.path.dirname(real), {}, [], create=False)
    if parent_fd is None:
        return f"NOT written back {path}: {os.path.dirname(real)} is gone"
    name = os.path.basename(real)
    try:
        try:
            st: os.stat_result | None = os.lstat(name, dir_fd=parent_fd)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            return f"NOT written back {path}: it is no longer a regular file on the host"
        current = _read_at(parent_fd, name) if st is not None else None
        content = new
        if current is not None and current != original:
            content = _merge_top_level(original, current, new)
        mode = stat.S_IMODE(st.st_mode) if st is not None else int(entry.get("mode", 0o600))
        replace_at(parent_fd, name, st, lambda tmp: _write_new(tmp, content, mode, parent_fd))
    finally:
        os.close(parent_fd)
    return None


def _merge_top_level(original: bytes | None, current: bytes, new: bytes) -> bytes:
    """``current`` with the top-level keys that ``new`` changed from ``original`` applied;
    ``new`` whole when any of the three is not a JSON object."""
    import json

    try:
        base = json.loads(original) if original else {}
        theirs, ours = json.loads(current), json.loads(new)
    except ValueError:
        return new
    if not all(isinstance(v, dict) for v in (base, theirs, ours)):
        return new
    missing = object()
    for key in dict.fromkeys([*base, *ours]):
        if ours.get(key, missing) != base.get(key, missing):
            if key in ours:
                theirs[key] = ours[key]
            else:
                theirs.pop(key, None)
    return (json.dumps(theirs, indent=2, ensure_ascii=False) + "\n").encode()


def _restore_one(entry: dict[str, Any]) -> str | None:
    from egg_core.hostfs import give_back_modes, make_writable, open_directory, restore_link

    path = str(entry["path"])
    real = str(entry.get("real") or path)
    notes: list[str] = []
    modes: dict[str, int] = dict(entry.get("modes") or {})
    if "parent_link" in entry:
        notes += restore_link(str(entry["parent_link_at"]), str(entry["parent_link"]), modes)
    line = None
    try:
        parent_fd = open_directory(
            os.path.dirname(real), modes, notes, create=entry["kind"] != "absent"
        )
        if parent_fd is not None:
            try:
                # a directory left readable but not searchable (chmod 600) opens, and then
                # nothing in it can be looked at: take back search and write first
                make_writable(parent_fd)
                line = _restore_in(parent_fd, os.path.basename(real), entry, path)
            finally:
                os.close(parent_fd)
    finally:
        # the modes from before the run come back whatever happened above
        notes += give_back_modes(modes)
    return "; ".join([*notes, *([line] if line else [])]) or None


def _restore_in(parent_fd: int, name: str, entry: dict[str, Any], path: str) -> str | None:
    from egg_core.hostfs import remove_at, replace_at
    from egg_core.safeio import write_new as _write_new

    kind = entry["kind"]
    try:
        st = os.lstat(name, dir_fd=parent_fd)
    except FileNotFoundError:
        st = None
    if kind == "absent":
        if st is None:
            return None
        handled, line = _revert_keys(parent_fd, name, st, entry, None, path)
        if handled:
            return line
        remove_at(parent_fd, name, st)
        why = _reason(entry)
        return f"removed {path} (created during the session{'; ' + why if why else ''})"
    if kind == "symlink":
        wanted = str(entry["target"])
        if (
            st is not None
            and stat.S_ISLNK(st.st_mode)
            and os.readlink(name, dir_fd=parent_fd) == wanted
        ):
            return None
        replace_at(parent_fd, name, st, lambda tmp: os.symlink(wanted, tmp, dir_fd=parent_fd))
        return f"restored {path} (symlink)"
    original = _read_file(str(entry["copy"]))
    mode = int(entry.get("mode", 0o600))
    if (
        st is not None
        and stat.S_ISREG(st.st_mode)
        and stat.S_IMODE(st.st_mode) == mode
        and st.st_size == len(original)
        and _read_at(parent_fd, name) == original
    ):
        return None
    handled, line = _revert_keys(parent_fd, name, st, entry, original, path)
    if handled:
        return line
    replace_at(parent_fd, name, st, lambda tmp: _write_new(tmp, original, mode, parent_fd))
    why = _reason(entry)
    return f"restored {path}" + (f" ({why})" if why else "")


def _reason(entry: dict[str, Any]) -> str:
    """The entry's reason for being guarded (see :func:`take`), or ""."""
    why = entry.get("why")
    return why if isinstance(why, str) else ""


def _revert_keys(
    parent_fd: int,
    name: str,
    st: os.stat_result | None,
    entry: dict[str, Any],
    original: bytes | None,
    path: str,
) -> tuple[bool, str | None]:
    """For a file whose profile names its command-defining keys: put back only those (see
    :mod:`egg_core.settings_keys`) and keep the run's other changes. Returns (handled, the
    line to report — None when nothing command-defining changed); not handled means the whole
    file must be restored instead: no keys named, not a regular file now, or a side that does
    not parse."""
    from egg_core.hostfs import remove_at, replace_at
    from egg_core.safeio import write_new as _write_new

    keys = entry.get("keys")
    if not keys or st is None or not stat.S_ISREG(st.st_mode):
        return False, None
    from egg_core import settings_keys

    fmt = settings_keys.format_of(path)
    current = _read_at(parent_fd, name)
    if fmt is None or current is None:
        return False, None
    try:
        content, reverted = settings_keys.revert(original, current, keys, fmt)
    except Exception:  # Unparseable, or anything else: never fail open, restore it whole
        return False, None
    if content is None:
        return True, None
    if original is None and settings_keys.is_empty(content, fmt):
        remove_at(parent_fd, name, st)
        return True, f"removed {path} (created during the session, with only commands in it)"
    mode = stat.S_IMODE(st.st_mode) if original is None else int(entry.get("mode", 0o600))
    replace_at(parent_fd, name, st, lambda tmp: _write_new(tmp, content, mode, parent_fd))
    return True, (
        f"reverted {', '.join(reverted)} in {path} (they run commands outside the sandbox or "
        "loosen what the agent may do there); kept its other changes"
    )


# --- files ------------------------------------------------------------------------------------


def _read_file(path: str, dir_fd: int | None = None) -> bytes:
    from egg_core.safeio import read_regular

    return read_regular(path, MAX_SETTINGS_BYTES, dir_fd)


def _read_at(dir_fd: int, name: str) -> bytes | None:
    try:
        return _read_file(name, dir_fd)
    except OSError:
        return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f" ({exc.filename})" if exc.filename else "")
    return f"{type(exc).__name__}: {exc}"


# --- the manifest -----------------------------------------------------------------------------


def _save(directory: str, manifest: dict[str, Any]) -> None:
    tmp = os.path.join(directory, f".{MANIFEST}.{os.getpid()}")
    with open(tmp, "wb") as handle:
        marshal.dump(manifest, handle)
    os.replace(tmp, os.path.join(directory, MANIFEST))


def _load(directory: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as handle:
            data = marshal.loads(handle.read())  # whole: marshal.load reads piece by piece
    except FileNotFoundError:
        return _load_legacy(directory)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _load_legacy(directory: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(directory, LEGACY_MANIFEST), "rb") as handle:
            import json

            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for entry in data.get("files", []):
        if isinstance(entry, dict) and "copy" in entry:
            entry["copy"] = os.path.join(directory, str(entry["copy"]))
            entry["real"] = os.path.join(
                str(entry.get("parent", "")), os.path.basename(entry["path"])
            )
    return data
