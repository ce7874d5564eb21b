"""The code an ``egg exec`` cache hit runs, kept in one file.

A hit imports about twenty modules of egg's (the runner, the socket gate, the spawn) before its
sandbox starts. The import system finds each on its own: the path's directories looked at, the
compiled file opened, checked against its source, read — about 40 microseconds a module before
any of its code runs, 0.6 ms of a hit (bench/spawn.py). So a hit keeps the compiled code of every
module it imported after this point in one file of its cache (``$EGG_HOME/cache/hitcode/``,
private as every entry is: :func:`egg_core.execcache.load_private`), and the next hit's imports
of those names are served from it, by a finder first on ``sys.meta_path``: one read of one file.

A module is served only while the import system would find the same file, unchanged: before any
is served, every module's source is looked at (device, inode, size, change time), and
so is every directory one of them was found in (a module or package added there could take its
name), and one that differs leaves the whole file unused — the imports go their usual way, and
the hit writes the file afresh. The file is named after the interpreter, its optimization level
and what is installed where it imports from (``execcache.installed``): another installation
sharing ``$EGG_HOME`` has a file of its own. Each served module is loaded as its usual loader
would load it (a ``SourceFileLoader`` of its source file, whose compiled code comes from the
file), so its spec, ``__file__`` and resources are what they would be, and
:func:`egg_core.facts.code_at` — which admits a cached launch's runner by the file it was
recorded from — sees what it would have seen.

Standard library only: it runs before the fast path imports anything else.
"""

from __future__ import annotations

import marshal
import os
import sys

from egg_core import execcache
from egg_core.facts import contents, sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMAT = 3
#: hit code files kept in a cache (one per installation and interpreter: the rest are old)
KEEP = 4
#: a module's source as it was compiled (egg_core.facts.contents: device, inode, size, change
#: time, which any write, rename or touch moves on)
Fingerprint = tuple[int, ...]
#: the import system's own classes, without importing importlib (the fast path cannot afford it)
_external: Any = sys.modules["_frozen_importlib_external"]


def path_of(egg_home: str) -> str:
    """Where this interpreter and installation keep a hit's code in ``egg_home``."""
    material = (sys.executable, sys.flags.optimize, execcache.installed())
    key = sha256_hex(repr(material).encode())[:16]
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(egg_home, "cache", "hitcode", f"{tag}-{key}")


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class _Loader(_external.SourceFileLoader):  # type: ignore[misc]
    """A module's usual loader, its code from the file (its source's, should that fail)."""

    def __init__(self, served: Served, name: str, path: str) -> None:
        super().__init__(name, path)
        self.served = served

    def get_code(self, fullname: str) -> Any:
        try:
            return marshal.loads(self.served.modules[fullname][3])
        except Exception:  # a file that lies about what it holds: used no more
            self.served.broken = True
            return super().get_code(fullname)


class Served:
    """The modules a hit may import from the file (a finder first on ``sys.meta_path``), and
    the names that were loaded before it served."""

    def __init__(self, path: str, modules: dict[str, Any], before: set[str]) -> None:
        self.path, self.modules, self.before = path, modules, before
        self.broken = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """A spec for ``name`` when the file holds its code, else None (the next finder
        answers); as the path finder makes it for the source file."""
        found = self.modules.get(name)
        if found is None or self.broken:
            return None
        origin, package = found[0], found[1]
        return _external.spec_from_file_location(
            name,
            origin,
            loader=_Loader(self, name, origin),
            submodule_search_locations=[os.path.dirname(origin)] if package else None,
        )

    def invalidate_caches(self) -> None:
        pass


