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

from . import bindfds, gate_abi, gate_filter, placeholders, socketgate
from .status import StatusReader, parent_of

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
#: what Python itself ignores, put back to the defaults for the sandbox (as ``subprocess``
#: does on the full path): a command inside must die of SIGPIPE as it would outside
PYTHON_IGNORES = (13, 25)  # SIGPIPE, SIGXFSZ


def run(
    entry: dict[str, Any],
    env: dict[str, str],
    admit: Admission,
    inside: Callable[[int, int], str | None] | None = None,
) -> int | None:
    """The command's exit code; None when the cached launch cannot run as it was cached (a
    filter file gone from the cache), its cgroups cannot be made or ``admit`` says no: the full
    path then prepares it again, and says why.

    bwrap is started at once, without the stderr shim (:func:`_held`): it sets the sandbox up
    while ``admit()`` (:func:`egg_core.cachedrun.admit_run`, the rest of the hit's work) runs
    on the other core, and the socket gate holds the command at bwrap's last step until egg
    lets it go, giving it egg's stderr then (:meth:`.socketgate.Gate.release`). When ``admit``
    says no, or raises, the sandbox is killed before that: nothing of the command runs — nor
    when egg itself is killed meanwhile (the held call fails, and bwrap ends there). A launch
    that fails closed before it can ask (a bind's source swapped, the filters refused) tells
    ``admit.failed_closed()`` before it says why.

    ``inside`` (the network's runner: :mod:`.fastnet`) is given the sandbox's pid 1 and bwrap's
    before ``admit`` is asked; when it says why it could not do its part, the sandbox is killed, the
    miss is said, and the full path prepares the launch again."""
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
        return _spawn_and_supervise(entry, env, programs, group, admit, inside)
    finally:
        placeholders.remove(held)
        if group is not None:
            group.close()


def _held(argv: list[str], bwrap: str) -> list[str] | None:
    """``argv`` to run with its command held at bwrap's loading of the sandbox's filter
    (:class:`.socketgate.Gate`): without the stderr shim (:data:`STDERR_SHIM`) right after
    bwrap's ``--`` (the command is given egg's stderr as it is let go). None when there is
    nothing to hold the command at, or nothing binds it to bwrap's life once held: no shim of
    egg's there, no filter given to bwrap, no ``--die-with-parent``, or no pid 1 of bwrap's
    own in the sandbox (no pid namespace, or the command run as pid 1), whose filter's loading
    tells that the command's process is bound. ``bwrap`` is the word of ``argv`` that runs
    bwrap (a wrapper may come first)."""
    try:
        found, end = bindfds.read_options(argv, bwrap)
    except bindfds.PinFailed:
        return None
    options = {argv[index] for index in found}
    if not {"--seccomp", "--die-with-parent"} <= options or "--as-pid-1" in options:
        return None
    if "--unshare-pid" not in options and "--unshare-all" not in options:
        return None
    size = len(STDERR_SHIM)
    if argv[end : end + 1] != ["--"] or tuple(argv[end + 1 : end + 1 + size]) != STDERR_SHIM:
        return None
    return [*argv[: end + 1], *argv[end + 1 + size :]]


def _started(
    admit: Admission | Callable[[], bool],
    waiter: Callable[[], int],
    passed: tuple[int, ...],
    status: StatusReader,
    inside: Callable[[int, int], str | None] | None = None,
) -> int | None:
    """The sandbox's pid; None when ``admit()`` said no. ``admit`` runs while the kernel loads
    bwrap and bwrap sets the sandbox up; ``waiter`` gives bwrap's pid (:class:`SpawnFailed`
    when the spawn failed: nothing started), after which the descriptors ``passed`` to it are
    closed here. With ``inside``, bwrap's pid comes first: ``inside`` is given the sandbox's
    pid 1 and bwrap's (it makes the network's listeners in its namespace; a reason when it
    could not, which ``admit.miss`` says), and ``admit`` runs after it. Letting the command go
    is the caller's, once egg passes signals on (:func:`_go_then_wait`). The sandbox is killed
    and waited for whenever the command must not start (``admit`` said no or raised,
    ``inside`` failed; see :func:`_kill`)."""
    if inside is not None:
        try:
            pid = waiter()
        except OSError:
            _close(*passed)
            return None  # nothing started, and nothing was admitted: the full path decides
        _close(*passed)
        try:
            init = status.init_pid()
            why = inside(init, pid) if init is not None else "bwrap made no sandbox in time"
            if why is not None:
                miss = getattr(admit, "miss", None)
                if miss is not None:
                    miss(why)
                allowed = False
            else:
                allowed = admit()
        except BaseException:
            _kill(pid, status)
            raise
        if allowed:
            return pid
        _kill(pid, status)
        return None
    try:
        allowed = admit()
    except BaseException:
        _abandon(waiter, passed, status)
        raise
    try:
        pid = waiter()
    except OSError as exc:
        _close(*passed)
        if not allowed:
            return None  # nothing started, and the full path decides again anyway
        raise SpawnFailed(exc) from exc
    _close(*passed)
    if allowed:
        return pid
    _kill(pid, status)
    return None


def _go_then_wait(pid: int, gate: socketgate.Gate | None, status: StatusReader) -> int:
    """Let the held command go (``gate``: None when it was not held), egg's stderr given to it
    as its own; then wait for bwrap: what :func:`supervise` waits in, so that egg passes a
    signal on to the command from the moment the command can start."""
    if gate is not None:
        try:
            init = status.init_pid()  # None: bwrap ended before it made the sandbox
            if init is None:  # (or it said nothing in time: nothing is let go then)
                return _kill(pid, status)
            gate.release(2, init)
        except BaseException:
            _kill(pid, status)
            raise
    return wait_pid(pid)


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


