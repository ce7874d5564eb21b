"""A host socket that vanishes between the scan and bubblewrap's mounts: the launch is prepared
again when one of the sandbox's socket-only mount points is gone, or was when bwrap tried it —
the churner may have bound it again under the same name by the time egg looks."""

from __future__ import annotations

from pathlib import Path

from egg_plugins.platforms.linux.fastrun import any_vanished, drop_vanished


def test_a_mount_point_gone_now_is_a_retry(tmp_path: Path) -> None:
    here = tmp_path / "here.sock"
    here.write_text("")
    assert not any_vanished([str(here)])
    assert any_vanished([str(here), str(tmp_path / "gone.sock")])


def test_a_mount_point_bwrap_failed_on_is_a_retry_even_if_it_is_back(tmp_path: Path) -> None:
    back = tmp_path / "x1444.sock"
    back.write_text("")  # bound again since
    said = f"bwrap: Can't create file at {back}: Read-only file system\n"
    assert any_vanished([str(back)], said)
    assert not any_vanished([str(back)], "bwrap: Can't find source path /elsewhere: No such file\n")
    assert not any_vanished([str(back)], f"something else mentions {back}\n")


def test_only_binds_onto_vanished_destinations_are_dropped(tmp_path: Path) -> None:
    here = tmp_path / "here.sock"
    here.write_text("")
    gone = str(tmp_path / "gone.sock")
    argv = ["bwrap", "--ro-bind", "/e", str(here), "--ro-bind", "/e", gone, "--", "true"]
    kept = drop_vanished(argv, {str(here), gone})
    assert kept == ["bwrap", "--ro-bind", "/e", str(here), "--", "true"]
