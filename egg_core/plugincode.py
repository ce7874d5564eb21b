"""Threat R: the code of every egg plugin is read-only in every sandbox, like egg's own.

Every ``egg`` command on the host imports every installed plugin. A plugin whose files a sandbox
could write — installed editable (``pip install -e``) from a directory the sandbox can write, or
into a user site directory under a writable home — would run whatever the sandbox appended to
it, on the host, at the next ``egg`` command. So every distribution that registers an ``egg``
entry point has its files protected (``deny-write``), found from its own metadata rather than from
a list of places:

- its metadata directory (``*.dist-info``, ``*.egg-info``): ``entry_points.txt`` there says which
  modules egg imports;
- every file its ``RECORD`` lists, by the top-level entry that holds it (a package directory as a
  whole, so a planted ``__pycache__/*.pyc`` or a new module beside the others is covered; a
  ``.pth`` file; a script);
- where its top-level packages are imported from *now* — the entry points' modules and
  ``top_level.txt`` — found as the import system finds them (``importlib.util.find_spec``, which
  locates without importing): for an editable install that is the source tree, whether a ``.pth``
  path or an editable finder's mapping leads there.

And every directory egg's own Python imports from (:func:`import_path`): ``importlib.metadata``
finds entry points in each of them, so a ``*.dist-info`` a sandbox wrote into one — the source
tree a ``.pth`` of an editable install puts there, a user site directory under a writable home —
would be a new plugin, and a module written there one that some import finds.

Every path is looked at through :mod:`egg_core.observe`, so the exec cache notices a change.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Iterator
from importlib import metadata
from typing import Any

from egg_core import observe
from egg_core.policy import EGG_SOURCE, FsEntry


def plugin_code(records: Iterable[Any]) -> list[FsEntry]:
    """The protections for the distributions of these entry-point records
    (:class:`egg_core.plugins.EntryPointRecord`): one entry per path, naming the plugins."""
    plugins: dict[str, list[str]] = {}
    modules: dict[str, list[str]] = {}
    for record in records:
        if not record.distribution:
            continue
        plugins.setdefault(record.distribution, []).append(record.name)
        top = record.value.partition(":")[0].strip().split(".")[0]
        modules.setdefault(record.distribution, []).append(top)
    entries: dict[str, FsEntry] = {}
    for name in sorted(plugins):
        why = f"{EGG_SOURCE}: code of the plugin {', '.join(sorted(plugins[name]))} ({name})"
        for path in distribution_paths(name, modules[name]):
            entries.setdefault(path, FsEntry("deny-write", path, why))
    return list(entries.values())


def import_path() -> list[FsEntry]:
    """The directories (and zip files) on this Python's ``sys.path``, as they are now."""
    why = f"{EGG_SOURCE}: egg's Python imports from here (a module or plugin here runs on the host)"
    found: dict[str, FsEntry] = {}
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue  # the current directory: egg's entry points take it off (python -P)
        real = observe.realpath(entry)
        if observe.lexists(real):
            found.setdefault(real, FsEntry("deny-write", real, why))
    return list(found.values())


def distribution_paths(name: str, modules: Iterable[str] = ()) -> list[str]:
    """The real paths holding the code and metadata of the installed distribution ``name``."""
    try:
        dist = metadata.distribution(name)
    except (metadata.PackageNotFoundError, ValueError):
        return []
    found: list[str] = []
    meta_dir = getattr(dist, "_path", None)  # PathDistribution's: no public name for it
    if meta_dir is not None:
        found.append(str(meta_dir))
    found += _recorded(dist)
    tops = list(dict.fromkeys([*modules, *(dist.read_text("top_level.txt") or "").split()]))
    found += [path for top in tops for path in _import_locations(top)]
    real = []
    for path in found:
        resolved = observe.realpath(os.path.abspath(path))
        if observe.lexists(resolved):
            real.append(resolved)
    unique = dict.fromkeys(real)
    return [p for p in unique if not any(q != p and _under(p, q) for q in unique)]


def _recorded(dist: metadata.Distribution) -> Iterator[str]:
    """What RECORD lists, by the top-level entry holding each file (``../`` paths: the file).
    Only an installed distribution's RECORD: a ``*.egg-info``'s ``SOURCES.txt`` lists the
    project's source tree (tests, docs), not what is imported."""
    if dist.read_text("RECORD") is None:
        return
    for file in dist.files or ():
        parts = file.parts
        if not parts:
            continue
        if parts[0] == "..":
            yield str(dist.locate_file(file))
        else:
            yield str(dist.locate_file(parts[0]))


def _import_locations(top: str) -> list[str]:
    """Where the import system would load the top-level module ``top`` from (no import)."""
    if not top.isidentifier():
        return []
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [str(p) for p in spec.submodule_search_locations]
    if spec.origin and os.path.isabs(spec.origin):
        return [spec.origin]
    return []


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
