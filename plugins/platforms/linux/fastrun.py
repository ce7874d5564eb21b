"""Run a cached linux-ns launch (see :mod:`egg_core.execcache`): open the seccomp filter, make the
status pipe, spawn bwrap under the socket gate, supervise, clean up. Standard library only."""

from __future__ import annotations

import fcntl
import os

from egg_core.api.fast import (
    SANDBOX_FAILED,
    report_exit,
    seal_descriptors,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
    wait_pid,
)

from . import bindfds, gate_filter, placeholders, socketgate
from .status import StatusReader

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from collections.abc import Callable
    from typing import Any

    from egg_core.api.fast import Admission

    from .cgrouprun import Running

SECCOMP_FD = "\0seccomp-fd"
STATUS_FD = "\0status-fd"
#: where the real stderr goes for the command inside (see STDERR_SHIM)
COMMAND_STDERR_FD = 9
#: run inside the sandbox first: the command's stderr back in place, then the command. A single
#: digit, as the shell's redirections need, and never one of the descriptors bwrap is told about
#: (see :func:`away_from`)
STDERR_SHIM = (
    "/bin/sh",
    "-c",
    f'exec 2>&{COMMAND_STDERR_FD} {COMMAND_STDERR_FD}>&-; exec "$@"',
    "egg-stderr",
)
#: where a cached launch's shim says it is ready, and reads egg's go-ahead
READY_FD, GO_FD = 7, 8
#: the shim of a cached launch: the same, once it has said it runs (a line on READY_FD: from
#: then on bwrap's --die-with-parent holds it, which it did not while bwrap set it up) and egg
#: has said go on GO_FD (a line); the end of the pipe without one — egg killed before it could
#: say — ends the sandbox there (125)
GATED_SHIM = (
    f"exec 2>&{COMMAND_STDERR_FD} {COMMAND_STDERR_FD}>&-; echo >&{READY_FD}; "
    f"exec {READY_FD}>&-; read -r go <&{GO_FD} || exit 125; exec {GO_FD}<&-; "
    'exec "$@"'
)
#: what Python itself ignores, put back to the defaults for the sandbox (as ``subprocess``
#: does on the full path): a command inside must die of SIGPIPE as it would outside
PYTHON_IGNORES = (13, 25)  # SIGPIPE, SIGXFSZ


def run(entry: dict[str, Any], env: dict[str, str], admit: Admission) -> int | None:
    """The command's exit code; None when the cached launch cannot run as it was cached (a
    filter file gone from the cache), its cgroups cannot be made or ``admit`` says no: the full
    path then prepares it again, and says why.

    bwrap is started at once: it sets the sandbox up, loads its filter and runs the shim
    (:data:`GATED_SHIM`), which waits for the line egg writes once ``admit()``
    (:func:`egg_core.cachedrun.admit_run`, the rest of the hit's work) has said yes, on the
    other core meanwhile. When it says no, or raises, the sandbox is killed and the pipe closed
    without that line: nothing of the command runs — nor when egg itself is killed meanwhile
    (the shim reads the pipe's end, and exits). A launch that fails closed before it can ask
    (a bind's source swapped, the filters refused) tells ``admit.failed_closed()`` before it
    says why."""
    programs = gate_filter.read_programs(entry["gate_programs"])
    if programs is None:
        return None
    spec = entry.get("cgroup")
    group = None
    if spec:  # imported only by launches with limits
        from . import cgrouprun

        try:
            group = cgrouprun.start(cgrouprun.new_name(), spec)
        except OSError:
            return None
    held = placeholders.plant(entry["placeholders"], entry["lock_dir"])
    try:
        return _spawn_and_supervise(entry, env, programs, group, admit)
    finally:
        placeholders.remove(held)
        if group is not None:
            group.close()


def _gated(argv: list[str]) -> list[str] | None:
    """``argv`` with its shim waiting for egg's go-ahead (:data:`GATED_SHIM`); None when it has
    no shim of egg's to gate."""
    for index in range(len(argv) - 3):
        if tuple(argv[index : index + 4]) == STDERR_SHIM:
            return [*argv[: index + 2], GATED_SHIM, *argv[index + 3 :]]
    return None


def _started(
    admit: Callable[[], bool],
    waiter: Callable[[], int],
    passed: tuple[int, ...],
    pipes: _GatePipes | None,
    status: StatusReader,
) -> int | None:
    """The sandbox's pid, its command let go; None when ``admit()`` said no. ``admit`` runs
    while the kernel loads bwrap and bwrap sets the sandbox up; ``waiter`` gives bwrap's pid
    (:class:`SpawnFailed` when the spawn failed: nothing started), after which the descriptors
    ``passed`` to it are closed here. The go-ahead is the caller's to give, once egg passes
    signals on (:func:`_go_then_wait`). The sandbox is killed and waited for before the go pipe
    is closed whenever the command must not start (``admit`` said no or raised): the shim
    would end it at the pipe's end anyway, this ends it at once (see :func:`_kill`)."""
    try:
        allowed = admit()
    except BaseException:
        _abandon(waiter, passed, pipes, status)
        raise
    try:
        pid = waiter()
    except OSError as exc:
        _close(*passed)
        if pipes is not None:
            pipes.close()
        if not allowed:
            return None  # nothing started, and the full path decides again anyway
        raise SpawnFailed(exc) from exc
    _close(*passed)
    if allowed or pipes is None:  # (no shim: admitted before the spawn)
        return pid if allowed else None
    _kill(pid, status)
    pipes.close()
    return None


