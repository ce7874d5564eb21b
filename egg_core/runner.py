"""Run a prepared launch in the foreground, as ``egg exec`` does: stdio passed through, the
command's exit code returned, every signal a user sends to egg passed on to the command."""

from __future__ import annotations

import subprocess

from egg_core.errors import EggError
from egg_core.sandbox import Prepared
from egg_core.spawn import SANDBOX_FAILED, report_exit, spawn_ignoring, supervise


def run_foreground(prepared: Prepared, *, tty: bool) -> int:
    """Spawn, wait, clean up; return the command's exit code (128+N for signal N).

    A sandbox that fails before the command starts is exit code 125 (see :mod:`egg_core.spawn`
    for how signals travel).
    """
    with prepared:
        procs: list[subprocess.Popen[bytes]] = []

        def start() -> int:
            try:
                proc = subprocess.Popen(
                    prepared.argv,
                    env=prepared.env,
                    cwd=prepared.cwd,
                    pass_fds=prepared.pass_fds,
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
        pid = spawn_ignoring(start, prepared.ignore_signals)
        prepared.spawned()
        returncode = supervise(pid, procs[0].wait, tty=tty, command_pid=prepared.child_pid)
        return report_exit(
            returncode, prepared.command_exit_code, prepared.exit_reason, prepared.argv[0]
        )
