"""The host's cgroups for egg's limits: memory, process count and the sandbox's CPU time.

Cgroup v2, or v1 where that is what the host has. A limit the host cannot enforce is an
EnforcementError naming the limit, the reason and the fix; there is no silent fallback to a
weaker mechanism (``resources.cpu_per_process`` is the per-process CPU limit a user may choose
instead of the sandbox's budget). A sandbox's own cgroups, once made, are
:mod:`.cgrouprun`'s: the sandboxed process joins them through a ``/bin/sh`` one-liner that
writes its own pid before exec'ing bwrap, so nothing of the sandbox ever runs outside them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from egg_core.api import EnforcementError
from egg_core.api.platform import process_alive

from .cgrouprun import Running
from .cgrouprun import start as start_group

CGROUP_ROOT = Path("/sys/fs/cgroup")


@attrs.frozen
class CgroupSupport:
    """What this host offers: ``version`` 1 or 2 (0: none), and a writable parent per controller."""

    version: int
    parents: dict[str, Path]  # controller -> the directory egg creates its cgroups under
    problems: dict[str, str]  # controller -> why it cannot be used, with the fix

    def describe(self) -> str:
        if not self.version:
            return "no cgroup filesystem"
        usable = ", ".join(sorted(self.parents)) or "none"
        return f"cgroup v{self.version}; usable controllers: {usable}"


def _v2_own_cgroup() -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hierarchy, _, path = line.partition("::")
            if hierarchy == "0":
                return CGROUP_ROOT / path.lstrip("/")
    except OSError:
        return None
    return None


#: controller -> the egg.yaml key that needs it
KEYS = {"memory": "resources.memory", "pids": "resources.max_pids", "cpu": "resources.cpu"}
#: controller -> the cgroup v1 hierarchy that provides it (CPU time is cpuacct's)
V1_HIERARCHY = {"memory": "memory", "pids": "pids", "cpu": "cpuacct"}


def detect(root: Path = CGROUP_ROOT) -> CgroupSupport:
    """Probe the host: where egg could create memory, pids and CPU-accounting cgroups as this
    user."""
    parents: dict[str, Path] = {}
    problems: dict[str, str] = {}
    v1 = {c: root / h for c, h in V1_HIERARCHY.items() if (root / h / "cgroup.procs").exists()}
    if v1:
        for controller, mount in v1.items():
            parent = mount / "egg"
            if os.access(parent if parent.exists() else mount, os.W_OK):
                parents[controller] = parent
            else:
                problems[controller] = (
                    f"{mount} is not writable by uid {os.getuid()} (run egg as root, or give "
                    "this user a delegated cgroup)"
                )
        for controller, hierarchy in V1_HIERARCHY.items():
            if controller not in v1:
                problems[controller] = f"the cgroup v1 {hierarchy} controller is not mounted"
        return CgroupSupport(1, parents, problems)
    if (root / "cgroup.controllers").exists():
        own = _v2_own_cgroup()
        base = own.parent if own is not None and own != root else root
        try:
            available = (base / "cgroup.subtree_control").read_text().split()
        except OSError:
            available = []
        # every v2 cgroup accounts its CPU time (cpu.stat), whatever controllers it has
        available.append("cpu")
        for controller in KEYS:
            if controller not in available:
                problems[controller] = (
                    f"cgroup v2 controller {controller!r} is not enabled for {base} (delegate "
                    "it, e.g. systemd-run --user --scope -p Delegate=yes egg ...)"
                )
            elif not os.access(base, os.W_OK):
                problems[controller] = f"{base} is not writable by uid {os.getuid()}"
            else:
                parents[controller] = base
        return CgroupSupport(2, parents, problems)
    return CgroupSupport(0, {}, {c: "no cgroup filesystem is mounted" for c in KEYS})


def sweep() -> list[str]:
    """Remove egg's cgroups whose creator is gone and that no process uses any more (a session
    daemon killed with -9 leaves them). A cgroup still in use is left alone; nothing raises."""
    removed = []
    for parent in dict.fromkeys(detect().parents.values()):
        try:
            children = [c for c in parent.iterdir() if c.is_dir()]
        except OSError:
            continue
        for child in children:
            owner = child.name.removeprefix("egg-").split("-")[0]
            if not owner.isdigit() or process_alive(int(owner)):
                continue
            try:
                if (child / "cgroup.procs").read_text().strip():
                    continue
                child.rmdir()
            except OSError:
                continue
            removed.append(f"removed the empty cgroup {child} of a killed egg process")
    return removed


def gaps(wanted: dict[str, Any], support: CgroupSupport | None = None) -> list[str]:
    """What of ``wanted`` (controller -> its limit, None: not asked) this host cannot give this
    user, one line per limit with the fix."""
    support = support or detect()
    found = []
    for controller, value in wanted.items():
        if value is None or controller in support.parents:
            continue
        hierarchy = V1_HIERARCHY[controller] if support.version == 1 else controller
        line = f"{KEYS[controller]} needs the {hierarchy} cgroup: {support.problems[controller]}"
        if controller == "cpu":
            line += "; or limit each process instead with resources.cpu_per_process"
        found.append(line)
    return found


def spec(
    memory_bytes: int | None, max_pids: int | None, cpu_seconds: float | None
) -> dict[str, Any]:
    """The cgroups a sandbox with these limits needs (see :mod:`.cgrouprun`), or raise
    EnforcementError naming what this host does not give this user."""
    wanted = {"memory": memory_bytes, "pids": max_pids, "cpu": cpu_seconds}
    support = detect()
    missing = gaps(wanted, support)
    if missing:
        raise EnforcementError(missing, platform="linux-ns")
    return {
        "version": support.version,
        "parents": {c: str(support.parents[c]) for c, v in wanted.items() if v is not None},
        "memory": memory_bytes,
        "pids": max_pids,
        "cpu": cpu_seconds,
    }


def create(name: str, wanted: dict[str, Any]) -> Running:
    """Create the cgroups of ``wanted`` (a :func:`spec`) for one sandbox, or raise
    EnforcementError naming what failed."""
    try:
        return start_group(name, wanted)
    except OSError as exc:
        raise EnforcementError(
            f"cannot set up cgroup limits: {exc.strerror} ({exc.filename})", platform="linux-ns"
        ) from exc