def _go_then_wait(pid: int, pipes: _GatePipes | None, status: StatusReader) -> int:
    """Say go (once the shim runs), then wait for bwrap: what :func:`supervise` waits in, so
    that egg passes a signal on to the command from the moment the command can start."""
    if pipes is not None:
        try:
            pipes.go_when_ready(pid)
        except BaseException:
            _kill(pid, status)
            pipes.close()
            raise
    return wait_pid(pid)


class _GatePipes:
    """The shim's two pipes (:data:`GATED_SHIM`): it says it runs on one, egg says go on the
    other. Only their sandbox ends are passed (at READY_FD and GO_FD)."""

    def __init__(self, inner: int) -> None:
        self.ready_read, self.ready_write = os.pipe()
        self.go_read, self.go_write = os.pipe()
        self.ready_write = away_from(self.ready_write, inner, READY_FD, GO_FD)
        self.go_read = away_from(self.go_read, inner, READY_FD, GO_FD)
        self.open = [self.ready_read, self.go_write]

    def actions(self) -> list[tuple[int, int, int]]:
        return [
            (os.POSIX_SPAWN_DUP2, self.ready_write, READY_FD),
            (os.POSIX_SPAWN_DUP2, self.go_read, GO_FD),
        ]

    def passed(self) -> tuple[int, int]:
        return (self.ready_write, self.go_read)

    def go_when_ready(self, bwrap: int) -> None:
        """Wait for the shim's line (an end instead: bwrap ended before it ran, and its wait
        says how), then say go — while ``bwrap`` runs: the shim of a bwrap that has ended (a
        signal egg passed on ended it while it set up) is not bound to anything's life, and
        gets the pipe's end instead. The signals egg passes on are held meanwhile, so that none
        ends bwrap between the look and the go."""
        import _signal  # type: ignore[import-not-found,unused-ignore]

        while True:
            try:
                said = os.read(self.ready_read, 1)
                break
            except InterruptedError:
                continue
        if said:
            held = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT, _signal.SIGQUIT)
            mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, held)
            try:
                running = os.WEXITED | os.WNOHANG | os.WNOWAIT
                if os.waitid(os.P_PID, bwrap, running) is None:
                    os.write(self.go_write, b"go\n")
            except OSError:
                pass  # the sandbox has ended already: its wait says how
            finally:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
        self.close()

    def close(self) -> None:
        while self.open:
            os.close(self.open.pop())


def _yes() -> bool:
    return True


class SpawnFailed(Exception):
    """bwrap could not be started (``error``: why): nothing of the sandbox runs."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _cannot_start(why: str, said_read: int) -> int:
    """Say why the sandbox did not start (with what it said on its way), as egg's one line."""
    said = setup_errors(said_read).strip()
    os.write(2, f"egg: error: {why}{': ' + said if said else ''}\n".encode())
    return SANDBOX_FAILED


def _abandon(
    waiter: Callable[[], int], passed: tuple[int, ...], pipes: _GatePipes | None, status: Any
) -> None:
    """Make sure the sandbox never starts its command: killed (once spawned) before the go
    pipe is closed."""
    try:
        pid: int | None = waiter()
    except BaseException:
        pid = None
    _close(*passed)
    if pid is not None:
        _kill(pid, status)
    if pipes is not None:
        pipes.close()


def _kill(pid: int, status: StatusReader) -> None:
    """Kill a sandbox whose command has not been let go, and wait for bwrap. Its child (the
    sandbox's pid 1) too: until it runs the shim it is not bound to bwrap's life
    (``--die-with-parent`` holds from there on), and would set the sandbox up for nothing
    before the shim exits on the pipe's end. bwrap reports that child before it lets it do
    anything; killing a pid namespace's first process ends all of it. It is killed only while
    it is bwrap's, still unreaped (a pid bwrap has reaped may be another process's now)."""
    init = status.init_pid()  # None: bwrap ended before it made one
    if init is not None and _parent_of(init) == pid:
        try:
            os.kill(init, 9)  # SIGKILL
        except OSError:
            pass
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    wait_pid(pid)


