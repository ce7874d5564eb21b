"""egg.yaml files: which one applies here, and the chain of bases it names.

This is what the rest of egg uses::

    resolved = discover_config(cwd, config_path=None)   # --config, ./egg.yaml, ~/.egg/egg.yaml
    resolved.config                                     # the merged EggConfig
    resolved.files                                      # every file the resolution read

A config names its parent with ``base``: omitted means the built-in default, ``none`` an empty
slate, a name a file in ``$EGG_HOME/bases``, and ``./x.yaml``/``../x.yaml``/``/abs.yaml`` a file
relative to the one naming it. Section masks (``base: {name, fs, network, env}``) take a section
from another resolved chain, or (``none``) from nowhere. Every file looked at goes through
:mod:`egg_core.observe` (egg exec's cache re-checks them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from egg_core import observe
from egg_core.config.model import (
    DEFAULT_SOURCE,
    MAX_BASE_DEPTH,
    BaseRef,
    EggConfig,
    default_config,
    merge_configs,
)
from egg_core.config.parsing import load_config_file
from egg_core.converters import to_tuple
from egg_core.errors import ConfigError
from egg_core.paths import egg_home, expand_user, user_home


@attrs.frozen(kw_only=True)
class ResolvedConfig:
    """A config after its base chain was resolved, and where it came from."""

    config: EggConfig
    #: the file that was discovered (None for the built-in default)
    path: Path | None
    #: every file read while resolving, root first (to keep them read-only in the sandbox)
    files: tuple[Path, ...] = attrs.field(converter=to_tuple)
    #: how discovery chose it: --config, ./egg.yaml, $EGG_HOME/egg.yaml or built-in default
    origin: str


class _Resolver:
    """Resolves base chains with one visited set across the whole resolution tree."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.home = user_home(environ)
        self.bases = egg_home(environ) / "bases"
        self.seen: list[Path] = []

    def resolve_file(self, path: Path, chain: tuple[Path, ...]) -> EggConfig:
        path = Path(os.path.abspath(path))
        key = Path(observe.realpath(str(path)))
        if key in {Path(observe.realpath(str(p))) for p in self.seen}:
            names = " -> ".join(str(p) for p in (*chain, path))
            where = chain[-1] if chain else path
            if key in {Path(observe.realpath(str(p))) for p in chain}:
                raise ConfigError(f"{where}: base cycle: {names}")
            raise ConfigError(
                f"{where}: base file reached twice in one resolution: {names} "
                "(it was already read for another base or mask)"
            )
        if len(chain) > MAX_BASE_DEPTH:
            raise ConfigError(
                f"{chain[-1]}: base chain deeper than {MAX_BASE_DEPTH}: "
                + " -> ".join(str(p) for p in (*chain, path))
            )
        self.seen.append(path)
        config = load_config_file(path)
        return self.resolve_loaded(config, path, (*chain, path))

    def resolve_loaded(
        self, config: EggConfig, path: Path | None, chain: tuple[Path, ...]
    ) -> EggConfig:
        base = config.base
        where = str(path) if path else "<config>"
        if base is not None and base.name == "none":
            if base.masks:
                raise ConfigError(
                    f"{where}: base: section masks need a base to mask, but base name is 'none'"
                )
            parent = None
        elif base is None or base.name is None:
            parent = default_config()
        else:
            parent = self.resolve_file(self.locate(base.name, path), chain)
        if base is not None and base.masks:
            assert parent is not None
            parent = self.apply_masks(parent, base, path, chain)
        if parent is None:
            return attrs.evolve(config, base=None)
        return merge_configs(parent, config, self.home)

    def apply_masks(
        self, parent: EggConfig, base: BaseRef, path: Path | None, chain: tuple[Path, ...]
    ) -> EggConfig:
        changes: dict[str, Any] = {}
        for section, mask in base.masks.items():
            if mask == "none":
                supplier = EggConfig()
            else:
                supplier = self.resolve_file(self.locate(mask, path), chain)
            changes[section] = getattr(supplier, section)
        return attrs.evolve(parent, **changes)

    def locate(self, ref: str, referrer: Path | None) -> Path:
        where = str(referrer) if referrer else "<config>"
        if ref.startswith(("./", "../", "/", "~/")) or ref in (".", ".."):
            target = Path(expand_user(ref, self.home))
            if not target.is_absolute():
                target = (referrer.parent if referrer else Path.cwd()) / target
        else:
            if "/" in ref or ref.startswith(".") or "\\" in ref:
                raise ConfigError(
                    f"{where}: base: {ref!r} is neither a base name nor a ./, ../ or / path"
                )
            target = self.bases / f"{ref}.yaml"
        if not observe.isfile(str(target)):
            raise ConfigError(f"{where}: base: {ref!r} not found (looked for {target})")
        return target


def resolve_config_file(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> tuple[EggConfig, tuple[Path, ...]]:
    """Load ``path`` and resolve its base chain; return the merged config and every file read."""
    resolver = _Resolver(os.environ if environ is None else environ)
    config = resolver.resolve_file(Path(path), ())
    return config, tuple(resolver.seen)


def resolve_config(
    config: EggConfig, path: Path | None = None, environ: Mapping[str, str] | None = None
) -> EggConfig:
    """Resolve the base chain of an already-loaded config (bases relative to ``path``)."""
    resolver = _Resolver(os.environ if environ is None else environ)
    if path is not None:
        resolver.seen.append(Path(os.path.abspath(path)))
    chain = (Path(os.path.abspath(path)),) if path else ()
    return resolver.resolve_loaded(config, path, chain)


def _empty(path: Path) -> bool:
    try:
        observe.content(str(path))  # its size is what counts
        return observe.isfile(str(path)) and path.stat().st_size == 0
    except OSError:
        return False


def discover_config(
    cwd: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResolvedConfig:
    """``--config PATH``, else ``./egg.yaml``, else ``$EGG_HOME/egg.yaml``, else the default.

    An empty (zero-byte) ``./egg.yaml`` counts as absent; write a comment to make a file that
    means "the built-in default, not my global config".
    """
    env = os.environ if environ is None else environ
    here = Path(cwd) if cwd is not None else Path.cwd()
    if config_path is not None:
        path = Path(config_path)
        if not path.is_absolute():
            path = here / path
        if not observe.exists(str(path)):
            raise ConfigError(f"{config_path}: no such config file")
        if observe.isdir(str(path)):
            raise ConfigError(f"{config_path}: is a directory, not a config file")
        config, files = resolve_config_file(path, env)
        return ResolvedConfig(config=config, path=path, files=files, origin="--config")
    for candidate, origin in (
        (here / "egg.yaml", "./egg.yaml"),
        (egg_home(env) / "egg.yaml", "$EGG_HOME/egg.yaml"),
    ):
        if origin == "./egg.yaml" and _empty(candidate):
            # The empty file a sandbox platform mounts in place of a missing ./egg.yaml (so the
            # sandbox cannot create one) may outlive a crashed session: it means "no file".
            continue
        if observe.isfile(str(candidate)):
            config, files = resolve_config_file(candidate, env)
            return ResolvedConfig(config=config, path=candidate, files=files, origin=origin)
    return ResolvedConfig(config=default_config(), path=None, files=(), origin=DEFAULT_SOURCE)
