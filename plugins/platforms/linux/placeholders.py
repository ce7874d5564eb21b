"""Placeholders: what egg puts at a protected path that does not exist, for the length of a run.

A read-only mount keeps a file from being changed, but only a file that exists can be mounted
over. A protected path the sandbox could create (a missing ``./egg.yaml``, ``.git/commondir``,
``.git/hooks``) gets a placeholder: egg creates it on the host before the sandbox starts, bwrap
binds it read-only onto itself, and egg removes it afterwards if it still holds exactly what egg
put there. The content is the policy's *seed* (:attr:`egg_core.policy.FsEntry.seed`): the host
sees the placeholder too while the run lasts, so it must be harmless to whatever reads the path.

Several runs may share a placeholder (two ``egg exec`` in one workspace). Each holds a shared
``flock`` on a lock file named after the path for as long as it runs; only a run that can turn
that into an exclusive lock — no other run is using the placeholder — removes it. Removing it
under another run's feet would detach that run's mount and let its sandbox create the path.

Standard library only: the exec cache's fast path plants and removes placeholders too.
"""

from __future__ import annotations

import os

from egg_core.api.fast import DIRECTORY, holds_seed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

Held = tuple[str, str, int]


def plant(seeds: Iterable[Sequence[str]], lock_dir: str) -> list[Held]:
    """Create each missing ``(path, seed)`` (exclusively, never through a symlink), and hold a
    shared lock on each for the run. A path that already holds its seed (a placeholder another
    run planted, or one a crash left) is held the same way; one that holds anything else is left
    alone (the caller protects what is there)."""
    import fcntl

    held: list[Held] = []
    os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    for path, seed in seeds:
        fd = os.open(_lock_name(lock_dir, path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            _create(path, seed)
        except OSError:
            os.close(fd)
            continue
        held.append((path, seed, fd))
    return held


def remove(held: Iterable[Held]) -> None:
    """Remove each held placeholder that no other run holds and that still holds its seed."""
    import fcntl

    for path, seed, fd in held:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if holds_seed(path, seed):
                if seed == DIRECTORY:
                    os.rmdir(path)
                else:
                    os.unlink(path)
        except OSError:
            pass  # another run still uses it, or it is no longer ours: leave it
        finally:
            os.close(fd)


def _create(path: str, seed: str) -> None:
    try:
        if seed == DIRECTORY:
            os.mkdir(path, 0o755)
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return
    try:
        data = seed.encode()
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _lock_name(lock_dir: str, path: str) -> str:
    from egg_core.api.fast import sha256_hex  # the C module on every Python (3.12 renamed it)

    return os.path.join(lock_dir, sha256_hex(path.encode(errors="surrogateescape")))
