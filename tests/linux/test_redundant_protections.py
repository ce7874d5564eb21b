"""egg's own read-only protections are left out of bwrap's command line where the sandbox
already sees the host's path read-only (each mount costs bwrap a read of the mount table) — and
only there: under a writable mount, a tmpfs, or with a writable mount beneath, they stay."""

from __future__ import annotations

import sys
from pathlib import Path

from egg_plugins.platforms.linux.bwrap import already_read_only, mount_decisions
from tests.linux.conftest import Box

EMPTY = "/run/egg/empty"


def decided(*mounts: str) -> list[tuple[str, str]]:
    return mount_decisions(list(mounts), EMPTY, [])


def test_a_path_under_the_read_only_root_needs_no_mount_of_its_own() -> None:
    assert already_read_only(decided("--ro-bind", "/", "/"), "/opt/venv")


def test_a_path_in_a_writable_mount_keeps_its_protection() -> None:
    plan = decided("--ro-bind", "/", "/", "--bind", "/work", "/work")
    assert not already_read_only(plan, "/work/venv")
    assert not already_read_only(plan, "/work")


def test_a_writable_mount_beneath_the_path_keeps_its_protection() -> None:
    """The protection's bind covers the writable one below it (bwrap binds the host's tree)."""
    plan = decided("--ro-bind", "/", "/", "--bind", "/opt/venv/lib", "/opt/venv/lib")
    assert not already_read_only(plan, "/opt/venv")
    assert not already_read_only(plan, "/opt")


def test_a_writable_mount_covered_by_a_later_read_only_one_is_covered() -> None:
    plan = decided("--bind", "/opt/venv/lib", "/opt/venv/lib", "--ro-bind", "/opt", "/opt")
    assert already_read_only(plan, "/opt/venv")


def test_a_path_under_a_tmpfs_or_another_source_keeps_its_protection() -> None:
    """There the protection's bind is what shows the host's path at all."""
    assert not already_read_only(decided("--ro-bind", "/", "/", "--tmpfs", "/tmp"), "/tmp/v")
    assert not already_read_only(
        decided("--ro-bind", "/", "/", "--ro-bind", "/srv/other", "/opt"), "/opt/venv"
    )
    assert not already_read_only(decided("--ro-bind", EMPTY, "/opt/f"), "/opt/f")


def test_without_a_covering_mount_the_protection_stays() -> None:
    assert not already_read_only(decided("--ro-bind-try", "/usr", "/usr"), "/opt/venv")


def test_the_prefix_of_a_name_is_not_its_parent() -> None:
    plan = decided("--ro-bind", "/", "/", "--bind", "/opt/venv-data", "/opt/venv-data")
    assert already_read_only(plan, "/opt/venv")


def test_egg_s_installation_stays_read_only_under_a_writable_rule_reached_by_a_symlink(
    box: Box,
) -> None:
    """``rw:`` a symlink to egg's own virtualenv: the rule binds the real directory writable,
    so the protection is not redundant there and must be mounted after it."""
    venv = Path(sys.prefix).resolve()
    link = box.root / "l1" / "venv-link"
    box.mkdir(link.parent)
    link.symlink_to(venv)
    probe = venv / f"sandbox_probe_{box.secret}"
    box.config({"fs": [f"rw:{link}"]})
    try:
        found = box.probe(f"report(write=attempt(write, {str(link / probe.name)!r}))")
        assert found["write"] in ("EROFS", "EACCES")
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)
