"""Supervise a sandboxed command in the foreground: signals in, exit code out.

Shared by ``egg exec``'s full path (:mod:`egg_core.runner`) and its cached fast path, so it
imports nothing but the standard library's C-level modules.

With ``tty`` the command shares egg's terminal and process group, so the terminal's Ctrl-C and
Ctrl-\\ reach it directly and egg ignores them; otherwise egg forwards them. SIGTERM and SIGHUP are
always forwarded — to the command itself when the platform knows its pid (not to the sandbox's
monitor, which would tear the sandbox down instead of letting the command handle the signal).
"""

from __future__ import annotations

# The C module under ``signal``: ``signal`` itself imports enum, a few milliseconds that egg
# exec's fast path cannot spare. Same functions, plain integer constants.
import _signal as signal  # type: ignore[import-not-found,unused-ignore]
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeVar

    Started = TypeVar("Started")

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
SANDBOX_FAILED = 125
#: how many times a launch whose sandbox failed before the command started is prepared again,
#: when the platform says the cause came and went (a host socket removed during set-up). Under
#: tests/linux/test_socket_churn.py's churn (a socket removed every 10 ms) about 7 attempts in 10
#: fail (measured: 72 retries in 30 launches on 2 cores), so 16 attempts still lost a launch
#: now and then (0.7**16 ~ 0.3%, more under load); 64 make that ~1e-10. Each attempt is a fresh
#: prepare and a bwrap start, and none is made unless a mask's socket vanished.
MAX_ATTEMPTS = 64


class RetryLaunch(Exception):
    """The sandbox failed before the command started because something changed under it; the
    caller prepares the launch again (nothing of the command ran)."""


def setup_pipe() -> tuple[int, int]:
    """(read, write) ends for a sandbox's set-up errors (see ``Prepared.stderr_fd``)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    return read, write


def setup_errors(read: int) -> str:
    """Everything the sandbox wrote on its own stderr (the pipe's read end is closed)."""
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(read, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        os.close(read)
    return b"".join(chunks).decode(errors="replace")


def last_line(text: str) -> str:
    """The last non-empty line of what a sandbox said (its reason for failing)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def seal_descriptors(keep: Iterable[int]) -> None:
    """Mark every open descriptor above stderr close-on-exec, except ``keep`` (threat L).

    Only the descriptors egg means to pass may reach a sandbox: a caller's shell may hold
    anything open (``exec 7<"$HOME"`` in a script, a socket of its terminal multiplexer), and a
    directory descriptor inherited by the sandbox reads every file below it with ``openat``.
    ``subprocess`` closes them by itself; ``os.posix_spawn`` (the exec cache's fast path) and any
    other spawn do not, so that path calls this first (linux-ns's runner does it in one
    ``close_range`` call where the kernel has it, and calls this where not). It changes egg's
    own descriptor table only, never the caller's. (Standard descriptors that are directories
    never get this far: the interpreter refuses to start with one.)
    """
    kept = set(keep)
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: walk the possible range instead
        names = [str(fd) for fd in range(3, os.sysconf("SC_OPEN_MAX"))]
    for name in names:
        fd = int(name)
        if fd > 2 and fd not in kept:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                continue  # already closed (the listing's own descriptor)


def spawn_ignoring(spawn: Callable[[], Started], ignore: Iterable[int]) -> Started:
    """Run ``spawn`` (which starts the child and returns its pid, or what gives it) with
    ``ignore`` set to SIG_IGN, so the child inherits the ignored dispositions; egg's own
    handlers are restored after."""
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ignore}
    try:
        return spawn()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def supervise(
    pid: int,
    wait: Callable[[], int],
    *,
    tty: bool,
    command_pid: Callable[[], int | None] | None = None,
) -> int:
    """Forward signals to the command while ``wait()`` waits; return the wait's returncode."""
    forward = [signal.SIGTERM, signal.SIGHUP]
    if not tty:
        forward += [signal.SIGINT, signal.SIGQUIT]
    # the command's own pid is looked up when a signal first needs it, not before the wait:
    # finding it means polling until bwrap's init has forked it (up to 2 ms a launch, paid by
    # every command, mostly by ones that are never signalled)
    target: list[int] = []

    def relay(sig: int, _frame: object) -> None:
        if not target:
            found = command_pid() if command_pid is not None else None
            target.append(found or pid)
        try:
            os.kill(target[0], sig)
        except OSError:
            pass

    saved = {}
    for sig in FORWARDED:
        saved[sig] = signal.signal(sig, relay if sig in forward else signal.SIG_IGN)
    try:
        return wait()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def wait_pid(pid: int) -> int:
    """``os.waitpid`` until the child ends; the returncode convention of subprocess (-N: signal)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        return os.waitstatus_to_exitcode(status)


def report_exit(
    returncode: int,
    command_code: Callable[[int], int | None],
    exit_reason: Callable[[int], str | None],
    program: str,
    said: str = "",
) -> int:
    """The command's exit code, telling the user when the sandbox failed (with what it
    ``said``: its own last line) or a limit killed it."""
    code = command_code(returncode)
    if code is None:
        why = _visible(last_line(said) or f"{program} exited {returncode}")
        print(f"egg: error: the sandbox failed before the command started: {why}", file=sys.stderr)
        return SANDBOX_FAILED
    if said.strip():  # the sandbox warned after the command started: pass its lines on
        sys.stderr.write(_visible(said, multiline=True))
    reason = exit_reason(code)
    if reason:
        print(f"egg: {_visible(reason)}", file=sys.stderr)
    return code


def _visible(text: str, *, multiline: bool = False) -> str:
    """:func:`egg_core.sanitize.visible`, imported only when there is something to say."""
    from egg_core.sanitize import visible

    return visible(text, multiline=multiline)