def _parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (field 4 of /proc/PID/stat); None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return int(data[data.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def away_from(fd: int, *taken: int) -> int:
    """``fd``, renumbered if it is one of ``taken`` (the spawn puts something else there)."""
    if fd not in taken:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, max(taken) + 1)
    os.set_inheritable(moved, os.get_inheritable(fd))
    os.close(fd)
    return moved


def _spawn_and_supervise(
    entry: dict[str, Any],
    env: dict[str, str],
    programs: list[bytes],
    group: Running | None,
    admit: Admission,
) -> int | None:
    inner = entry["stderr_fd"]
    # nothing the spawn passes may sit where it puts the command's stderr or the go-ahead
    seccomp_fd = away_from(os.open(entry["seccomp_file"], os.O_RDONLY), inner, READY_FD, GO_FD)
    os.set_inheritable(seccomp_fd, True)
    status_read, status_write = os.pipe()
    status_write = away_from(status_write, inner, READY_FD, GO_FD)
    os.set_inheritable(status_write, True)
    said_read, said_write = setup_pipe()
    said_write = away_from(said_write, inner, READY_FD, GO_FD)
    table = {SECCOMP_FD: str(seccomp_fd), STATUS_FD: str(status_write)}
    masks = entry.get("masks", ())
    argv = [table.get(arg, arg) for arg in entry["argv"]]
    if masks:  # a masked file gone by now is not mounted over (see linux.vanishing)
        from . import vanishing

        argv = vanishing.drop_vanished(argv, masks, entry["empty_file"], entry["bwrap"])
    bound: list[int] = []
    if entry["bind_fds"]:  # what was decided is what is mounted (see linux.bindfds)
        try:
            argv, bound = bindfds.pin(argv, entry["bwrap"])
        except bindfds.PinFailed as exc:
            for fd in (seccomp_fd, status_read, status_write, said_read, said_write):
                os.close(fd)
            # fails closed: deciding again now would take the swapped-in symlink for a rule's
            admit.failed_closed()
            line = f"egg: error: the sandbox failed before the command started: {exc.strerror}\n"
            os.write(2, line.encode())
            return SANDBOX_FAILED
    gated = _gated(argv)
    gate_pipes = None
    if gated is None:  # no shim to wait in: all is checked first, then the sandbox started
        if not admit():
            for fd in (seccomp_fd, status_read, status_write, said_read, said_write, *bound):
                os.close(fd)
            return None
    else:
        argv, gate_pipes = gated, _GatePipes(inner)
    if group is not None:
        argv = group.prefix() + argv
    status = StatusReader(status_read)
    gate = socketgate.Gate(programs, socketgate.Grants.from_json(entry["gate_grants"]))
    # the child gets every inheritable descriptor: seal all but the ones bwrap needs
    seal_descriptors((seccomp_fd, status_write, *bound))
    # bwrap's own stderr is a pipe (what it says while setting up); the command's is ours
    actions = [(os.POSIX_SPAWN_DUP2, 2, inner), (os.POSIX_SPAWN_DUP2, said_write, 2)]
    if gate_pipes is not None:
        actions += gate_pipes.actions()

    def spawn() -> int:
        if entry["process_group"]:  # a group of its own: see linux_ns._signal_defaults
            return os.posix_spawn(
                argv[0], argv, env, file_actions=actions, setsigdef=PYTHON_IGNORES, setpgroup=0
            )
        return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsigdef=PYTHON_IGNORES)

    ignores = entry["ignore_signals"]

    def start() -> Callable[[], int]:
        waiter = gate.spawn_filtered(spawn)
        if ignores:  # the dispositions egg set for the spawn hold until it is done
            waiter()
        return waiter

    passed = (status_write, seccomp_fd, said_write, *bound)
    if gate_pipes is not None:
        passed += gate_pipes.passed()
    try:
        try:
            waiter = spawn_ignoring(start, ignores)
        except OSError as exc:  # the filters (the gate says why), or the spawn: nothing started
            _close(*passed)
            if gate_pipes is not None:
                gate_pipes.close()
            admit.failed_closed()
            return _cannot_start(
                gate.error or f"cannot start the sandbox: {_reason(exc)}", said_read
            )
        try:
            pid = _started(
                admit if gate_pipes is not None else _yes, waiter, passed, gate_pipes, status
            )
        except SpawnFailed as exc:  # (admitted: the hit was said)
            return _cannot_start(f"cannot start the sandbox: {_reason(exc.error)}", said_read)
        if pid is None:
            setup_errors(said_read)
            return None  # bwrap killed before the command could start: the full path decides
        if group is not None:
            group.started()
        returncode = supervise(
            pid,
            lambda: _go_then_wait(pid, gate_pipes, status),
            tty=entry["tty"],
            command_pid=status.child_pid,
        )
        said = setup_errors(said_read)
        if status.exit_code(returncode) is None and masks:
            from . import vanishing

            if vanishing.any_vanished(masks, said):
                return None  # nothing of the command ran: the full path prepares it afresh
        reasons: dict[int, str] = entry["exit_reasons"]
        exit_code: Callable[[int], int | None] = status.exit_code
        reason: Callable[[int], str | None] = reasons.get
        if group is not None:
            exit_code, reason = group.explained(exit_code, reason)
        return report_exit(returncode, exit_code, reason, argv[0], said)
    finally:
        gate.close()
        status.close()