def _abandon(waiter: Callable[[], int], passed: tuple[int, ...], status: Any) -> None:
    """Make sure the sandbox never starts its command: killed, once spawned."""
    try:
        pid: int | None = waiter()
    except BaseException:
        pid = None
    _close(*passed)
    if pid is not None:
        _kill(pid, status)


def _kill(pid: int, status: StatusReader) -> int:
    """Kill a sandbox whose command has not been let go, and wait for bwrap. Its child (the
    sandbox's pid 1) too: until it has forked the command's process it is not bound to bwrap's
    life (``--die-with-parent`` holds from there on), and would set the sandbox up for nothing
    before its held call fails. bwrap reports that child before it lets it do anything;
    killing a pid namespace's first process ends all of it. It is killed only while it is
    bwrap's, still unreaped (a pid bwrap has reaped may be another process's now)."""
    init = status.init_pid()  # None: bwrap ended before it made one
    if init is not None and parent_of(init) == pid:
        try:
            os.kill(init, 9)  # SIGKILL
        except OSError:
            pass
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    return wait_pid(pid)


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _seal(keep: tuple[int, ...]) -> None:
    """What :func:`seal_descriptors` does (threat L: only ``keep``, inheritable all, and the
    standard descriptors may reach the sandbox), in one call where the kernel has it: every
    descriptor above stderr marked close-on-exec, then ``keep`` made inheritable again. Listing
    ``/proc/self/fd`` as :func:`seal_descriptors` does cost a hit 0.05 to 0.35 ms (the first
    listing in a process makes the kernel's entries for it). Where the call fails (a kernel
    before 5.11, a container's filter that refuses it), or says it did what it did not (a
    filter faking success: one of ``keep`` above stderr is still inheritable), or nothing
    could tell, the listing it is."""
    probe = next((fd for fd in keep if fd > 2), None)
    try:
        gate_abi.cloexec_from(3)
    except OSError:
        seal_descriptors(keep)
        return
    if probe is None or os.get_inheritable(probe):
        seal_descriptors(keep)
        return
    for fd in keep:
        os.set_inheritable(fd, True)


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
    inside: Callable[[int, int], str | None] | None,
) -> int | None:
    inner = entry["stderr_fd"]
    # nothing the spawn passes may sit where it puts the command's stderr (unheld: see below)
    seccomp_fd = away_from(os.open(entry["seccomp_file"], os.O_RDONLY), inner)
    os.set_inheritable(seccomp_fd, True)
    status_read, status_write = os.pipe()
    status_write = away_from(status_write, inner)
    os.set_inheritable(status_write, True)
    said_read, said_write = setup_pipe()
    said_write = away_from(said_write, inner)
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
            _close(seccomp_fd, status_read, status_write, said_read, said_write)
            # fails closed: deciding again now would take the swapped-in symlink for a rule's
            admit.failed_closed()
            line = f"egg: error: the sandbox failed before the command started: {exc.strerror}\n"
            os.write(2, line.encode())
            return SANDBOX_FAILED
    # bwrap's own stderr is a pipe (what it says while setting up); the command's is ours
    actions = [(os.POSIX_SPAWN_DUP2, said_write, 2)]
    held = _held(argv, entry["bwrap"])
    if held is None and inside is not None:  # its listeners must be there before the command
        _close(seccomp_fd, status_read, status_write, said_read, said_write, *bound)
        admit.miss("the network's listeners need the command held, and nothing holds it")
        return None
    if held is None:  # nothing to hold the command at: all is checked first, then it starts
        if not admit():
            _close(seccomp_fd, status_read, status_write, said_read, said_write, *bound)
            return None
        actions.insert(0, (os.POSIX_SPAWN_DUP2, 2, inner))  # the shim puts it back at 2
    else:
        argv = held
    if group is not None:
        argv = group.prefix() + argv
    grants = socketgate.Grants.from_json(entry["gate_grants"])
    gate = socketgate.Gate(programs, grants, hold=held is not None)
    # the child gets every inheritable descriptor: seal all but the ones bwrap needs
    _seal((seccomp_fd, status_write, *bound))

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
    status = None
    try:
        try:
            waiter = spawn_ignoring(start, ignores)
        except OSError as exc:  # the filters (the gate says why), or the spawn: nothing started
            _close(*passed)
            admit.failed_closed()
            return _cannot_start(
                gate.error or f"cannot start the sandbox: {_reason(exc)}", said_read
            )
        status = StatusReader(status_read)
        try:
            pid = _started(admit if held is not None else _yes, waiter, passed, status, inside)
        except SpawnFailed as exc:  # (admitted: the hit was said)
            return _cannot_start(f"cannot start the sandbox: {_reason(exc.error)}", said_read)
        if pid is None:
            setup_errors(said_read)
            return None  # bwrap killed before the command could start: the full path decides
        if group is not None:
            group.started()
        returncode = supervise(
            pid,
            lambda: _go_then_wait(pid, gate if held is not None else None, status),
            tty=entry["tty"],
            command_pid=status.child_pid,
        )
        said = setup_errors(said_read)
        if held is not None and not said.strip() and status.exit_code(returncode) is None:
            # let go, then failed: its exec (bwrap said why on the stderr it was given)
            said = f"{argv[0]} could not run the command (its reason is on the line above)"
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
        if status is not None:
            status.close()
        else:
            os.close(status_read)
