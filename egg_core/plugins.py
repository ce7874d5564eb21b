"""Build the plugin manager: discover the ``egg`` entry points, load them one by one, report.

pluggy's own ``load_setuptools_entrypoints`` lets one broken plugin crash every command. Here each
entry point is imported and registered separately; a failure is recorded (plugin name,
distribution, the exception's message) and shown by ``egg plugins``, and every other command keeps
working. Nothing loads at import time: :func:`get_plugin_manager` builds a fresh manager per call.

Built-in plugins live in this distribution and are registered through the same entry-point group
as third-party ones, *after* them, so that a third-party implementation of a ``firstresult`` hook
is called before a built-in ``trylast`` default.

Entry-point discovery reads every installed distribution's metadata, which costs more than the
rest of ``egg exec`` put together; the result is cached in ``$EGG_HOME/cache`` keyed on the
modification times of the ``sys.path`` directories (installing, upgrading or removing a
distribution changes them). ``EGG_PLUGIN_CACHE=0`` bypasses the cache.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pluggy

from egg_core import __version__, hookspecs
from egg_core.paths import egg_home

ENTRY_POINT_GROUP = "egg"
BUILTIN_DISTRIBUTION = "egg-sandbox"
LOAD_ENV = "EGG_LOAD_PLUGINS"
DISABLE_ENV = "EGG_DISABLE_PLUGINS"
CACHE_ENV = "EGG_PLUGIN_CACHE"


@attrs.frozen
class EntryPointRecord:
    """One ``egg`` entry point, as found in installed metadata (or the cache of it)."""

    name: str
    value: str
    distribution: str | None
    version: str | None

    @property
    def builtin(self) -> bool:
        return _canonical(self.distribution or "") == BUILTIN_DISTRIBUTION


@attrs.frozen
class PluginReport:
    """What happened to one plugin: loaded, failed to load, or disabled by the environment."""

    name: str
    distribution: str | None
    version: str | None
    builtin: bool
    status: str  # "loaded" | "error" | "disabled"
    error: str | None = None
    hooks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "builtin": self.builtin,
            "status": self.status,
            "hooks": list(self.hooks),
            "error": self.error,
        }


class EggPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers how loading each plugin went."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self._reports: dict[str, PluginReport] = {}
        #: every ``egg`` entry point that was found, loaded or not (their distributions' code
        #: is protected in every sandbox: egg_core.plugincode)
        self.entry_points: list[EntryPointRecord] = []

    def reports(self) -> list[PluginReport]:
        """Every plugin that was considered, in load order, with its implemented hooks."""
        result = []
        for report in self._reports.values():
            if report.status == "loaded":
                plugin = self.get_plugin(report.name)
                hooks = tuple(sorted(h.name for h in self.get_hookcallers(plugin) or ()))
                report = attrs.evolve(report, hooks=hooks)
            result.append(report)
        return result

    def has_report(self, name: str) -> bool:
        return name in self._reports

    def record(self, report: PluginReport) -> None:
        self._reports[report.name] = report

    def fail(self, name: str, message: str) -> None:
        """Turn an already-registered plugin into a load error, unregistering it."""
        plugin = self.get_plugin(name)
        if plugin is not None:
            self.unregister(plugin)
        old = self._reports.get(name)
        self._reports[name] = PluginReport(
            name=name,
            distribution=old.distribution if old else None,
            version=old.version if old else None,
            builtin=old.builtin if old else False,
            status="error",
            error=message,
        )


def get_plugin_manager(
    *,
    environ: Mapping[str, str] | None = None,
    entry_points: Iterable[EntryPointRecord] | None = None,
    extra_plugins: Iterable[tuple[str, object]] = (),
) -> EggPluginManager:
    """A fresh plugin manager with every allowed ``egg`` plugin loaded (or its failure recorded).

    :param environ: where ``EGG_LOAD_PLUGINS`` / ``EGG_DISABLE_PLUGINS`` are read (default
        ``os.environ``).
    :param entry_points: the entry points to load instead of discovering them (tests).
    :param extra_plugins: ``(name, plugin)`` pairs registered before the entry points, as
        third-party plugins are (tests use this to add a plugin without installing it).
    """
    env = os.environ if environ is None else environ
    pm = EggPluginManager()
    records = list(discover_entry_points(env) if entry_points is None else entry_points)
    pm.entry_points = records
    allow = _name_set(env.get(LOAD_ENV))
    deny = _name_set(env.get(DISABLE_ENV)) or set()
    for name, plugin in extra_plugins:
        _register(pm, name, plugin, None, None, builtin=False)
    # Third parties first, built-ins last: pluggy calls the latest registration first.
    ordered = sorted(records, key=lambda r: (r.builtin, _canonical(r.distribution or ""), r.name))
    for record in ordered:
        keys = {_canonical(record.name), _canonical(record.distribution or "")}
        if (allow is not None and not keys & allow) or keys & deny:
            pm.record(
                PluginReport(
                    name=record.name,
                    distribution=record.distribution,
                    version=record.version,
                    builtin=record.builtin,
                    status="disabled",
                )
            )
            continue
        _load_entry_point(pm, record)
    _reject_unknown_hooks(pm)
    pm.check_pending()
    return pm


def _name_set(raw: str | None) -> set[str] | None:
    """Plugin or distribution names from a comma list; None when the variable is unset."""
    if raw is None:
        return None
    return {_canonical(part) for part in raw.split(",") if part.strip()}


def _canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def _load_entry_point(pm: EggPluginManager, record: EntryPointRecord) -> None:
    if pm.has_report(record.name):
        pm.record(
            PluginReport(
                name=f"{record.name} ({record.distribution})",
                distribution=record.distribution,
                version=record.version,
                builtin=record.builtin,
                status="error",
                error=f"plugin name {record.name!r} is already taken by another distribution",
            )
        )
        return
    try:
        module_name, _, attr = record.value.partition(":")
        obj: Any = importlib.import_module(module_name.strip())
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
    except (Exception, SystemExit) as exc:
        pm.record(
            PluginReport(
                name=record.name,
                distribution=record.distribution,
                version=record.version,
                builtin=record.builtin,
                status="error",
                error=_describe(exc),
            )
        )
        return
    _register(pm, record.name, obj, record.distribution, record.version, builtin=record.builtin)


def _register(
    pm: EggPluginManager,
    name: str,
    plugin: object,
    distribution: str | None,
    version: str | None,
    *,
    builtin: bool,
) -> None:
    error = None
    try:
        pm.register(plugin, name=name)
    except Exception as exc:  # pluggy's validation errors and name clashes
        error = _describe(exc)
    pm.record(
        PluginReport(
            name=name,
            distribution=distribution,
            version=version,
            builtin=builtin,
            status="error" if error else "loaded",
            error=error,
        )
    )


def _reject_unknown_hooks(pm: EggPluginManager) -> None:
    """A plugin implementing a hook egg does not define is that plugin's error, not everyone's."""
    for hook_name in sorted(vars(pm.hook)):
        caller = getattr(pm.hook, hook_name)
        if not isinstance(caller, pluggy.HookCaller) or caller.spec is not None:
            continue
        for impl in caller.get_hookimpls():
            if not impl.optionalhook:
                pm.fail(impl.plugin_name, f"implements unknown hook {hook_name!r}")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# --- entry-point discovery with a cache -----------------------------------------------------------


def discover_entry_points(environ: Mapping[str, str] | None = None) -> list[EntryPointRecord]:
    """The ``egg`` entry points of every installed distribution, from the cache when valid."""
    env = os.environ if environ is None else environ
    use_cache = env.get(CACHE_ENV, "1") != "0"
    cache_file = egg_home(env) / "cache" / "entry-points.json"
    key = _installation_key()
    if use_cache:
        cached = _read_cache(cache_file, key)
        if cached is not None:
            return cached
    records = _scan_entry_points()
    if use_cache:
        _write_cache(cache_file, key, records)
    return records


def _scan_entry_points() -> list[EntryPointRecord]:
    from importlib.metadata import distributions

    seen: set[tuple[str, str]] = set()
    records = []
    for dist in distributions():
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP or (ep.name, ep.value) in seen:
                continue
            seen.add((ep.name, ep.value))
            records.append(
                EntryPointRecord(
                    name=ep.name,
                    value=ep.value,
                    distribution=dist.metadata["Name"],
                    version=dist.version,
                )
            )
    return records


def _installation_key() -> str:
    parts = [__version__, sys.version]
    for entry in sys.path:
        try:
            stat = os.stat(entry or ".")
        except OSError:
            continue
        parts.append(f"{entry}\0{stat.st_mtime_ns}\0{stat.st_ino}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _read_cache(path: Path, key: str) -> list[EntryPointRecord] | None:
    try:
        data = json.loads(path.read_text())
        if data.get("key") != key:
            return None
        return [EntryPointRecord(**item) for item in data["entry_points"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_cache(path: Path, key: str, records: list[EntryPointRecord]) -> None:
    data = {"key": key, "entry_points": [attrs.asdict(r) for r in records]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only $EGG_HOME only costs speed
