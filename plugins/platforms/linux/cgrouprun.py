"""One sandbox's cgroups while it runs: made, limited, joined, watched, killed and removed.

Both launch paths run a sandbox's cgroups through this module — the full one
(:func:`egg_plugins.platforms.linux.cgroups.create` checks the host first and turns a failure
into an EnforcementError) and ``egg exec``'s cached one (:mod:`.fastrun`, where a failure sends
the launch back to the full path, which then says why) — so a cached launch holds exactly the
limits a full one holds. A launch describes its cgroups with a *spec*, plain data that the exec
cache stores: ``{"version": 1 or 2, "parents": {controller: dir}, "memory": bytes, "pids": n,
"cpu": seconds}`` (controllers: ``memory``, ``pids``, ``cpu`` — on cgroup v1 the ``cpuacct``
hierarchy; on v2 every cgroup accounts its CPU time in ``cpu.stat``, no controller needed).

Only C-level standard modules are imported: this runs on the exec cache's fast path.
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found,unused-ignore]
import os
import time

from . import cpubudget

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Callable
    from typing import Any

#: how long :meth:`Group.kill` keeps sweeping a cgroup whose processes keep forking
KILL_DEADLINE = 5.0
OOM_REASON = "killed by the memory limit (resources.memory): out of memory"


class Group:
    """The cgroup directories of one sandbox (one per v1 hierarchy; v2 has one for all)."""

    def __init__(self, name: str, version: int, dirs: dict[str, str]) -> None:
        self.name = name
        self.version = version
        self.dirs = dirs
        self.oom_before = 0

    def join_prefix(self) -> list[str]:
        """``sh -c`` that moves itself into every cgroup, then execs the rest of argv: nothing
        of the sandbox ever runs outside its limits."""
        writes = " && ".join(f"echo $$ > '{d}/cgroup.procs'" for d in self.unique_dirs())
        return ["/bin/sh", "-c", f'{writes} && exec "$@"', "egg-cgroup-join"]

    def unique_dirs(self) -> list[str]:
        return list(dict.fromkeys(self.dirs.values()))

    def oom_kills(self) -> int:
        memory = self.dirs.get("memory")
        if memory is None:
            return 0
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        for line in _read(os.path.join(memory, name)).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                try:
                    return int(value)
                except ValueError:
                    return 0
        return 0

    def died_of_oom(self) -> bool:
        return self.oom_kills() > self.oom_before

    def cpu_ns(self) -> int | None:
        """CPU time every process of the sandbox has used so far (ns), ended ones included;
        None when it cannot be read (no cpu cgroup, or it is gone)."""
        directory = self.dirs.get("cpu")
        if directory is None:
            return None
        if self.version == 1:
            text = _read(os.path.join(directory, "cpuacct.usage")).strip()
            return int(text) if text.isdigit() else None
        for line in _read(os.path.join(directory, "cpu.stat")).splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec" and value.strip().isdigit():
                return int(value) * 1000
        return None

    def pids(self, directory: str) -> list[int]:
        return [int(p) for p in _read(os.path.join(directory, "cgroup.procs")).split()]

    def kill(self) -> None:
        """SIGKILL every process of the sandbox. cgroup v2's ``cgroup.kill`` does it in the
        kernel, forks included; otherwise (v1, or a kernel before 5.14) the cgroup is swept until
        it is empty: a process forked during a sweep is caught by the next, and killing the
        sandbox's pid-namespace init (bwrap's, listed with the rest) makes the kernel kill
        everything in that namespace at once."""
        directory = self.unique_dirs()[0]
        if self.version == 2:
            try:
                with open(os.path.join(directory, "cgroup.kill"), "w") as handle:
                    handle.write("1")
            except OSError:
                pass
        deadline = time.monotonic() + KILL_DEADLINE
        while time.monotonic() < deadline:
            found = self.pids(directory)
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.001)

    def destroy(self) -> None:
        """Kill what is left in the cgroups and remove them (idempotent)."""
        for directory in self.unique_dirs():
            for _ in range(50):
                for pid in self.pids(directory):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def make(name: str, spec: dict[str, Any]) -> Group:
    """Create and limit the cgroups ``spec`` asks for; OSError (with nothing left behind) when
    the host does not let this user."""
    version = int(spec["version"])
    dirs: dict[str, str] = {}
    try:
        for controller, parent in spec["parents"].items():
            os.makedirs(parent, exist_ok=True)
            directory = os.path.join(parent, name if version == 1 else f"egg-{name}")
            if directory not in dirs.values():
                os.mkdir(directory)
            dirs[controller] = directory
        group = Group(name, version, dirs)
        if spec.get("memory") is not None:
            _limit_memory(dirs["memory"], int(spec["memory"]), version)
        if spec.get("pids") is not None:
            _write(os.path.join(dirs["pids"], "pids.max"), str(spec["pids"]))
        if spec.get("cpu") is not None and group.cpu_ns() is None:
            raise OSError(2, "its CPU time cannot be read", dirs["cpu"])
        group.oom_before = group.oom_kills()
        return group
    except OSError:
        Group(name, version, dirs).destroy()
        raise


def _limit_memory(directory: str, limit: int, version: int) -> None:
    if version == 1:
        _write(os.path.join(directory, "memory.limit_in_bytes"), str(limit))
        swap = os.path.join(directory, "memory.memsw.limit_in_bytes")
        if os.path.exists(swap):  # memory + swap: otherwise the limit leaks into swap
            _write(swap, str(limit))
    else:
        _write(os.path.join(directory, "memory.max"), str(limit))
        swap = os.path.join(directory, "memory.swap.max")
        if os.path.exists(swap):
            _write(swap, "0")


class Running:
    """A sandbox's cgroups and its CPU budget, as a launch uses them: the argv prefix that
    joins them, the watcher started once the sandbox runs, why it died, and the teardown."""

    def __init__(self, group: Group, cpu_seconds: float | None) -> None:
        self.group = group
        self.budget = None if cpu_seconds is None else cpubudget.Budget(group, cpu_seconds)

    def prefix(self) -> list[str]:
        return self.group.join_prefix()

    def started(self) -> None:
        """The sandbox runs: start holding it to its CPU budget."""
        if self.budget is not None:
            self.budget.start()

    def exit_code(self, reader: Callable[[int], int | None]) -> Callable[[int], int | None]:
        """``reader`` (the spawned process's returncode -> the command's exit code), except
        that a sandbox egg killed for its CPU budget exits :data:`cpubudget.EXIT_CODE`."""
        budget = self.budget

        def code(returncode: int) -> int | None:
            found = reader(returncode)
            if budget is not None and budget.tripped:
                return cpubudget.EXIT_CODE
            return found

        return code

    def reason(self, code: int) -> str | None:
        """Why the sandbox died, when one of its cgroup limits killed it."""
        if self.budget is not None and self.budget.tripped:
            return self.budget.reason()
        if self.group.died_of_oom():
            return OOM_REASON
        return None

    def explained(
        self, reader: Callable[[int], int | None], reason: Callable[[int], str | None]
    ) -> tuple[Callable[[int], int | None], Callable[[int], str | None]]:
        """:meth:`exit_code` of ``reader``, and :meth:`reason` before ``reason``."""
        return self.exit_code(reader), lambda code: self.reason(code) or reason(code)

    def close(self) -> None:
        if self.budget is not None:
            self.budget.stop()
        self.group.destroy()


def start(name: str, spec: dict[str, Any]) -> Running:
    """:func:`make` the cgroups of ``spec`` as a :class:`Running` (OSError as there)."""
    return Running(make(name, spec), spec.get("cpu"))


def new_name() -> str:
    """A fresh cgroup name; it starts with the creating pid (see cgroups.sweep)."""
    return f"{os.getpid()}-{os.urandom(4).hex()}"


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, ValueError):
        return ""


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