def install(environ: Mapping[str, str]) -> Served:
    """Serve this hit's imports from its cache's file, when every module there is still what
    the import system would find (anything unexpected leaves the file unused: the imports go
    their usual way). What :func:`record` then takes."""
    from egg_core.rundirs import egg_home_of

    before = set(sys.modules)
    try:
        path = path_of(egg_home_of(environ))
        if not _ours(path):
            return Served("", {}, before)  # another's file, or one others may write: left be
        data = execcache.load_private(path, FORMAT)
    except Exception:
        return Served("", {}, before)
    served = Served(path, {}, before)
    if data is None:
        return served
    modules, directories = data.get("modules"), data.get("directories")
    if not isinstance(modules, dict) or not isinstance(directories, dict):
        return served
    for item in modules.values():
        if not (isinstance(item, tuple) and len(item) == 4 and isinstance(item[0], str)):
            return served
        if contents(item[0]) != item[2]:
            return served  # a source changed (or went): the usual imports, and a new file
    for directory, mtime in directories.items():
        if _mtime(directory) != mtime:
            return served  # something was added or removed where a module was found
    served.modules = modules
    sys.meta_path.insert(0, served)
    return served


def _ours(path: str) -> bool:
    """Whether ``path`` is absent, or this user's and nobody else's to write."""
    try:
        return execcache.private(os.lstat(path))
    except OSError:
        return True


def uninstall(served: Served) -> None:
    """Serve no more imports from the file (a miss goes on to the full path, which imports as
    usual; a caller in-process goes on as before)."""
    if served in sys.meta_path:
        sys.meta_path.remove(served)


def record(served: Served) -> None:
    """After a hit: when it imported a module the file does not hold (the first hit, a source
    that changed, a runner of another kind) or the file was found broken, write it afresh with
    every module the file served or the hit imported since :func:`install`, each compiled as
    its usual loader compiles it, from its source file. Never raises: it only costs the next
    hit speed."""
    if not served.path:
        return
    try:
        loaded = [
            name
            for name, module in list(sys.modules.items())
            if name not in served.before and _source_of(module) is not None
        ]
        if served.broken:
            kept = {}  # what it held is compiled again from the sources, as far as loaded
        elif all(name in served.modules for name in loaded):
            return
        else:
            kept = dict(served.modules)  # (checked against its sources when it was installed)
        modules: dict[str, Any] = {}
        directories: dict[str, int | None] = {}
        for name in sorted({*kept, *loaded}):
            module = sys.modules.get(name)
            compiled = _compiled(name, module) if module is not None else kept.get(name)
            if compiled is None:
                continue
            modules[name] = compiled
            found_in = os.path.dirname(compiled[0])
            for directory in (found_in, os.path.dirname(found_in)) if compiled[1] else (found_in,):
                directories[directory] = _mtime(directory)
        directory = os.path.dirname(served.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        execcache.write_private(
            served.path, {"format": FORMAT, "modules": modules, "directories": directories}
        )
        execcache.prune(directory, KEEP)
    except Exception:
        pass


def _compiled(name: str, module: Any) -> tuple[str, bool, Fingerprint, bytes] | None:
    """What the file keeps of ``module``: its source, whether it is a package, the source's
    fingerprint, its code (as a ``SourceFileLoader`` reads it: compiled file or source); None
    for a module not loaded from a source file (a built-in, a C extension, a namespace
    package)."""
    origin = _source_of(module)
    if origin is None:
        return None
    spec = module.__spec__
    before = contents(origin)
    code = _external.SourceFileLoader(name, origin).get_code(name)
    if code is None or before is None or contents(origin) != before:
        return None  # (changed while it was read)
    package = getattr(spec, "submodule_search_locations", None) is not None
    return (origin, package, before, marshal.dumps(code))


def _source_of(module: Any) -> str | None:
    """The source file ``module`` was loaded from by a ``SourceFileLoader`` (the usual one, or
    this file's); None for any other (a built-in, a C extension, a namespace package)."""
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if not isinstance(origin, str) or not origin.endswith(".py"):
        return None
    if not isinstance(getattr(spec, "loader", None), _external.SourceFileLoader):
        return None
    return origin
