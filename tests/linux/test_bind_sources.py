"""What egg decided to mount is what bwrap mounts: a directory swapped for a symlink between the
decision and bwrap's mounts is never followed (threat: another sandbox that can write a directory
on the way — a session in the parent workspace — races this launch).

The swap is made at the worst moment there is, deterministically: inside egg's own process,
right before the spawn (a ``sitecustomize`` wrapping ``Prepared.starting``), after every check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_plugins.platforms.linux import bindfds
from tests.linux.conftest import Box

SWAP = """\
import os
import egg_core.sandbox as sandbox
import egg_plugins.platforms.linux.placeholders as placeholders


def swap():
    if os.path.isdir({sub!r}) and not os.path.islink({sub!r}):
        os.rename({sub!r}, {sub!r} + ".orig")
        os.symlink({target!r}, {sub!r})


_starting = sandbox.Prepared.starting
_plant = placeholders.plant


def starting(self):  # the full path, and sessions
    swap()
    return _starting(self)


def plant(*args, **kwargs):  # the exec cache's fast path: right before its spawn
    swap()
    return _plant(*args, **kwargs)


sandbox.Prepared.starting = starting
placeholders.plant = plant
"""


def swapper(box: Box, sub: Path) -> dict[str, str]:
    """The environment that makes egg's process swap ``sub`` for a symlink that climbs to the
    root (``../../..``): bwrap resolving it would take the host's ``/`` as the source and the
    sandbox's ``/`` as the destination — the host's whole tree, writable."""
    directory = box.mkdir(box.root / "swapper")
    climb = os.path.relpath("/", sub.parent)
    (directory / "sitecustomize.py").write_text(SWAP.format(sub=str(sub), target=climb))
    os.chmod(directory / "sitecustomize.py", 0o644)
    return {"PYTHONPATH": str(directory)}


@pytest.mark.parametrize("cache", ["0", "1"])
def test_a_writable_directory_swapped_for_a_symlink_before_the_mount_is_never_followed(
    box: Box, cache: str
) -> None:
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")  # the host's, outside every rule: read-only
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})
    env = {"EGG_EXEC_CACHE": cache}
    if cache == "1":  # the swap lands on a cached launch: stored by a first run
        assert box.exec("true", env=env).returncode == 0
    env.update(swapper(box, sub))

    result = box.exec("sh", "-c", f"echo escaped > {target}/x", env=env)

    assert not (target / "x").exists(), "the sandbox wrote a host directory outside every rule"
    assert result.returncode == 125, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "changed while the sandbox was being set up" in result.stderr
    assert str(sub) in result.stderr


def test_a_session_whose_directory_is_swapped_before_the_mount_never_starts(box: Box) -> None:
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})

    result = box.run("run", "--", "sh", "-c", f"echo escaped > {target}/x", env=swapper(box, sub))

    assert not (target / "x").exists()
    assert "changed while the sandbox was being set up" in result.stdout + result.stderr
    assert result.returncode == 125, result.stdout + result.stderr


def test_a_try_bind_whose_source_is_gone_is_left_out_and_others_are_descriptors(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    gone = str(tmp_path / "gone")
    argv, fds = bindfds.pin(
        ["bwrap", "--ro-bind-try", gone, "/gone", "--bind", str(kept), "/k", "--", "--bind", "x"]
    )
    try:
        assert argv == ["bwrap", "--bind-fd", str(fds[0]), "/k", "--", "--bind", "x"]
        assert os.readlink(f"/proc/self/fd/{fds[0]}") == str(kept)
        assert all(fd >= bindfds.FD_FLOOR and os.get_inheritable(fd) for fd in fds)
    finally:
        for fd in fds:
            os.close(fd)


def test_a_source_reached_through_a_symlink_is_refused_and_nothing_stays_open(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    before = set(os.listdir("/proc/self/fd"))

    with pytest.raises(bindfds.SourceChanged, match="changed while the sandbox"):
        bindfds.pin(
            ["bwrap", "--ro-bind", str(real), "/a", "--bind", str(tmp_path / "link/x"), "/b"]
        )

    assert set(os.listdir("/proc/self/fd")) == before
