"""Where egg binds its unix sockets: any depth of ``$EGG_HOME``, again on a retried launch."""

from __future__ import annotations

from pathlib import Path

from egg_core.paths import bound_unix_socket, socket_fits


def test_a_socket_an_earlier_attempt_left_is_replaced_at_any_depth(tmp_path: Path) -> None:
    """A launch prepared again (a busy host's vanished socket) binds where the first one did."""
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    assert not socket_fits(deep / "proxy.sock")
    for where in (tmp_path / "proxy.sock", deep / "proxy.sock"):
        for _ in range(2):
            sock = bound_unix_socket(where)
            sock.listen(1)
            sock.close()
        assert where.is_socket()


def test_a_file_that_is_not_a_socket_is_never_removed(tmp_path: Path) -> None:
    kept = tmp_path / "proxy.sock"
    kept.write_text("not a socket")
    try:
        bound_unix_socket(kept).close()
    except OSError:
        pass
    assert kept.read_text() == "not a socket"
