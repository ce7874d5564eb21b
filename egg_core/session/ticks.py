"""The session's tick: each plugin's ``egg_session_tick`` called about every ``TICK_INTERVAL``
in a daemon thread of its own, never twice at once.

One thread per plugin, not one for all: a plugin that copies a 100 MiB transcript delays only
its own next look, never the git watcher's nor the relay's; one that never returns holds only its
thread, which does not keep the daemon from exiting (daemon threads). A plugin's implementation
is called through a hook caller of its own (pluggy's ``subset_hook_caller``), so the hook's
argument handling and wrappers are pluggy's as for any other call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

#: seconds between two ticks of one plugin
TICK_INTERVAL = 0.25

HOOK = "egg_session_tick"


def each_plugin(pm: Any, hook: str) -> list[tuple[str, Callable[..., Any]]]:
    """Each plugin's implementation of ``hook`` as a call of its own (pluggy's
    ``subset_hook_caller``: its argument handling and wrappers as for any call), so that one
    plugin's failure or slowness is its own, not every later plugin's."""
    plugins = pm.get_plugins()
    calls = []
    for impl in getattr(pm.hook, hook).get_hookimpls():
        others = [plugin for plugin in plugins if plugin is not impl.plugin]
        calls.append((impl.plugin_name, pm.subset_hook_caller(hook, remove_plugins=others)))
    return calls


class Ticker:
    """The ticks of one session: :meth:`start` once the command runs, :meth:`stop` when it has
    ended. ``arguments`` is asked at every tick (the session's record changes on a relaunch)."""

    def __init__(
        self,
        pm: Any,
        arguments: Callable[[], Mapping[str, Any]],
        log: Callable[[str], None],
        interval: float = TICK_INTERVAL,
    ) -> None:
        self._pm = pm
        self._arguments = arguments
        self._log = log
        self._interval = interval
        self._stopped = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for name, call in each_plugin(self._pm, HOOK):
            thread = threading.Thread(
                target=self._run, args=(name, call), name=f"egg-tick-{name}", daemon=True
            )
            self.threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """No tick starts after this; one running goes on to its end in its thread."""
        self._stopped.set()

    def _run(self, name: str, call: Callable[..., Any]) -> None:
        said: set[str] = set()
        while not self._stopped.wait(self._interval):
            try:
                call(**self._arguments())
            except Exception as exc:  # a plugin's bug must not end the session, nor its ticks
                line = f"plugin {name}: {HOOK} failed: {type(exc).__name__}: {exc}"
                if line not in said:
                    said.add(line)
                    self._log(line)
