"""``resources.cpu``: the whole sandbox's CPU time, held to its budget.

No kernel interface ends a cgroup at a total of CPU time (the cpu controller's quotas limit a
*rate*), so a watcher thread in the process that supervises the sandbox — ``egg exec``, its
cached fast path, or the session daemon — reads the cgroup's accounting (v1 ``cpuacct.usage``,
v2 ``cpu.stat`` ``usage_usec``: every process the sandbox ever had, ended ones included) and
kills every process of the sandbox once it reaches the budget.

Polling: the watcher sleeps for as long as the sandbox could not possibly spend what is left of
its budget — the remainder divided by the host's CPU count, between :data:`MIN_INTERVAL` and
:data:`MAX_INTERVAL` — so the overshoot is bounded by ``cpus x MIN_INTERVAL`` plus the time the
kill takes, and a long budget costs one read a second. RLIMIT_CPU a second past the budget stays
on every process as a backstop, should the watcher ever fail (one process alone can never use
more than the sandbox; see linux_ns.cpu_rlimit).

A sandbox killed for its budget exits :data:`EXIT_CODE` (128+SIGXCPU, what a CPU-time limit has
always meant, so the backstop's own SIGXCPU gives the same code) and egg says why in one line.
Only C-level standard modules are imported: this runs on the exec cache's fast path.
"""

from __future__ import annotations

import _thread
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Group(Protocol):
        """What a budget needs of the sandbox's cgroup (``cgrouprun.Group``): the CPU time of
        all its processes so far, and a way to kill them all."""

        def cpu_ns(self) -> int | None: ...

        def kill(self) -> None: ...


#: 128 + SIGXCPU
EXIT_CODE = 152
MIN_INTERVAL = 0.02
MAX_INTERVAL = 1.0
REASON = "killed by the CPU-time limit (resources.cpu)"


def describe(seconds: float) -> str:
    """CPU time used, to the millisecond: ``1.013 s``, ``1800.2 s``."""
    return f"{seconds:.3f} s" if seconds < 100 else f"{seconds:.1f} s"


class Budget:
    """Holds ``group`` to ``seconds`` of CPU time from :meth:`start` until :meth:`stop`."""

    def __init__(self, group: Group, seconds: float, cpus: int | None = None) -> None:
        self.group = group
        self.limit_ns = int(seconds * 1e9)
        self.cpus = cpus or os.cpu_count() or 1
        self.tripped = False
        self.used_ns = 0
        self._stop = _thread.allocate_lock()
        self._done = _thread.allocate_lock()
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._stop.acquire()
        self._done.acquire()
        _thread.start_new_thread(self._watch, ())

    def stop(self) -> None:
        """End the watch (idempotent) and wait for the watcher to be gone."""
        if not self._started:
            return
        self._started = False
        self._stop.release()
        if self._done.acquire(True, MAX_INTERVAL + 5):
            self._done.release()

    def interval(self, used_ns: int) -> float:
        """How long the sandbox cannot spend what is left, within the bounds."""
        left = (self.limit_ns - used_ns) / 1e9 / self.cpus
        return min(MAX_INTERVAL, max(MIN_INTERVAL, left))

    def check(self) -> bool:
        """Read the usage; past the budget, kill the whole sandbox. True once it tripped."""
        used = self.group.cpu_ns()
        if used is None:
            return False
        self.used_ns = used
        if used >= self.limit_ns:
            self.tripped = True
            self.group.kill()
            self.used_ns = self.group.cpu_ns() or used  # the total, now that nothing runs
        return self.tripped

    def _watch(self) -> None:
        try:
            while not self.check():
                if self._stop.acquire(True, self.interval(self.used_ns)):
                    self._stop.release()
                    return
        except Exception:  # a watcher that fails must not take egg down; RLIMIT_CPU remains
            pass
        finally:
            self._done.release()

    def reason(self) -> str:
        return (
            f"{REASON}: the sandbox used {describe(self.used_ns / 1e9)} of CPU time, "
            f"its budget is {self.limit_ns / 1e9:g} s"
        )
