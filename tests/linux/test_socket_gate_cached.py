"""The socket gate on an exec cache hit, which loads the filters differently from the full path:
on a thread of egg's own that then starts bwrap with ``posix_spawn`` (no fork of egg; see
``socketgate.Gate.spawn_filtered``). Each test runs its command until a call is a hit and
asserts on that call: a host socket stays unreachable, the sandbox's own are reachable, no
process inside holds the listener, and the command's signal dispositions are the defaults.
Root and uid 65534."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.linux.conftest import Box, Listen, Result, until_cached
from tests.linux.test_exec_signals import ignored
from tests.linux.test_socket_gate import LISTENER_HELD
from tests.test_exec_cache import processes_in

HIT = "egg: exec cache hit"
DEBUG = {"EGG_EXEC_CACHE": "debug"}


def hit_of(box: Box, *command: str) -> Result:
    """The first run of ``egg exec -- COMMAND`` that the cache answered."""
    runs = until_cached(lambda: box.exec(*command, env=DEBUG))
    assert HIT in runs[-1].stderr.splitlines(), [run.stderr for run in runs]
    return runs[-1]


def probe_hit(box: Box, code: str) -> object:
    from tests.linux.conftest import PRELUDE, PY

    result = hit_of(box, PY, "-I", "-c", PRELUDE + code)
    assert result.returncode == 0, result.stderr
    return result.json()


def test_a_host_socket_is_unreachable_on_a_hit(box: Box, listen: Listen) -> None:
    path = box.root / "host.sock"
    server = listen(socket.AF_UNIX, str(path))
    path.chmod(0o777)

    found = probe_hit(box, f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))")

    assert found == {"connect": "EACCES"}
    assert server.received_nothing()


def test_the_sandboxs_own_sockets_are_reachable_on_a_hit(box: Box) -> None:
    found = probe_hit(
        box,
        "import threading, tempfile\n"
        "path = tempfile.mktemp(dir='.', suffix='.sock')\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(1)\n"
        "def serve():\n"
        "    c, _ = s.accept(); c.sendall(b'pong'); c.close()\n"
        "threading.Thread(target=serve, daemon=True).start()\n"
        "def ask():\n"
        "    c = socket.socket(socket.AF_UNIX); c.connect(path)\n"
        "    if c.recv(4) != b'pong': raise OSError(0, 'no answer')\n"
        "report(own=attempt(ask))",
    )

    assert found == {"own": "ok"}


def test_no_process_of_the_sandbox_holds_the_listener_on_a_hit(box: Box) -> None:
    found = probe_hit(box, LISTENER_HELD)

    assert found == {"held": []}


def test_a_hit_starts_the_command_with_the_default_dispositions(box: Box) -> None:
    """What Python ignores itself (SIGPIPE, SIGXFSZ) is put back, as ``subprocess`` does on
    the full path: ``yes | head`` ends quietly instead of ``yes`` failing on a broken pipe.
    (glibc's ``posix_spawn`` leaves its two internal signals, 32 and 33, ignored in what it
    starts, as Python's own ``subprocess`` does with it; no glibc program can change them, and
    glibc installs its own handlers for them when it uses them.)"""
    status = hit_of(box, "sh", "-c", "exec cat /proc/self/status")
    piped = hit_of(box, "sh", "-c", "yes | head -c1")

    assert not ignored(status.stdout) & set(range(1, 32)), status.stdout
    assert signal.SIGPIPE not in ignored(status.stdout)
    assert (piped.returncode, piped.stdout) == (0, "y"), piped.stderr
    assert "Broken pipe" not in piped.stderr


def test_what_spawn_filtered_starts_outlives_the_thread_that_started_it() -> None:
    """bwrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) takes the thread that started it
    for its parent: that thread must live until the sandbox has ended, or the kernel kills the
    sandbox (137) as the thread ends. The child here sets the signal before ``spawn`` returns,
    as bwrap may, so a thread that ended on return would kill it every time."""
    import sys

    from egg_plugins.platforms.linux import gate_filter, socketgate

    ready_read, ready_write = os.pipe()
    code = (
        "import ctypes, os, time; ctypes.CDLL(None).prctl(1, 9)\n"  # PR_SET_PDEATHSIG, SIGKILL
        f"os.write({ready_write}, b'x'); time.sleep(0.3)"
    )
    gate = socketgate.Gate(gate_filter.programs(None), socketgate.Grants())

    def spawn() -> int:
        os.set_inheritable(ready_write, True)
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-c", code], dict(os.environ))
        assert os.read(ready_read, 1) == b"x"  # its parent-death signal is set
        return pid

    try:
        pid = gate.spawn_filtered(spawn)()
        _, status = os.waitpid(pid, 0)
    finally:
        gate.close()
        os.close(ready_read)
        os.close(ready_write)

    assert os.waitstatus_to_exitcode(status) == 0


def _gated_sandbox(tmp_path: Path, marker: Path, before: str = "") -> tuple[int, int, int]:
    """bwrap running ``touch MARKER`` behind the cached launch's shim (``fastrun.GATED_SHIM``),
    after ``before`` (shell) has run in the sandbox: (pid, ready read end, go write end)."""
    import shutil

    from egg_plugins.platforms.linux import fastrun

    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    bwrap = shutil.which("bwrap") or "bwrap"
    argv = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--bind",
        str(tmp_path),
        str(tmp_path),
        "--unshare-all",
        "--die-with-parent",
        "--",
        *(["/bin/sh", "-c", f'{before}; exec "$@"', "before"] if before else []),
        *fastrun.STDERR_SHIM[:2],
        fastrun.GATED_SHIM,
        *fastrun.STDERR_SHIM[3:],
        "/bin/sh",
        "-c",
        f"touch {marker}",
    ]
    actions = [
        (os.POSIX_SPAWN_DUP2, 2, fastrun.COMMAND_STDERR_FD),
        (os.POSIX_SPAWN_DUP2, ready_write, fastrun.READY_FD),
        (os.POSIX_SPAWN_DUP2, go_read, fastrun.GO_FD),
    ]
    pid = os.posix_spawn(bwrap, argv, {}, file_actions=actions)
    os.close(ready_write)
    os.close(go_read)
    return pid, ready_read, go_write


@pytest.mark.parametrize("egg", ["says-go", "is-gone"])
def test_a_cached_command_starts_only_on_eggs_go_ahead(tmp_path: Path, egg: str) -> None:
    """A hit's bwrap is started before the last checks (the runner's ``admit``), its command
    held in the shim (``fastrun.GATED_SHIM``) until egg writes its go-ahead. When egg cannot —
    it was killed meanwhile, so the pipe just ends — the shim ends the sandbox (125) and the
    command never runs."""
    marker = tmp_path / "ran"
    pid, ready, go = _gated_sandbox(tmp_path, marker)
    assert os.read(ready, 1) == b"\n"  # the shim runs, and waits
    os.close(ready)
    if egg == "says-go":
        os.write(go, b"go\n")
    os.close(go)
    _, status = os.waitpid(pid, 0)

    if egg == "says-go":
        assert (os.waitstatus_to_exitcode(status), marker.exists()) == (0, True)
    else:
        assert (os.waitstatus_to_exitcode(status), marker.exists()) == (125, False)
    assert not processes_in(tmp_path)


def test_egg_says_go_only_once_the_shim_runs(tmp_path: Path) -> None:
    """Until the shim runs, the sandbox is not bound to bwrap's life (its first process arms
    --die-with-parent just before): a go-ahead written before then would be read by a sandbox
    that outlives a killed egg. So egg waits for the shim's line (here 0.5 s late) first."""
    from egg_plugins.platforms.linux import fastrun

    marker = tmp_path / "ran"
    pid, ready, go = _gated_sandbox(tmp_path, marker, before="sleep 0.5")
    pipes = fastrun._GatePipes.__new__(fastrun._GatePipes)
    pipes.ready_read, pipes.go_write, pipes.open = ready, go, [ready, go]
    started = time.monotonic()
    pipes.go_when_ready(pid)
    waited = time.monotonic() - started
    _, status = os.waitpid(pid, 0)

    assert waited >= 0.4
    assert (os.waitstatus_to_exitcode(status), marker.exists()) == (0, True)


