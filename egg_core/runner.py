"""Run a prepared launch in the foreground, as ``egg exec`` does: stdio passed through, the
command's exit code returned, every signal a user sends to egg passed on to the command."""

from __future__ import annotations

import os
import subprocess

from egg_core.errors import EggError
from egg_core.sandbox import Prepared
from egg_core.spawn import (
    SANDBOX_FAILED,
    RetryLaunch,
    report_exit,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
)


def run_foreground(prepared: Prepared, *, tty: bool) -> int:
    """Spawn, wait, clean up; return the command's exit code (128+N for signal N).

    A sandbox that fails before the command starts is exit code 125, with the sandbox's own
    reason in egg's one line — or :class:`RetryLaunch` when the platform says to prepare it again
    (see :mod:`egg_core.spawn` for how signals travel).
    """
    with prepared:
        procs: list[subprocess.Popen[bytes]] = []
        pipe = setup_pipe() if prepared.stderr_fd is not None else None
        extra: tuple[int, ...] = ()
        if pipe is not None and prepared.stderr_fd is not None:
            # the real stderr at the number the command inside takes it from (Popen keeps only
            # descriptors that exist when it starts)
            os.dup2(2, prepared.stderr_fd)
            extra = (prepared.stderr_fd,)

        def start() -> int:
            try:
                proc = subprocess.Popen(
                    prepared.argv,
                    env=prepared.env,
                    cwd=prepared.cwd,
                    pass_fds=(*prepared.pass_fds, *extra),
                    stderr=pipe[1] if pipe is not None else None,
                    preexec_fn=prepared.preexec_fn,
                )
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
                for fd in extra:
                    os.close(fd)
                if not procs:
                    os.close(pipe[0])
        prepared.spawned()
        returncode = supervise(pid, procs[0].wait, tty=tty, command_pid=prepared.child_pid)
        said = setup_errors(pipe[0]) if pipe is not None else ""
        if prepared.command_exit_code(returncode) is None and prepared.should_retry():
            raise RetryLaunch(said)
        return report_exit(
            returncode, prepared.command_exit_code, prepared.exit_reason, prepared.argv[0], said
        )
