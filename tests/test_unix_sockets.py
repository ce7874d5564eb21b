"""Which host sockets a sandbox would see, as egg works it out (the escapes are in tests/linux)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg_plugins.platforms.linux import unix_sockets as us

HEADER = "Num       RefCount Protocol Flags    Type St Inode Path\n"
TABLE = HEADER + (
    "0000000000000000: 00000002 00000000 00010000 0001 01 20001 /run/systemd/notify\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 20002 @/tmp/.X11-unix/X0\n"
    "0000000000000000: 00000003 00000000 00000000 0001 03 20003\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 20004 /home/me/My Apps/ipc socket\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 20005 relative.sock\n"
    "0000000000000000: 00000002 00000000 00010000 0005 01 20006 /run/systemd/notify\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 20007 /home/me/odd\x1cname\u2028.sock\n"
)


def row(path: str) -> str:
    return f"0000000000000000: 00000002 00000000 00010000 0001 01 1 {path}\n"


def test_the_table_gives_absolute_paths_once_with_their_spaces_and_odd_characters() -> None:
    assert us.parse_table(TABLE) == [
        "/run/systemd/notify",
        "/home/me/My Apps/ipc socket",
        "/home/me/odd\x1cname\u2028.sock",
    ]


def test_a_missing_table_is_none_not_an_error(tmp_path: Path) -> None:
    assert us.bound_paths(str(tmp_path / "absent")) is None
    assert us.visible_sockets((), 0, (), str(tmp_path / "absent")) is None


def test_the_last_mount_above_a_path_decides() -> None:
    decisions = [
        ("/", "ro"),
        ("/tmp", "hidden"),
        ("/tmp/work", "rw"),
        ("/var", "ro"),  # mounted after /var/tmp would have been: it shows the host's again
        ("/home/u/secret", "hidden"),
        ("/home/u/secret/proj", "rw"),
    ]

    assert us.shown("/tmp/work/x/y.sock", decisions)
    assert not us.shown("/tmp/other.sock", decisions)
    assert not us.shown("/home/u/secret/s.sock", decisions)
    assert us.shown("/home/u/secret/proj/a/s.sock", decisions)
    assert us.shown("/var/tmp/s.sock", decisions)
    assert us.shown("/tmpfoo/x.sock", decisions)  # a sibling name, not a child
    assert not us.shown("/home/u/s.sock", decisions[1:])  # nothing mounted there


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[list[Path]]:
    """Sockets bound at real paths under tmp_path."""
    made: list[socket.socket] = []
    paths: list[Path] = []

    def bind(relative: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        made.append(server)
        paths.append(path)
        return path

    bind("visible/a/b/c.sock")
    bind("hidden/d.sock")
    yield paths
    for server in made:
        server.close()


def shown_under(tmp_path: Path, *hidden: str) -> list[tuple[str, str]]:
    return [(str(tmp_path), "ro"), *((str(tmp_path / h), "hidden") for h in hidden)]


def test_decisions_are_made_on_resolved_paths(tmp_path: Path, listening: list[Path]) -> None:
    visible, hidden = listening
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "lnk").symlink_to(visible.parent)
    table = tmp_path / "unix"
    # bound through a symlink under a hidden tree, living in a shown one; and the other way round
    table.write_text(HEADER + row(f"{tmp_path}/tmp/lnk/c.sock") + row(str(hidden)))
    decisions = shown_under(tmp_path, "tmp", "hidden")

    found = us.visible_sockets(decisions, os.getuid(), (), str(table), "/nonexistent")

    assert found == (str(visible),)


def test_sockets_the_user_cannot_connect_to_are_left_alone(
    tmp_path: Path, listening: list[Path]
) -> None:
    visible, _ = listening
    table = tmp_path / "unix"
    table.write_text(HEADER + row(str(visible)))
    os.chmod(visible, 0o755)  # owner may write; group and others may not
    decisions = shown_under(tmp_path)
    other = os.getuid() + 12345

    assert us.visible_sockets(decisions, os.getuid(), (), str(table), "/nonexistent")
    assert us.visible_sockets(decisions, other, (), str(table), "/nonexistent") == ()
    os.chmod(visible, 0o757)
    found = us.visible_sockets(decisions, other, (), str(table), "/nonexistent")
    assert found == (str(visible),)


def test_a_socket_is_also_found_where_a_bind_mount_shows_it(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "30 20 8:1 /srv/data /mnt/alias\\040dir rw - ext4 /dev/sda1 rw\n"
        "31 20 0:40 / /tmp rw - tmpfs tmpfs rw\n"
    )
    table = us.mounts(str(mountinfo))
    devices = us.aliased_devices(table)

    assert devices == {"8:1"}
    assert us.aliases("/srv/data/a/s.sock", table, devices) == ["/mnt/alias dir/a/s.sock"]
    assert us.aliases("/mnt/alias dir/a/s.sock", table, devices) == ["/srv/data/a/s.sock"]
    assert us.aliases("/srv/other/s.sock", table, devices) == []
    assert us.aliases("/tmp/s.sock", table, devices) == []


def test_a_socket_bound_here_is_in_the_live_table(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "live.sock"
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert str(path) in (us.bound_paths() or [])
        found = us.visible_sockets([("/", "ro")], os.getuid(), tuple(os.getgroups()))
        assert found is not None and str(path) in found
