"""The kernel's table of bound unix sockets, as egg reads it (the escape tests are in tests/linux)."""

from __future__ import annotations

import socket
from pathlib import Path

from egg_core import unix_sockets

TABLE = """\
Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 20001 /run/systemd/notify
0000000000000000: 00000002 00000000 00010000 0001 01 20002 @/tmp/.X11-unix/X0
0000000000000000: 00000003 00000000 00000000 0001 03 20003
0000000000000000: 00000002 00000000 00010000 0001 01 20004 /home/me/My Apps/ipc socket
0000000000000000: 00000002 00000000 00010000 0001 01 20005 relative.sock
0000000000000000: 00000002 00000000 00010000 0005 01 20006 /run/systemd/notify
"""


def test_the_table_gives_absolute_paths_once_with_their_spaces() -> None:
    assert unix_sockets.parse_table(TABLE) == [
        "/run/systemd/notify",
        "/home/me/My Apps/ipc socket",
    ]


def test_a_missing_table_is_none_not_an_error(tmp_path: Path) -> None:
    assert unix_sockets.bound_paths(str(tmp_path / "absent")) is None
    assert unix_sockets.relevant(["/run"], str(tmp_path / "absent")) is None


def test_relevant_drops_excluded_trees_as_bound_and_as_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    table = tmp_path / "unix"
    paths = [f"{tmp_path}/link/a.sock", f"{tmp_path}/kept/b.sock", "/run/x.sock", "/runner/c"]
    rows = "".join(f"0: 00000002 00000000 00010000 0001 01 {n} {p}\n" for n, p in enumerate(paths))
    table.write_text(TABLE.splitlines()[0] + "\n" + rows)

    found = unix_sockets.relevant(["/run", str(real)], str(table))

    assert found == tuple(sorted([f"{tmp_path}/kept/b.sock", "/runner/c"]))


def test_a_socket_bound_here_is_in_the_live_table(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "live.sock"
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert str(path) in (unix_sockets.bound_paths() or [])
