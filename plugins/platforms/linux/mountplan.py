"""The sandbox's mounts as data: each one a :class:`Mount`, in the order bwrap makes them, in a
:class:`MountPlan` that knows, as it grows, what each mount does to the host's path below it.

:mod:`.bwrap` computes the plan once and asks it (is this path already read-only? does a later
mount cover that one?) instead of rendering argv and parsing its own argv back; the argv is
rendered last (:meth:`MountPlan.args`). What reads argv after that is what reads a *recorded*
launch — a cached launch's recipe is its argv — at the spawn: :mod:`.bindfds` (the sources
pinned as descriptors) and :mod:`.vanishing`, where no plan exists any more.

What a mount does, as a host path sees it (:attr:`Mount.effect`): ``rw`` / ``ro`` when it binds
the host's own path onto itself, ``hidden`` when it puts something else there (a tmpfs, egg's own
directories, the empty file over a denied file, the sandbox's /dev and /proc), nothing for a
directory or a link made in the sandbox's own root or home layer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import attrs

from egg_core.api.platform import observe
from egg_core.api.platform import under as _under

#: bwrap's binds: writable, and whether a missing source is skipped instead of an error
_BINDS = {
    "--bind": (True, False),
    "--bind-try": (True, True),
    "--ro-bind": (False, False),
    "--ro-bind-try": (False, True),
}
#: what puts a file system of the sandbox's own at a path
_FILE_SYSTEMS = ("--tmpfs", "--dev", "--proc")

#: a mount's effect on the host path beneath it
Effect = str  # "rw" | "ro" | "hidden"


@attrs.frozen
class Mount:
    """One of bwrap's mount options: ``op`` at ``dest``, from ``source`` (a bind's host path, a
    symlink's target)."""

    op: str
    dest: str
    source: str | None = None

    @classmethod
    def bind(cls, source: str, dest: str, *, writable: bool, optional: bool = False) -> Mount:
        op = ("--bind" if writable else "--ro-bind") + ("-try" if optional else "")
        return cls(op, dest, source)

    @classmethod
    def same(cls, path: str, *, writable: bool, optional: bool = False) -> Mount:
        """The host's ``path`` bound onto itself."""
        return cls.bind(path, path, writable=writable, optional=optional)

    @classmethod
    def tmpfs(cls, dest: str) -> Mount:
        return cls("--tmpfs", dest)

    @classmethod
    def dir(cls, dest: str) -> Mount:
        return cls("--dir", dest)

    @classmethod
    def symlink(cls, target: str, dest: str) -> Mount:
        return cls("--symlink", dest, target)

    def args(self) -> list[str]:
        """As bwrap takes it."""
        if self.op in _BINDS or self.op == "--symlink":
            assert self.source is not None
            return [self.op, self.source, self.dest]
        return [self.op, self.dest]

    def effect(self, empty_file: str) -> Effect | None:
        """What the host path at :attr:`dest` becomes (None: this mount covers nothing)."""
        if self.op in _BINDS:
            writable, _ = _BINDS[self.op]
            if self.source == self.dest and self.source != empty_file:
                return "rw" if writable else "ro"
            return "hidden"
        if self.op in _FILE_SYSTEMS:
            return "hidden"
        if self.op in ("--dir", "--symlink"):
            return None
        raise ValueError(f"not a mount: {self.op}")


def read_args(args: Sequence[str]) -> list[Mount]:
    """Mounts back from bwrap's mount options (tests write plans as bwrap's command line)."""
    mounts: list[Mount] = []
    i = 0
    while i < len(args):
        op = args[i]
        if op in _BINDS or op == "--symlink":
            mounts.append(Mount(op, args[i + 2], args[i + 1]))
            i += 3
        elif op in (*_FILE_SYSTEMS, "--dir"):
            mounts.append(Mount(op, args[i + 1]))
            i += 2
        else:
            raise ValueError(f"not a mount argument: {op}")
    return mounts


Decisions = list[tuple[str, Effect]]


def decisions_of(mounts: Iterable[Mount], empty_file: str) -> Decisions:
    """``(path, effect)`` of each mount that covers something, in order."""
    return [(m.dest, e) for m in mounts if (e := m.effect(empty_file)) is not None]


class MountPlan:
    """The mounts so far, in order, and what they do (:attr:`decisions`, kept up to date)."""

    def __init__(self, empty_file: str) -> None:
        self.empty_file = empty_file
        self.mounts: list[Mount] = []
        self.decisions: Decisions = []

    def add(self, mounts: Iterable[Mount]) -> None:
        for mount in mounts:
            self.mounts.append(mount)
            effect = mount.effect(self.empty_file)
            if effect is not None:
                self.decisions.append((mount.dest, effect))

    def covered_after(self, path: str) -> bool:
        """Whether a mount made after the last one at ``path`` covers it: bwrap's
        ``--remount-ro`` of ``path`` would then fail."""
        decisions = self.decisions
        last = max((i for i, (root, _) in enumerate(decisions) if root == path), default=-1)
        return any(_under(path, root) for root, _ in decisions[last + 1 :])

    def already_read_only(self, real: str) -> bool:
        return already_read_only(self.decisions, real)

    def args(self) -> list[str]:
        """The plan as bwrap's mount options."""
        return [arg for mount in self.mounts for arg in mount.args()]


def already_read_only(decisions: Sequence[tuple[str, Effect]], real: str) -> bool:
    """Whether the host's tree at ``real`` is already what the sandbox sees there, read-only,
    after the mounts behind ``decisions``: the last mount at or above it is the host's own path
    bound read-only (the root, say), and nothing was mounted at or below ``real`` after it. A
    protection's own read-only bind would then change nothing but cost bwrap a mount (each
    reads the mount table again: about 0.2 ms). A mount beneath ``real`` made before the
    covering one is covered by it (bwrap binds the host's tree, not the sandbox's).

    Names alone do not settle "at or above": on a case-insensitive directory (ext4 or tmpfs
    casefold, vfat) ``rw:/mnt/x/Tools`` is the directory ``/mnt/x/tools/egg.yaml`` is in, and a
    host bind mount shows one directory under two names. So a writable mount that is, by device
    and inode, ``real`` or one of its directories keeps the protection, whatever its name."""
    if _reached_by_a_writable_mount(decisions, real):
        return False
    covering = max(
        (i for i, (path, _) in enumerate(decisions) if _under(real, path)),
        default=-1,
    )
    if covering < 0:
        return False
    if decisions[covering][1] != "ro":
        return False
    return not any(_under(later, real) for later, _ in decisions[covering + 1 :])


def _reached_by_a_writable_mount(decisions: Sequence[tuple[str, Effect]], real: str) -> bool:
    """Whether a writable mount is ``real``, one of its directories, or below it, compared by
    what the paths are on the host (device, inode: observed, so the exec cache re-checks them)
    — a protection mounted after a writable mount below it covers that one too."""
    writable = [path for path, state in decisions if state == "rw"]
    if not writable:
        return False
    mine = _identities_up(real)
    if not mine:
        return False
    target = mine[0]
    return any(
        target in (theirs := _identities_up(path)) or (theirs and theirs[0] in mine)
        for path in writable
    )


def _identities_up(path: str) -> list[tuple[int, int]]:
    """(device, inode) of ``path`` and of each directory above it, nearest first; empty when
    ``path`` itself is missing."""
    found = []
    current = path
    while True:
        st = observe.lstat_or_none(current)
        if st is None:
            if current == path:
                return []
        else:
            found.append((st.st_dev, st.st_ino))
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent
