"""Run a cached linux-ns launch (see :mod:`egg_core.execcache`): open the seccomp filter, make the
status pipe, spawn bwrap, supervise, clean up. Nothing heavier than ``os`` is imported here."""

from __future__ import annotations

import os

from egg_core.spawn import (
    report_exit,
    seal_descriptors,
    spawn_ignoring,
    supervise,
    wait_pid,
)

from . import placeholders
from .status import StatusReader

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from typing import Any

SECCOMP_FD = "\0seccomp-fd"
STATUS_FD = "\0status-fd"


def run(entry: dict[str, Any], env: dict[str, str]) -> int:
    held = placeholders.plant(entry["placeholders"], entry["lock_dir"])
    try:
        return _spawn_and_supervise(entry, env)
    finally:
        placeholders.remove(held)


def _spawn_and_supervise(entry: dict[str, Any], env: dict[str, str]) -> int:
    seccomp_fd = os.open(entry["seccomp_file"], os.O_RDONLY)
    os.set_inheritable(seccomp_fd, True)
    status_read, status_write = os.pipe()
    os.set_inheritable(status_write, True)
    table = {SECCOMP_FD: str(seccomp_fd), STATUS_FD: str(status_write)}
    argv = [table.get(arg, arg) for arg in entry["argv"]]
    status = StatusReader(status_read)
    # posix_spawn passes every inheritable descriptor: seal all but the two bwrap needs
    seal_descriptors((seccomp_fd, status_write))
    try:
        pid = spawn_ignoring(lambda: os.posix_spawn(argv[0], argv, env), entry["ignore_signals"])
    finally:
        os.close(status_write)
        os.close(seccomp_fd)
    try:
        returncode = supervise(
            pid, lambda: wait_pid(pid), tty=entry["tty"], command_pid=status.child_pid
        )
        reasons: dict[int, str] = entry["exit_reasons"]
        return report_exit(returncode, status.exit_code, reasons.get, argv[0])
    finally:
        status.close()
