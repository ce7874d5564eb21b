"""Facts: what a launch decision rested on, in a form that can be checked again cheaply.

:mod:`egg_core.observe` records them as the full path looks at the host; ``egg exec``'s cache
(:mod:`egg_core.execcache`) and the git guard's audit (:mod:`egg_core.git.guard`) check them again
later. A fact is ``(kind, subject, value)``:

- ``i``: the identity of a path (device, inode, type and permissions, owner; ``lstat``);
- ``c``: what a file holds (inode, size, change time);
- ``l``: a directory's entries (names and types);
- ``s``: a placeholder path, missing or holding exactly its seed;
- ``x``: a platform's own kind, ``(checker, args)``: ``checker(*args)`` is called again and must
  return the value again (a ``module:function`` of egg's own).

This module imports only C-level standard modules: the cache's fast path runs before anything else
is loaded.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    Fact = tuple[Any, ...]


def sha256_hex(data: bytes) -> str:
    import sys

    try:  # the C module alone: hashlib costs the fast path milliseconds
        if sys.version_info >= (3, 12):
            from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
        else:
            from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - other Python builds
        from hashlib import sha256
    return str(sha256(data).hexdigest())


KIND_NAMES = {
    "i": "what this path is:",
    "c": "the contents of",
    "l": "the entries of",
    "s": "the placeholder at",
    "x": "the platform's fact",
}


def identity(path: str) -> tuple[Any, ...] | None:
    """What a path *is*: device, inode, type and permissions, owner (not its contents)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return identity_of(path, st)


def identity_of(path: str, st: os.stat_result) -> tuple[Any, ...]:
    """:func:`identity` from an ``lstat`` already made. A symlink's is also its target: a
    symlink replaced by another one pointing elsewhere may well get the freed inode back."""
    if st.st_mode & 0o170000 == 0o120000:
        try:
            return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid, os.readlink(path))
        except OSError:
            return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid, None)
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)


def contents(path: str) -> tuple[int, ...] | None:
    """What a file *holds*, as far as the cache is concerned: inode, size and change time (the
    ctime, which unlike the mtime no process can set back)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)


def _entry_kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "l"
    if entry.is_dir(follow_symlinks=False):
        return "d"
    return "f" if entry.is_file(follow_symlinks=False) else "o"  # o: socket, fifo, device


def entries(path: str) -> tuple[int, list[str]] | None:
    """A directory's change time and its sorted ``name\0type`` entries."""
    try:
        ctime = os.lstat(path).st_ctime_ns
        with os.scandir(path) as it:
            names = sorted(f"{e.name}\0{_entry_kind(e)}" for e in it)
    except OSError:
        return None
    return ctime, names


def digest_of(names: Iterable[str], ignore: Iterable[str] = ()) -> str:
    """The digest of ``name\0type`` entries, leaving out the names in ``ignore``."""
    skip = set(ignore)
    kept = [entry for entry in names if entry.split("\0", 1)[0] not in skip]
    return sha256_hex("\0\0".join(kept).encode(errors="surrogateescape"))


def listing(path: str, ignore: Iterable[str] = ()) -> tuple[Any, ...] | None:
    """A directory's entries: its change time and a digest of the sorted (name, type) pairs;
    with ``ignore`` (the names of placeholders egg plants and removes there), the digest leaves
    those out and the fact carries them."""
    found = entries(path)
    if found is None:
        return None
    ignore = tuple(sorted(ignore))
    value = (found[0], digest_of(found[1], ignore))
    return (*value, ignore) if ignore else value


def listing_matches(path: str, expected: Any) -> bool:
    """Same entries as recorded. An unchanged change time settles it without listing; a changed
    one (egg's own placeholder files come and go) is settled by the names and types."""
    if expected is None:
        return listing(path) is None
    try:
        if os.lstat(path).st_ctime_ns == expected[0]:
            return True
    except OSError:
        return False
    now = listing(path, expected[2] if len(expected) > 2 else ())
    return now is not None and now[1] == expected[1]


