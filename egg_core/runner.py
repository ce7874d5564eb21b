"""Run a prepared launch in the foreground, as ``egg exec`` does: stdio passed through, the
command's exit code returned, every signal a user sends to egg passed on to the command."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from egg_core.errors import EggError
from egg_core.sandbox import Prepared

SANDBOX_FAILED = 125
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)


@contextmanager
def _signals(handler_for: Mapping[int, Any]) -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in handler_for}
    try:
        for sig, handler in handler_for.items():
            signal.signal(sig, handler)
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def run_foreground(prepared: Prepared, *, tty: bool) -> int:
    """Spawn, wait, clean up; return the command's exit code (128+N for signal N).

    With ``tty`` the command shares egg's terminal and process group, so the terminal's Ctrl-C
    and Ctrl-\\ reach it directly; otherwise egg forwards them. SIGTERM and SIGHUP are always
    forwarded. A sandbox that fails before the command starts is exit code 125.
    """
    with prepared:
        ignored = {sig: signal.SIG_IGN for sig in prepared.ignore_signals}
        with _signals(ignored):
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
        prepared.spawned()
        forward = [signal.SIGTERM, signal.SIGHUP]
        if not tty:
            forward += [signal.SIGINT, signal.SIGQUIT]
        target: dict[str, int | None] = {"pid": None}

        def relay(sig: int, _frame: object) -> None:
            pid = target["pid"] or proc.pid
            try:
                import os

                os.kill(pid, sig)
            except OSError:
                pass

        handlers: dict[int, Any] = {sig: relay for sig in forward}
        handlers.update({sig: signal.SIG_IGN for sig in FORWARDED if sig not in forward})
        with _signals(handlers):
            target["pid"] = prepared.child_pid()
            returncode = proc.wait()
        code = prepared.command_exit_code(returncode)
        if code is None:
            print(
                f"egg: error: the sandbox failed before the command started "
                f"({prepared.argv[0]} exited {returncode})",
                file=sys.stderr,
            )
            return SANDBOX_FAILED
        reason = prepared.exit_reason(code)
        if reason:
            print(f"egg: {reason}", file=sys.stderr)
        return code
