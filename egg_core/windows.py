"""Threat I: a config file a sandbox could have written is not obeyed until the user has read it.

A sandbox can create an ``egg.yaml`` anywhere it can write — ``sub/egg.yaml`` in the workspace, a
base next to it — and a later ``egg exec`` started there would obey it: ``network: '*'``,
``env: '*'``. No mount can stop the creation of a file whose name is known but whose directory is
not, so egg keeps a ledger of **write windows**: for every launch, the directories its sandbox
could write and the files it could not, from when it started until it ended. A config file whose
change time (which no process can set back) falls inside such a window, under such a directory,
is refused — with one line saying which run could have written it — until the user has read it
and said so: ``egg config trust PATH`` records the hash of what it holds now.

The ledger is ``$EGG_HOME/run/windows``, a sequence of marshalled records appended with
``O_APPEND`` (one ``write`` each, so concurrent launches do not interleave): ``("open", id,
start, roots, protected)`` and ``("close", id, end)``. A launch killed before closing its window
leaves it open — every later change under its roots is suspect — until the next egg command
recovers the launch and closes it then. When the file grows past :data:`COMPACT_AT`, windows with
the same directories are merged (never dropped: a file a sandbox wrote long ago is as suspect as
one written today).

Standard library only: the exec cache's fast path opens and closes windows too.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

LEDGER = "windows"
TRUSTED = "trusted-configs"
COMPACT_AT = 1 << 20
#: windows closer than this (ns) with the same directories merge into one when compacting
MERGE_GAP = 2_000_000_000


def ledger_path(egg_home: str) -> str:
    return os.path.join(egg_home, "run", LEDGER)


def _append(egg_home: str, record: tuple[Any, ...]) -> None:
    path = ledger_path(egg_home)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, marshal.dumps(record))
    finally:
        os.close(fd)


def open_window(egg_home: str, roots: Sequence[str], protected: Sequence[str]) -> str:
    """Record that a sandbox able to write under ``roots`` (but not under ``protected``) starts
    now, owned by this process; returns the window's id for :func:`close_window`. Never raises:
    a ledger that cannot be written must not stop the launch."""
    from egg_core.rundirs import start_time

    pid = os.getpid()
    window = f"{pid}-{os.urandom(4).hex()}"
    record = ("open", window, _now(), list(roots), list(protected), pid, start_time(pid) or "")
    try:
        _append(egg_home, record)
    except OSError:
        pass
    return window


def close_window(egg_home: str, window: str) -> None:
    try:
        _append(egg_home, ("close", window, _now()))
        if os.stat(ledger_path(egg_home)).st_size > COMPACT_AT:
            compact(egg_home)
    except OSError:
        pass


def _now() -> int:
    import time

    return time.time_ns()


def windows(egg_home: str) -> list[dict[str, Any]]:
    """Every window in the ledger, oldest first: ``start``, ``end`` (None: still open),
    ``roots``, ``protected``."""
    found: dict[str, dict[str, Any]] = {}
    try:
        with open(ledger_path(egg_home), "rb") as handle:
            while True:
                try:
                    record = marshal.load(handle)
                except EOFError:
                    break
                except (ValueError, TypeError):
                    break  # a torn last record (a crash mid-write): what came before stands
                if not isinstance(record, tuple) or not record:
                    continue
                if record[0] == "open" and len(record) == 7:
                    _, window, start, roots, protected, pid, started = record
                    found[window] = {
                        "id": window,
                        "start": start,
                        "end": None,
                        "roots": list(roots),
                        "protected": list(protected),
                        "owner": (pid, started),
                    }
                elif record[0] == "close" and len(record) == 3 and record[1] in found:
                    found[record[1]]["end"] = record[2]
    except OSError:
        return []
    return list(found.values())


def compact(egg_home: str) -> None:
    """Rewrite the ledger with windows of the same directories merged (open ones kept apart)."""
    merged: list[dict[str, Any]] = []
    last: dict[tuple[Any, ...], dict[str, Any]] = {}
    for window in sorted(windows(egg_home), key=lambda w: w["start"]):
        key = (tuple(window["roots"]), tuple(window["protected"]))
        previous = last.get(key)
        if (
            previous is not None
            and previous["end"] is not None
            and window["end"] is not None
            and window["start"] - previous["end"] <= MERGE_GAP
        ):
            previous["end"] = max(previous["end"], window["end"])
            continue
        merged.append(window)
        last[key] = window
    path = ledger_path(egg_home)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as handle:
        for window in merged:
            pid, started = window["owner"]
            record = (
                "open",
                window["id"],
                window["start"],
                window["roots"],
                window["protected"],
                pid,
                started,
            )
            handle.write(marshal.dumps(record))
            if window["end"] is not None:
                handle.write(marshal.dumps(("close", window["id"], window["end"])))
    os.replace(tmp, path)


def close_orphans(egg_home: str) -> int:
    """Close the windows whose launch died without closing them (killed egg exec, crashed
    daemon), as of now: the sandbox could have written until it was gone. Returns how many."""
    from egg_core.rundirs import start_time

    closed = 0
    for window in windows(egg_home):
        if window["end"] is not None:
            continue
        pid, started = window["owner"]
        now = start_time(pid)
        if now is None or (started and now != started):
            close_window(egg_home, window["id"])
            closed += 1
    return closed


# --- at discovery -------------------------------------------------------------------------------


def suspect(
    path: str, egg_home: str, ledger: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The window in which a sandbox could have written the config file at ``path`` since it
    last changed, unless the user trusts what it holds now; None when it is above suspicion.
    ``ledger``: the :func:`windows` already read, if the caller has them."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    changed = st.st_ctime_ns
    for window in windows(egg_home) if ledger is None else ledger:
        end = window["end"]
        if changed < window["start"] or (end is not None and changed > end):
            continue
        if _under_any(real, window["protected"]):
            continue
        if _under_any(real, window["roots"]):
            return None if trusted(real, egg_home) else window
    return None


def _under_any(path: str, roots: Iterable[str]) -> bool:
    from egg_core.pathrules import under

    return any(under(path, root) for root in roots)


def check(files: Iterable[str], egg_home: str) -> None:
    """Raise a one-line :class:`~egg_core.errors.ConfigError` for the first config file a
    sandbox could have written since it last changed (see :func:`suspect`)."""
    from egg_core.errors import ConfigError

    ledger = windows(egg_home)  # read once for the whole chain
    for path in files:
        window = suspect(str(path), egg_home, ledger)
        if window is not None:
            raise ConfigError(
                f"{path} changed while {describe(window)}; a sandbox may have written it. "
                f"Read it, then run: egg config trust {path}"
            )


def content_hash(path: str) -> str:
    from hashlib import sha256

    with open(path, "rb") as handle:
        return sha256(handle.read()).hexdigest()


def trusted(real: str, egg_home: str) -> bool:
    """The user has read the file at ``real`` as it is now (``egg config trust``)."""
    try:
        digest = content_hash(real)
        with open(os.path.join(egg_home, TRUSTED), encoding="utf-8", errors="replace") as handle:
            return f"{digest} {real}" in handle.read().splitlines()
    except OSError:
        return False


def trust(path: str, egg_home: str) -> str:
    """Record that the user trusts the file at ``path`` as it is now; returns its hash."""
    real = os.path.realpath(path)
    digest = content_hash(real)
    os.makedirs(egg_home, mode=0o700, exist_ok=True)
    with open(os.path.join(egg_home, TRUSTED), "a", encoding="utf-8") as handle:
        handle.write(f"{digest} {real}\n")
    return digest


def describe(window: dict[str, Any]) -> str:
    import time

    start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(window["start"] / 1e9))
    state = "still running" if window["end"] is None else "ended"
    roots = ", ".join(window["roots"][:3]) + (" …" if len(window["roots"]) > 3 else "")
    return f"a sandbox started {start} ({state}) that could write {roots}"


def writable_roots(rules: Iterable[tuple[str, str]]) -> list[str]:
    """The resolved directories a launch's sandbox can write, from its (path, mode) rules."""
    from egg_core import observe
    from egg_core.pathrules import WRITABLE_MODES

    return sorted({observe.realpath(path) for path, mode in rules if mode in WRITABLE_MODES})