def stale_fact(facts: Iterable[Fact]) -> Fact | None:
    """The first fact that no longer holds, or None when all do."""
    for fact in facts:
        kind, path, expected = fact
        if kind == "l":
            if not listing_matches(path, expected):
                return fact
        elif kind == "x":
            if _check_custom(path) != expected:
                return fact
        elif kind == "s":
            from egg_core.seeds import absent_or_seed

            if not absent_or_seed(path, expected):
                return fact
        elif kind in ("i", "c"):
            if (identity if kind == "i" else contents)(path) != expected:
                return fact
        else:
            return fact  # a kind this version does not know: never trusted
    return None


def _check_custom(subject: Any) -> Any:
    """Re-run a platform's own observation (``egg_core.observe.custom``): the checker, from the
    file it was recorded from (that file's contents are a fact checked before this one)."""
    if not isinstance(subject, tuple) or len(subject) != 3:
        return object()  # never equal: not a fact this version records
    checker, args, origin = subject
    found = code_at(checker, origin)
    if found is None:
        return object()
    return found(*args)


def origin_of(spec: str) -> str | None:
    """The file the module of ``spec`` (``module:function``) was loaded from, importing it if
    need be; None when ``spec`` names no function of a module loaded from a file."""
    module_name, colon, function = spec.partition(":")
    if not colon or not module_name or not function:
        return None
    try:
        loaded = module(module_name)
    except Exception:
        return None
    origin = getattr(loaded, "__file__", None)
    if not isinstance(origin, str) or not callable(getattr(loaded, function, None)):
        return None
    return origin


def code_at(spec: object, origin: object) -> Any:
    """The function ``spec`` names, if its module is the file ``origin`` the cache recorded;
    None otherwise. This, not the module's name, is what admits code to a cached launch: a hit
    runs the code that prepared it (its contents are among the entry's facts) whichever
    plugin it belongs to, and nothing else.

    Nothing of another file runs to find out: the module's file, and each of its packages'
    ``__init__.py`` (the directories above ``origin``), are located through the import system's
    finders before any of them is imported, top down, so a name that now leads elsewhere is a
    miss before that elsewhere is executed."""
    if not isinstance(spec, str) or not isinstance(origin, str):
        return None
    module_name, colon, function = spec.partition(":")
    if not colon or not module_name or not function:
        return None
    parts = module_name.split(".")
    container = os.path.dirname(origin)
    if os.path.basename(origin) == "__init__.py":
        container = os.path.dirname(container)
    expected = []
    for _ in parts[:-1]:
        expected.append(os.path.join(container, "__init__.py"))
        container = os.path.dirname(container)
    expected.reverse()
    for index, file in enumerate([*expected, origin]):
        if located(".".join(parts[: index + 1])) != file:
            return None
    found = getattr(module(module_name), function, None)
    return found if callable(found) else None


def located(name: str) -> str | None:
    """The file module ``name`` is, or would be, loaded from, without running it (its packages
    are imported, as any import of it would): its ``__file__`` when it is loaded, else what the
    import system's finders (``sys.meta_path``) say; None for no file (a namespace package, a
    built-in, nothing found)."""
    import sys

    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
        return origin if isinstance(origin, str) else None
    parent = name.rpartition(".")[0]
    path = None
    if parent:
        try:
            path = getattr(module(parent), "__path__", None)
        except Exception:
            return None
        if path is None:
            return None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except Exception:
            return None
        if spec is not None:
            origin = spec.origin if spec.has_location else None
            return origin if isinstance(origin, str) else None
    return None


def module(name: str) -> Any:
    """The module ``name``, imported if need be (``__import__``: ``importlib`` itself would
    cost the fast path an import of its own)."""
    import sys

    __import__(name)
    return sys.modules[name]
