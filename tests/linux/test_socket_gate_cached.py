"""The socket gate on an exec cache hit, which loads the filters differently from the full path:
on a thread of egg's own that then starts bwrap with ``posix_spawn`` (no fork of egg; see
``socketgate.Gate.spawn_filtered``). Each test runs its command until a call is a hit and
asserts on that call: a host socket stays unreachable, the sandbox's own are reachable, no
process inside holds the listener, and the command's signal dispositions are the defaults.
Root and uid 65534."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.linux.conftest import Box, Identity, Listen, Result, until_cached
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


def _fd_kind(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def test_a_gate_closed_while_it_serves_lets_go_of_everything_once(tmp_path: Path) -> None:
    """``close`` does not wait for the gate's thread (a hit's last 0.4 ms): the thread, told to
    end, closes the listener, the wake-up pipe and the file it held of the sandbox's own socket
    itself. Nothing is closed twice: a second ``close`` leaves others' descriptors at the
    numbers the gate had alone, and the sandbox's next connect fails (the gate fails closed)."""
    import sys

    from egg_plugins.platforms.linux import gate_filter, socketgate

    own = str(tmp_path / "own.sock")
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    code = (
        "import os, socket, sys\n"
        f"s = socket.socket(socket.AF_UNIX); s.bind({own!r}); s.listen(4)\n"
        f"c = socket.socket(socket.AF_UNIX); c.connect({own!r})\n"  # its own: egg holds the file
        f"os.write({ready_write}, b'r'); os.read({go_read}, 1)\n"
        "d = socket.socket(socket.AF_UNIX)\n"
        f"try:\n    d.connect({own!r})\nexcept OSError as exc:\n"
        "    sys.exit(0 if exc.errno == 38 else exc.errno)\n"  # ENOSYS: no listener
        "sys.exit(99)"
    )
    gate = socketgate.Gate(gate_filter.programs(None), socketgate.Grants())

    def spawn() -> int:
        os.set_inheritable(go_read, True)
        os.set_inheritable(ready_write, True)
        return os.posix_spawn(sys.executable, [sys.executable, "-I", "-c", code], dict(os.environ))

    def holding_own() -> list[int]:
        return [int(fd) for fd in os.listdir("/proc/self/fd") if _fd_kind(int(fd)) == own]

    pid = gate.spawn_filtered(spawn)()
    assert os.read(ready_read, 1) == b"r"
    listener, wake, held = gate.listener, gate._wake_read, holding_own()
    null = os.open(os.devnull, os.O_RDONLY)  # (before the gate's numbers are free)
    assert listener is not None and "seccomp" in (_fd_kind(listener) or "")
    assert held, "egg holds no file of the sandbox's own socket"
    gate.close()
    deadline = time.monotonic() + 5
    while (_fd_kind(listener) or holding_own()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _fd_kind(listener) is None and _fd_kind(wake) is None and not holding_own()
    numbers = (listener, wake, *held)
    for number in numbers:  # others' descriptors at the numbers the gate had
        os.dup2(null, number)
    try:
        gate.close()
        assert {_fd_kind(number) for number in numbers} == {"/dev/null"}
    finally:
        for fd in (null, *numbers):
            os.close(fd)
    os.write(go_write, b"x")
    _, status = os.waitpid(pid, 0)
    for fd in (ready_read, ready_write, go_read, go_write):
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0


HOLD_HELPER = Path(__file__).with_name("hold_helper.py")
#: the helper's report of a command let go: it ran, only then, with egg's stderr as its own
LET_GO = {
    "exit": 0,
    "ran_before": False,
    "ran": True,
    "command_stderr": "command-stderr\n",
    "bwrap_said": "",
}
#: runs a cached plain launch with linux-ns's runner, its admission taking 0.5 s: what the
#: command wrote (the time it started) and when the admission said yes
SLOW_ADMISSION = """
import glob, json, os, time
from egg_core import execcache
from egg_plugins.platforms.linux import fastrun

directory = os.path.join(os.environ["EGG_HOME"], "cache", "exec")
entries = [execcache.load(p) for p in glob.glob(directory + "/*") if "." not in os.path.basename(p)]
entry = next(e for e in entries if e and e["runner"].endswith("fastrun:run"))
env = {name: os.environ[name] for name in entry["env_copy"] if name in os.environ}
env.update(entry["env_set"])

class Slow:
    said = 0.0
    def __call__(self):
        time.sleep(0.5)
        self.said = time.time()
        return True
    def failed_closed(self):
        pass

admit = Slow()
code = fastrun.run(entry, env, admit)
print(json.dumps({"code": code, "said": admit.said, "started": open("started").read()}))
"""


def test_a_hits_command_starts_only_once_its_admission_said_yes(box: Box) -> None:
    """linux-ns's runner starts bwrap before the hit's last checks and lets the command go once
    they said yes, however long they take (here 0.5 s, against bwrap's few milliseconds)."""
    hit_of(box, "sh", "-c", "date +%s.%N > started")
    (box.workspace / "started").unlink()

    result = box.run("-c", SLOW_ADMISSION, egg=sys.executable)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["code"] == 0
    assert float(report["started"]) > report["said"] > 0


@pytest.fixture
def work(identity: Identity, boxes_dir: Path) -> Path:
    """An empty directory the command held by the helper writes its mark in."""
    path = Path(tempfile.mkdtemp(prefix=f"hold-{identity.name}-", dir=boxes_dir))
    os.chown(path, identity.uid, identity.gid)
    return path


def hold(identity: Identity, work: Path, mode: str) -> dict[str, object]:
    """``tests/linux/hold_helper.py MODE WORK`` as ``identity``: its report. (Not isolated
    from PYTHONPATH: the mutation tier points it at a copy of egg with a check taken out.)"""
    result = subprocess.run(
        identity.wrap([sys.executable, str(HOLD_HELPER), mode, str(work)]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return report


def test_a_cached_command_starts_only_when_egg_lets_it_go(identity: Identity, work: Path) -> None:
    """A hit's bwrap is started before the last checks (the runner's ``admit``): the socket
    gate holds the command at bwrap's last step, its loading of the sandbox's filter, until
    egg lets it go, and gives it egg's stderr then (``Gate.release``). Held, nothing runs."""
    report = hold(identity, work, "lets-go")

    assert report == LET_GO


def test_egg_may_let_the_command_go_before_bwrap_holds_it(identity: Identity, work: Path) -> None:
    """egg's checks usually end before bwrap's set-up does: the release comes first, and the
    gate's own thread lets the command go when bwrap gets there (here its set-up waits for
    the helper 0.3 s), with the same stderr."""
    report = hold(identity, work, "early")

    assert report == LET_GO


def test_a_held_command_never_runs_when_egg_closes_the_gate(identity: Identity, work: Path) -> None:
    """egg said no (a fact changed) and let go of the gate without releasing the command: the
    kernel fails the held call, and bwrap ends without running it."""
    report = hold(identity, work, "closed")

    assert (report["ran_before"], report["ran"]) == (False, False)
    assert report["exit"] != 0
    assert report["command_stderr"] == ""


def test_a_held_command_never_runs_when_egg_is_killed(identity: Identity, work: Path) -> None:
    """egg killed (SIGKILL) while bwrap holds the command: the listener goes with it, the held
    call fails, and bwrap's --die-with-parent ends the sandbox. The command never runs, and
    nothing of the sandbox is left."""
    helper = subprocess.Popen(
        identity.wrap([sys.executable, str(HOLD_HELPER), "killed", str(work)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert helper.stdout is not None
        assert helper.stdout.readline() == "held\n", helper.stderr.read() if helper.stderr else ""
        helper.kill()
        helper.wait(timeout=10)
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()
    deadline = time.monotonic() + 10
    while processes_in(work) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)

    assert not processes_in(work)
    assert not (work / "ran").exists()


@pytest.mark.parametrize(
    ("shape", "runs"),
    [
        pytest.param("bound", True, id="bound"),
        pytest.param("ended", False, id="ended"),
        pytest.param("ended-later", False, id="ended-later"),
        pytest.param("unbound", False, id="unbound"),
    ],
)
def test_a_command_goes_only_with_a_pid_1_bound_to_a_running_bwrap(
    identity: Identity, work: Path, shape: str, runs: bool
) -> None:
    """The command's process is let go only once the sandbox's pid 1 — bwrap's child, seen so
    while bwrap ran — has loaded its filter, which bwrap's pid 1 does after it armed its
    parent-death signal (from then on nothing of the sandbox outlives bwrap), and only while
    bwrap runs. A stand-in for bwrap's processes (``hold_helper.STAND_IN``, which arms
    nothing) shows each case: a pid 1 that loaded its filter under a running "bwrap" (its
    command goes); a "bwrap" that ended first, as one a signal egg passed on could end while
    it set up (its pid 1, reparented, is bound to nothing: the command would run on its own);
    one that ended after its pid 1 loaded its filter (bwrap's pid 1 would die with it, the
    stand-in's does not: the check that bwrap runs is what holds it); a pid 1 that never
    loaded one."""
    report = hold(identity, work, f"stand-in-{shape}")

    assert report == {"held": True, "ran_before_close": runs, "ran": runs}


def test_a_held_launch_whose_bwrap_names_no_pid_1_is_ended_not_waited_on() -> None:
    """bwrap says which process is the sandbox's pid 1 before it lets it set anything up; when
    it has said nothing (ended, or not within the time allowed), nothing is let go, and egg
    ends the sandbox instead of waiting for a command that can never start."""
    from egg_plugins.platforms.linux import fastrun

    class Silent:
        def init_pid(self, timeout: float = 5.0) -> None:
            return None

    stand_in = subprocess.Popen(["sleep", "60"])
    started = time.monotonic()

    code = fastrun._go_then_wait(stand_in.pid, object(), Silent())  # type: ignore[arg-type]

    assert code == -signal.SIGKILL
    assert time.monotonic() - started < 5


def test_bwraps_word_on_pid_1_is_read_even_when_it_came_after_the_time_allowed() -> None:
    from egg_plugins.platforms.linux.status import StatusReader

    read, write = os.pipe()
    os.write(write, b'{ "child-pid": 4242 }\n')
    status = StatusReader(read)
    try:
        assert status.init_pid(timeout=0) == 4242
    finally:
        status.close()
        os.close(write)


def test_pids_are_not_looked_up_in_a_proc_of_another_pid_namespace() -> None:
    """egg's pids (bwrap's report, its children) name other processes in the /proc of another
    pid namespace: there egg looks nothing up by pid (a signal it passes on goes to bwrap, not
    to whatever process /proc/PID is), and says it cannot make a network's listeners."""
    probe = (
        "from egg_plugins.platforms.linux.status import proc_is_ours, parent_of, init_child\n"
        "import os\n"
        "print(proc_is_ours(), parent_of(os.getpid()), init_child(1, attempts=1))\n"
    )
    inside = subprocess.run(
        ["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
    )
    here = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)

    assert inside.stdout.split() == ["False", "None", "None"], inside.stderr
    assert here.stdout.split()[0] == "True", here.stderr
