"""What a running command can reach: the environment and, lazily, the plugin manager."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from egg_core.plugins import EggPluginManager


class Context:
    """Per-invocation state. The plugin manager is built on first use, at most once."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        debug: bool = False,
        argv: Sequence[str] = (),
    ) -> None:
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.debug = debug
        #: the command line after ``egg`` (the exec cache keys on it)
        self.argv = tuple(argv)
        self._pm: EggPluginManager | None = None

    @property
    def pm(self) -> EggPluginManager:
        if self._pm is None:
            from egg_core.plugins import get_plugin_manager

            self._pm = get_plugin_manager(environ=self.environ)
        return self._pm

    def use_plugin_manager(self, pm: EggPluginManager) -> None:
        self._pm = pm
