"""``$EGG_HOME/guard.log``: what egg's host-side guards could not do, for ``egg doctor``.

A settings restore that could not complete, an audit that failed: each is said once where it
happened (the command's stderr, the session's log), and kept here so that it is not lost when
nobody was watching — a detached session, a killed ``egg exec`` recovered by a later command.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # the exec cache's fast path records here too: no typing import at run time
    from collections.abc import Iterable
    from pathlib import Path

LOG = "guard.log"
#: the log is cut back to this many lines when it grows past twice as many
KEEP_LINES = 200


def record(egg_home: Path | str, lines: Iterable[str]) -> None:
    """Append ``lines`` (with a timestamp each); never raises."""
    lines = list(lines)
    if not lines:
        return
    from egg_core.sanitize import visible  # the lines quote paths a sandbox chose

    path = os.path.join(egg_home, LOG)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:
        os.makedirs(egg_home, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a") as handle:
            for line in lines:
                handle.write(f"{stamp} {visible(line)}\n")
        _trim(path)
    except OSError:
        pass


def recent(egg_home: Path | str, count: int = 5) -> list[str]:
    """The last lines; a byte that is not UTF-8 (an older egg wrote paths raw) as it was, for
    the printing side to show (``egg doctor``: :func:`egg_core.sanitize.visible`)."""
    try:
        with open(os.path.join(egg_home, LOG), errors="surrogateescape") as handle:
            return handle.read().splitlines()[-count:]
    except OSError:
        return []


def _trim(path: str) -> None:
    with open(path, errors="replace") as handle:
        lines = handle.readlines()
    if len(lines) <= 2 * KEEP_LINES:
        return
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.writelines(lines[-KEEP_LINES:])
    os.replace(tmp, path)
