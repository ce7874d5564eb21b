"""Host observations through one recorder: what a launch decision looked at, it recorded.

``egg exec``'s cache (:mod:`egg_core.execcache`) may replay a launch only while everything the full
path's decision rested on still holds. Listing those things by hand drifted from the code that
looked at them, so the code that decides looks at the host through this module instead of ``os``:
each helper does what its ``os`` namesake does and, while a :class:`Recorder` is active (the full
path of an ``egg exec``), records the *fact* the answer came from, in the cache's own fact kinds:

- ``("i", path, identity)``: what a path is — device, inode, type, permissions, owner
  (:func:`lstat`, :func:`lexists`, :func:`islink`; :func:`stat`, :func:`exists`, :func:`isdir`,
  :func:`isfile`, :func:`access` and :func:`realpath` record every path their resolution passed
  through, so a symlink retargeted anywhere on the way changes a fact);
- ``("c", path, contents)``: what a file holds (:func:`content`, the program :func:`which`
  finds);
- ``("l", path, listing)``: a directory's entries (:func:`listdir`, :func:`scandir`,
  :func:`glob_in`);
- ``("s", path, seed)``: a placeholder path, missing or holding its seed (:func:`seed`);
- ``("x", (checker, args, origin), value)``: a platform's own kind of fact, re-checked by calling
  ``checker(*args)`` — a ``module:function`` of any plugin, from the file ``origin`` it was
  loaded from, whose contents are a fact of their own recorded just before — and comparing
  (:func:`custom`; the ssh agents' sockets are one).

Environment reads go through :class:`RecordingEnviron`, so the cache keys on the variables that
were read (their values), not on the whole environment.

Two observations of one path that disagree (egg created the directory in between, as it does for
an agent's missing directories on a first run) make the recording inconsistent: such a launch is
not cached, and the next run, which sees one state throughout, is.

When no recorder is active the helpers cost what ``os`` costs, and record nothing.

Why one module of this size: every helper is a thin ``os`` twin that records one fact kind;
they belong together so that a new observation has one obvious home, and no other.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat as stat_module
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from egg_core import facts as checks

Fact = tuple[Any, ...]

#: symlinks followed while resolving one path before giving up (the kernel's own limit)
MAX_LINKS = 40


class Recorder:
    """The facts of one decision, in the order first seen, and the environment it read."""

    def __init__(self) -> None:
        self._facts: dict[tuple[str, Any], Any] = {}
        #: (kind, subject) observed with two different values
        self.conflicts: list[tuple[str, Any]] = []
        #: environment variables read: name -> value (None: not set)
        self.env_read: dict[str, str | None] = {}
        #: the environment's variable names were listed (their set is part of the key)
        self.env_listed = False
        #: each listed directory's entries, as seen (see :meth:`facts`)
        self._entries: dict[str, list[str]] = {}

    def add(self, kind: str, subject: Any, value: Any) -> None:
        key = (kind, _hashable(subject))
        if kind == "i" and ("s", key[1]) in self._facts:
            return  # a placeholder path: its own fact says what may be there
        if kind == "s":
            # what was seen there before the platform chose to plant a placeholder: missing,
            # or a placeholder a crashed run left; either way the same launch
            self._facts.pop(("i", key[1]), None)
            self.conflicts = [c for c in self.conflicts if c != ("i", key[1])]
        if key in self._facts and self._facts[key] != value and key not in self.conflicts:
            self.conflicts.append(key)
        self._facts[key] = value

    def extend(self, facts: list[Fact]) -> None:
        """Facts another part of egg observed in these same kinds (the git guard's watch)."""
        for kind, subject, value in facts:
            self.add(kind, subject, value)

    def add_listing(self, path: str) -> None:
        found = checks.entries(path)
        self._entries[path] = found[1] if found else []
        self.add("l", path, None if found is None else (found[0], checks.digest_of(found[1])))

    def facts(self) -> list[Fact]:
        """The facts, a directory's listing leaving out the placeholders planted in it (missing
        or left by a crashed run: the same launch, as their own facts say)."""
        seeded: dict[str, list[str]] = {}
        for kind, subject in self._facts:
            if kind == "s":
                seeded.setdefault(os.path.dirname(subject), []).append(os.path.basename(subject))
        out = []
        for (kind, subject), value in self._facts.items():
            if kind == "l" and value is not None and subject in seeded and subject in self._entries:
                ignore = tuple(sorted(seeded[subject]))
                value = (value[0], checks.digest_of(self._entries[subject], ignore), ignore)
            out.append((kind, subject, value))
        return out

    @property
    def consistent(self) -> bool:
        return not self.conflicts


_active: Recorder | None = None


def active() -> Recorder | None:
    """The recorder of the decision being made, if one is being recorded."""
    return _active


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Record every observation made through this module until the block ends."""
    global _active
    previous, _active = _active, Recorder()
    try:
        yield _active
    finally:
        _active = previous


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


def extend(facts: list[Fact], conflicts: Iterable[Any] = ()) -> None:
    """Facts another part of egg observed itself, in these kinds (the git guard's watch list,
    which its audit needs anyway), and the ``conflicts`` of a recording of its own (a path that
    changed while it looked: the decision cannot be cached)."""
    if _active is not None:
        _active.extend(facts)
        _active.conflicts += [c for c in conflicts if c not in _active.conflicts]


def _record(kind: str, subject: Any, value: Any) -> None:
    if _active is not None:
        _active.add(kind, subject, value)


# -- what a path is ----------------------------------------------------------------------------


def lstat(path: str) -> os.stat_result:
    """``os.lstat``, recording the path's identity (also when it does not exist)."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except OSError:
        _record("i", os.path.normpath(path), None)
        raise
    if _active is not None:
        _active.add("i", os.path.normpath(path), checks.identity_of(path, st))
    return st


def lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return lstat(path)
    except OSError:
        return None


def lexists(path: str) -> bool:
    try:
        lstat(path)
    except OSError:
        return False
    return True


def islink(path: str) -> bool:
    try:
        return stat_module.S_ISLNK(lstat(path).st_mode)
    except OSError:
        return False


def realpath(path: str) -> str:
    """``os.path.realpath``, recording every path the resolution looked at: each component,
    each symlink's target (through :func:`lstat`; a symlink's target cannot change without its
    identity changing)."""
    path = os.fspath(path)
    if _active is None:
        return os.path.realpath(path)
    # joined, not abspath()'d: ``link/..`` must go through the link, as the kernel does
    return _resolve(path if path.startswith("/") else os.path.join(os.getcwd(), path))


def _resolve(path: str) -> str:
    """``realpath`` by hand, every lstat recorded: the same answer as the standard one for an
    absolute path (a missing component is taken as it is, as the standard one does, and the walk
    goes on: ``missing/../link`` still goes through the link)."""
    pending = [part for part in path.split("/") if part]
    current = "/"
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            st = lstat(candidate)
        except OSError:
            current = candidate
            continue
        if not stat_module.S_ISLNK(st.st_mode):
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return os.path.realpath(path)  # a loop: the standard answer, as recorded so far
        try:
            target = os.readlink(candidate)
        except OSError:
            return os.path.realpath(path)
        if target.startswith("/"):
            current = "/"
        pending[:0] = [p for p in target.split("/") if p]
    return current


def stat(path: str) -> os.stat_result:
    """``os.stat``: the resolution and the final path's identity recorded."""
    real = realpath(path)
    return lstat(real) if _active is not None else os.stat(path)


def exists(path: str) -> bool:
    try:
        stat(path)
    except OSError:
        return False
    return True


def isdir(path: str) -> bool:
    try:
        return stat_module.S_ISDIR(stat(path).st_mode)
    except OSError:
        return False


def isfile(path: str) -> bool:
    try:
        return stat_module.S_ISREG(stat(path).st_mode)
    except OSError:
        return False


def access(path: str, mode: int) -> bool:
    """``os.access``: what it answers rests on the permissions and owners along the path, which
    the resolution records (the caller's identity is part of the cache key)."""
    if _active is not None:
        real = realpath(path)
        with contextlib.suppress(OSError):
            lstat(real)
    return os.access(path, mode)


# -- what a file holds, what a directory lists ---------------------------------------------------


def content(path: str) -> None:
    """Record what ``path`` holds (a program egg runs, a module it imports) without reading it."""
    if _active is not None:
        _active.add("c", os.fspath(path), checks.contents(os.fspath(path)))


def listdir(path: str) -> list[str]:
    """``os.listdir``, recording the directory's names and entry types."""
    path = os.fspath(path)
    if _active is not None:
        realpath(path)
        _active.add_listing(os.path.normpath(path))
    return os.listdir(path)


def scandir(path: str) -> list[os.DirEntry[str]]:
    """``os.scandir``'s entries (a list), recording the directory's names and entry types: a
    file that becomes a socket, or a directory that becomes a symlink, changes the fact."""
    path = os.fspath(path)
    if _active is not None:
        realpath(path)
        _active.add_listing(os.path.normpath(path))
    with os.scandir(path) as entries:
        return list(entries)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Look without recording: for a platform computing a fact of its own kind (see
    :func:`custom`), whose checker repeats the whole computation."""
    global _active
    previous, _active = _active, None
    try:
        yield
    finally:
        _active = previous


def glob_in(directory: str, pattern: str, include_hidden: bool = False) -> list[str]:
    """The entries of ``directory`` whose names match ``pattern`` (one component, taken as is:
    no character of ``directory`` is a wildcard), the listing recorded. Sorted."""
    try:
        names = listdir(directory)
    except OSError:
        return []
    return sorted(
        os.path.join(directory, name)
        for name in names
        if fnmatch.fnmatchcase(name, pattern)
        and (include_hidden or pattern.startswith(".") or not name.startswith("."))
    )


def which(name: str, search_path: str) -> str | None:
    """What ``shutil.which(name, path=search_path)`` finds, recording each candidate looked at
    and the contents of the one found."""
    if "/" in name:
        return name if access(name, os.X_OK) and not isdir(name) else None
    for directory in search_path.split(os.pathsep):
        candidate = os.path.join(directory, name)
        found = lexists(os.path.abspath(candidate)) and access(candidate, os.X_OK)
        if found and not isdir(candidate):
            content(os.path.abspath(candidate))
            return candidate
    return None


# -- kinds of fact of their own -------------------------------------------------------------------


def seed(path: str, seed_text: str) -> None:
    """A placeholder at ``path``: the launch is the same whether it is missing or holds its seed."""
    _record("s", os.fspath(path), seed_text)


def custom(checker: str, args: tuple[Any, ...], value: Any) -> None:
    """A fact only its platform knows how to check: ``checker(*args)`` returned ``value``."""
    origin = checks.origin_of(checker)
    if origin is None:
        raise ValueError(f"a fact's checker must be module:function from a file: {checker!r}")
    content(origin)  # first: the checker's own code is checked before it is run
    _record("x", (checker, args, origin), value)


# -- the environment ------------------------------------------------------------------------------


def getenv(name: str, default: str) -> str:
    """``os.environ.get`` for code that reads the process environment itself: recorded."""
    if _active is not None:
        _active.env_read[name] = os.environ.get(name)
    return os.environ.get(name, default)


class RecordingEnviron(Mapping[str, str]):
    """The process environment as the decision reads it: each variable looked up (and whether
    the names were listed) is recorded in the active recorder."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    @property
    def raw(self) -> Mapping[str, str]:
        """The environment itself, for reading it without recording (the cache's own key)."""
        return self._environ

    def _note(self, name: str) -> None:
        if _active is not None:
            _active.env_read[name] = self._environ.get(name)

    def __getitem__(self, name: str) -> str:
        self._note(name)
        return self._environ[name]

    def get(self, name: str, default: Any = None) -> Any:
        self._note(name)
        return self._environ.get(name, default)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self._note(name)
        return name in self._environ

    def __iter__(self) -> Iterator[str]:
        if _active is not None:
            _active.env_listed = True
        return iter(list(self._environ))

    def __len__(self) -> int:
        if _active is not None:
            _active.env_listed = True
        return len(self._environ)

    def copy(self) -> dict[str, str]:
        """Every variable: all of them were read."""
        return {name: self[name] for name in self}
