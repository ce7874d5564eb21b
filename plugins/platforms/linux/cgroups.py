"""Memory and process-count limits through cgroups (v2, or v1 where that is what the host has).

A limit the host cannot enforce is an EnforcementError naming the limit, the reason and the fix;
there is no silent fallback to a weaker mechanism. The sandboxed process joins its cgroups through
a ``/bin/sh`` one-liner that writes its own pid before exec'ing bwrap, so nothing of the sandbox
ever runs outside the limits.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import attrs

from egg_core import rundirs
from egg_core.errors import EnforcementError

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


def detect(root: Path = CGROUP_ROOT) -> CgroupSupport:
    """Probe the host: where egg could create memory and pids cgroups as this user."""
    parents: dict[str, Path] = {}
    problems: dict[str, str] = {}
    v1 = {c: root / c for c in ("memory", "pids") if (root / c / "cgroup.procs").exists()}
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
        for controller in ("memory", "pids"):
            if controller not in v1:
                problems[controller] = f"the cgroup v1 {controller} controller is not mounted"
        return CgroupSupport(1, parents, problems)
    if (root / "cgroup.controllers").exists():
        own = _v2_own_cgroup()
        base = own.parent if own is not None and own != root else root
        try:
            available = (base / "cgroup.subtree_control").read_text().split()
        except OSError:
            available = []
        for controller in ("memory", "pids"):
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
    return CgroupSupport(0, {}, {c: "no cgroup filesystem is mounted" for c in ("memory", "pids")})


@attrs.define
class Cgroup:
    """The cgroup directories of one sandbox, created by :func:`create`."""

    name: str
    version: int
    dirs: dict[str, Path]
    _oom_before: int = 0

    def join_prefix(self) -> list[str]:
        """``sh -c`` that moves itself into every cgroup, then execs the rest of argv."""
        writes = " && ".join(
            f"echo $$ > '{d}/cgroup.procs'" for d in dict.fromkeys(self.dirs.values())
        )
        return ["/bin/sh", "-c", f'{writes} && exec "$@"', "egg-cgroup-join"]

    def oom_kills(self) -> int:
        memory = self.dirs.get("memory")
        if memory is None:
            return 0
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def died_of_oom(self) -> bool:
        return self.oom_kills() > self._oom_before

    def destroy(self) -> None:
        for directory in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    pids = []
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


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
            if not owner.isdigit() or rundirs.alive(int(owner)):
                continue
            try:
                if (child / "cgroup.procs").read_text().strip():
                    continue
                child.rmdir()
            except OSError:
                continue
            removed.append(f"removed the empty cgroup {child} of a killed egg process")
    return removed


def create(name: str, memory_bytes: int | None, max_pids: int | None) -> Cgroup:
    """Create the cgroups for one sandbox, or raise EnforcementError naming what is missing."""
    wanted = {"memory": memory_bytes, "pids": max_pids}
    wanted = {k: v for k, v in wanted.items() if v is not None}
    support = detect()
    gaps = [
        f"resources.{'memory' if c == 'memory' else 'max_pids'} needs the {c} cgroup: "
        f"{support.problems[c]}"
        for c in wanted
        if c not in support.parents
    ]
    if gaps:
        raise EnforcementError(gaps, platform="linux-ns")
    dirs: dict[str, Path] = {}
    try:
        for controller in wanted:
            parent = support.parents[controller]
            parent.mkdir(exist_ok=True)
            directory = parent / (name if support.version == 1 else f"egg-{name}")
            directory.mkdir()
            dirs[controller] = directory
        group = Cgroup(name, support.version, dirs)
        if memory_bytes is not None:
            _limit_memory(dirs["memory"], memory_bytes, support.version)
        if max_pids is not None:
            (dirs["pids"] / "pids.max").write_text(str(max_pids))
        group._oom_before = group.oom_kills()
        return group
    except OSError as exc:
        Cgroup(name, support.version, dirs).destroy()
        raise EnforcementError(
            f"cannot set up cgroup limits: {exc.strerror} ({exc.filename})", platform="linux-ns"
        ) from exc


def _limit_memory(directory: Path, limit: int, version: int) -> None:
    if version == 1:
        (directory / "memory.limit_in_bytes").write_text(str(limit))
        swap = directory / "memory.memsw.limit_in_bytes"
        if swap.exists():  # memory + swap: otherwise the limit leaks into swap
            swap.write_text(str(limit))
    else:
        (directory / "memory.max").write_text(str(limit))
        swap = directory / "memory.swap.max"
        if swap.exists():
            swap.write_text("0")
