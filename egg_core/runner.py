"""Run a prepared launch in the foreground, as ``egg exec`` does: stdio passed through, the
command's exit code returned, every signal a user sends to egg passed on to the command."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import Any

from egg_core.errors import EggError
from egg_core.sandbox import Prepared
from egg_core.spawn import (
    SANDBOX_FAILED,
    RetryLaunch,
    report_exit,
    seal_descriptors,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
)


def popen_sandbox(prepared: Prepared, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start ``prepared`` with exactly its descriptors: ``pass_fds``, and — when the platform
    asks for it (``stderr_fd``) — the caller's stderr at that number, while the process's own
    stderr is what ``kwargs`` says. Everything else is closed at exec (threat L). The descriptor
    juggling happens in the child only: the caller's own descriptor table is left as it was."""
    keep = set(prepared.pass_fds)
    inner = prepared.stderr_fd
    real = os.dup(2) if inner is not None else None

    def child() -> None:
        if real is not None and inner is not None:
            os.dup2(real, inner)
            keep.add(inner)
        for fd in keep:
            os.set_inheritable(fd, True)
        seal_descriptors(keep)
        if prepared.own_process_group:
            os.setpgid(0, 0)
        if prepared.preexec_fn is not None:
            prepared.preexec_fn()

    try:
        return subprocess.Popen(
            prepared.argv,
            env=prepared.env,
            cwd=prepared.cwd,
            close_fds=False,  # seal_descriptors in the child does it, keeping ``inner``
            preexec_fn=child,
            **kwargs,
        )
    finally:
        if real is not None:
            os.close(real)


def run_foreground(
    prepared: Prepared, *, tty: bool, on_spawn: Callable[[int | None], None] | None = None
) -> int:
    """Spawn, wait, clean up; return the command's exit code (128+N for signal N).

    A sandbox that fails before the command starts is exit code 125, with the sandbox's own
    reason in egg's one line — or :class:`RetryLaunch` when the platform says to prepare it again
    (see :mod:`egg_core.spawn` for how signals travel). ``on_spawn`` gets the launch's pid once
    it runs, and None once it has ended.
    """
    with prepared:
        procs: list[subprocess.Popen[bytes]] = []
        pipe = setup_pipe() if prepared.stderr_fd is not None else None

        def start() -> int:
            try:
                proc = popen_sandbox(prepared, stderr=pipe[1] if pipe is not None else None)
            except OSError as exc:
                raise EggError(
                    f"cannot start the sandbox ({prepared.argv[0]}): {exc.strerror}",
                    exit_code=SANDBOX_FAILED,
                ) from exc
            procs.append(proc)
            return proc.pid

        prepared.starting()
        try:
            pid = spawn_ignoring(start, prepared.ignore_signals)
        finally:
            if pipe is not None:
                os.close(pipe[1])
                if not procs:
                    os.close(pipe[0])
        prepared.spawned()
        if on_spawn is not None:
            on_spawn(pid)
        try:
            returncode = supervise(pid, procs[0].wait, tty=tty, command_pid=prepared.child_pid)
        finally:
            if on_spawn is not None:
                on_spawn(None)
        said = setup_errors(pipe[0]) if pipe is not None else ""
        if prepared.command_exit_code(returncode) is None and prepared.should_retry(said):
            raise RetryLaunch(said)
        return report_exit(
            returncode, prepared.command_exit_code, prepared.exit_reason, prepared.argv[0], said
        )