def test_no_go_ahead_for_the_shim_of_a_bwrap_that_has_ended(tmp_path: Path) -> None:
    """A signal egg passes on while bwrap sets the sandbox up may end bwrap before its child
    is bound to anything (that child arms --die-with-parent just before the shim): the shim
    would then run on its own. egg looks that bwrap still runs before it says go; here the
    "bwrap" has ended, and the shim gets the pipe's end."""
    from egg_plugins.platforms.linux import fastrun

    marker = tmp_path / "ran"
    ended = os.posix_spawn("/bin/true", ["true"], {})
    time.sleep(0.2)  # it has ended, unreaped
    pipes = fastrun._GatePipes(fastrun.COMMAND_STDERR_FD)
    shim = f"{fastrun.GATED_SHIM.replace('exec 2>&9 9>&-; ', '')}"
    actions = [
        (os.POSIX_SPAWN_DUP2, pipes.ready_write, fastrun.READY_FD),
        (os.POSIX_SPAWN_DUP2, pipes.go_read, fastrun.GO_FD),
    ]
    argv = ["/bin/sh", "-c", shim, "egg-stderr", "/bin/sh", "-c", f"touch {marker}"]
    alone = os.posix_spawn("/bin/sh", argv, {}, file_actions=actions)
    os.close(pipes.ready_write)
    os.close(pipes.go_read)

    pipes.go_when_ready(ended)
    _, status = os.waitpid(alone, 0)
    os.waitpid(ended, 0)

    assert (os.waitstatus_to_exitcode(status), marker.exists()) == (125, False)
