"""The code an ``egg exec`` cache hit runs, kept in one file.

A hit imports about twenty modules of egg's (the runner, the socket gate, the spawn) before its
sandbox starts. The import system finds each on its own: the path's directories looked at, the
compiled file opened, checked against its source, read — about 40 microseconds a module before
any of its code runs, 0.8 ms of a 16 ms hit (bench/spawn.py). So a hit keeps the compiled code
of every module it imported after this point in one file of its cache
(``$EGG_HOME/cache/hitcode-KEY``, private as every entry is: :func:`egg_core.execcache.
load_private`), and the next hit's imports of those names are served from it, by a finder first
on ``sys.meta_path``: one read of one file.

A module is served only while its source is the file it was compiled from: every module's
source is looked at (inode, size, modification and change times) before any is served, and one
that differs leaves the whole file unused — the imports go their usual way, and the hit writes
the file afresh. The file is named after the interpreter and what is installed where it imports
from (``execcache.installed``): another installation sharing ``$EGG_HOME`` has a file of its
own. Each served module's spec names its source file, as the usual import's does, so
:func:`egg_core.facts.code_at` — which admits a cached launch's runner by the file it was
recorded from — sees what it would have seen.

Standard library only: it runs before the fast path imports anything else.
"""

from __future__ import annotations

import marshal
import os
import sys

from egg_core import execcache
from egg_core.facts import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMAT = 1
#: a module's source as it was compiled: inode, size, modification and change times
Fingerprint = tuple[int, int, int, int]


def path_of(egg_home: str) -> str:
    """Where this interpreter and installation keep a hit's code in ``egg_home``."""
    key = sha256_hex(repr((sys.executable, execcache.installed())).encode())[:16]
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(egg_home, "cache", f"hitcode-{tag}-{key}")


def fingerprint(path: str) -> Fingerprint | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Served:
    """The modules a hit may import from the file, and the names loaded before it served."""

    def __init__(self, path: str, modules: dict[str, Any], before: set[str]) -> None:
        self.path, self.modules, self.before = path, modules, before

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The import system's question (a meta path finder's): a spec for ``name`` when the
        file holds its code, else None (the next finder answers)."""
        found = self.modules.get(name)
        if found is None:
            return None
        origin, package, _, _ = found
        spec = _ModuleSpec(name, self, origin=origin, is_package=package)
        spec.has_location = True  # __file__ is the source's, as for the usual import
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec

    def invalidate_caches(self) -> None:
        pass

    # the loader of what find_spec found

    def create_module(self, spec: Any) -> None:
        return None  # the import system makes the module as usual

    def exec_module(self, module: Any) -> None:
        exec(self.get_code(module.__name__), module.__dict__)

    def get_code(self, name: str) -> Any:
        return marshal.loads(self.modules[name][3])

    def get_source(self, name: str) -> str | None:
        try:
            with open(self.modules[name][0], encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError, KeyError):
            return None


#: the import system's spec class, without importing importlib (the fast path cannot afford it)
_ModuleSpec: Any = sys.modules["_frozen_importlib"].ModuleSpec


def install(environ: Mapping[str, str]) -> Served:
    """Serve this hit's imports from its cache's file, when every module there is still the
    file it was compiled from (anything unexpected leaves the file unused: the imports go their
    usual way). What :func:`record` then takes."""
    from egg_core.rundirs import egg_home_of

    before = set(sys.modules)
    try:
        path = path_of(egg_home_of(environ))
        data = execcache.load_private(path, FORMAT)
    except Exception:
        return Served("", {}, before)
    modules = data.get("modules") if data is not None else None
    served = Served(path, {}, before)
    if not isinstance(modules, dict):
        return served
    for item in modules.values():
        if not (isinstance(item, tuple) and len(item) == 4 and isinstance(item[0], str)):
            return served
        if fingerprint(item[0]) != item[2]:
            return served  # a source changed (or went): the usual imports, and a new file
    served.modules = modules
    sys.meta_path.insert(0, served)
    return served


def uninstall(served: Served) -> None:
    """Serve no more imports from the file (a miss goes on to the full path, which imports as
    usual; a caller in-process goes on as before)."""
    if served in sys.meta_path:
        sys.meta_path.remove(served)


def record(served: Served) -> None:
    """After a hit: when it imported a module the file does not hold (the first hit, a source
    that changed, a runner of another kind), write the file afresh with every module the file
    served or the hit imported since :func:`install` — as the usual import found it, from its
    source file. Never raises: it only costs the next hit speed."""
    if not served.path:
        return
    try:
        modules = dict(served.modules)
        new = False
        for name, module in list(sys.modules.items()):
            if name in served.before or name in modules:
                continue
            compiled = _compiled(name, module)
            if compiled is not None:
                modules[name] = compiled
                new = True
        if new:
            directory = os.path.dirname(served.path)
            os.makedirs(directory, mode=0o700, exist_ok=True)
            tmp = f"{served.path}.{os.getpid()}"
            with open(tmp, "wb") as handle:
                marshal.dump({"format": FORMAT, "modules": modules}, handle)
            os.replace(tmp, served.path)
    except Exception:
        pass


def _compiled(name: str, module: Any) -> tuple[str, bool, Fingerprint, bytes] | None:
    """What the file keeps of ``module``: its source, whether it is a package, the source's
    fingerprint, its code (as its usual loader reads it: compiled file or source); None for a
    module not loaded from a source file (a built-in, a C extension, a namespace package)."""
    spec = getattr(module, "__spec__", None)
    loader = getattr(spec, "loader", None)
    origin = getattr(spec, "origin", None)
    if not isinstance(origin, str) or not origin.endswith(".py"):
        return None
    if loader is None or type(loader).__name__ != "SourceFileLoader":
        return None
    before = fingerprint(origin)
    code = loader.get_code(name)
    if code is None or before is None or fingerprint(origin) != before:
        return None  # (changed while it was read)
    package = getattr(spec, "submodule_search_locations", None) is not None
    return (origin, package, before, marshal.dumps(code))
