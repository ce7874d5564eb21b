"""Threat O: a program egg runs on the host where a sandbox could write runs nothing it planted.

egg starts host programs in places a sandbox can write: a host tool runs in the workspace while
the sandbox that writes there is still running, and the audit after a run has git read
configuration the sandbox wrote. What git executes comes from the repository it starts in
(``core.fsmonitor``, hooks, aliases…) and any program comes from PATH, so two rules hold for every
such program, by construction rather than by a list of bad places:

- **The sandbox paused.** While the audit and the program run, every process of the sandbox is
  stopped (:mod:`egg_core.pause`): it owns the repositories it made and could otherwise put a
  ``core.fsmonitor`` back between the audit and git's read of it.
- **The same audit first.** Before the program starts, every repository git would reach from
  where it runs is audited by :func:`egg_core.git.guard.check` — the code that runs after every
  run — synchronously, so a session's one-second audit interval is no window. What it removes is
  said in one line each; when it cannot make everything safe (a file it could not move, more
  repositories than it follows), the program does not start.
- **A PATH with no sandbox in it.** Empty and relative entries (they mean the working directory)
  and every entry the sandbox could write — at it, above it (a directory it could replace) or
  below it (a file it could replace in it is a command) — are removed.

:class:`RunGuard` holds one run's guard state; a session shares one between its periodic audit,
its tool calls and its end, so that audits never overlap.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core import pathrules

#: (resolved path, mode) of the rules a sandbox was launched with (:func:`pathrules.mounted_rules`)
Ruled = Sequence[Sequence[str]]


def program_path(value: str, ruled: Ruled = ()) -> str:
    """``value`` (a PATH) with every entry removed that is empty, relative, or that a sandbox
    with these rules could write at, above or below (see the module docstring)."""
    writable = pathrules.writable_under(ruled)
    roots = [str(r[0]) for r in ruled if r[1] in pathrules.WRITABLE_MODES]
    kept: list[str] = []
    for entry in value.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        if sandbox_reaches(entry, writable, roots) or _links_out(entry, roots):
            continue
        kept.append(entry)
    return os.pathsep.join(dict.fromkeys(kept))


#: (directory, its identity, the writable roots) -> whether a link in it leads into them
_LINKS_SEEN: dict[tuple[str, tuple[int, int, int], tuple[str, ...]], bool] = {}


def _links_out(directory: str, roots: Sequence[str]) -> bool:
    """Whether a symlink in ``directory`` leads where the sandbox can write (``~/bin/git`` ->
    ``~/project/tools/git``): the command found there would be the sandbox's. A link's target,
    fully resolved, under any writable rule counts (a deeper read-only rule is not looked for:
    dropping a directory too many only loses a place to find commands). Resolving every link
    of ``/usr/bin`` takes ~15 ms, so the answer is kept while the directory is unchanged (a new
    or changed link changes its modification time) for the same rules."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    key = (directory, (st.st_dev, st.st_ino, st.st_mtime_ns), tuple(roots))
    if key not in _LINKS_SEEN:
        try:
            with os.scandir(directory) as entries:
                links = [entry.path for entry in entries if entry.is_symlink()]
        except OSError:
            links = []
        _LINKS_SEEN[key] = any(
            pathrules.under(os.path.realpath(link), root) for link in links for root in roots
        )
    return _LINKS_SEEN[key]


def sandbox_reaches(directory: str, writable: Callable[[str], bool], roots: Iterable[str]) -> bool:
    """Whether a sandbox could change what ``directory`` holds: it, or a directory on the way
    to it as spelled or as resolved (a symlink there could be swapped), is writable, or a
    writable rule lies inside it."""
    spelled = os.path.normpath(directory)
    real = os.path.realpath(spelled)
    for path in (spelled, real):
        current = path
        while True:
            if writable(current):
                return True
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return any(pathrules.under(root, real) for root in roots)


@attrs.frozen
class Preflight:
    """What a host program may do before it starts: the lines the audit said, and why it must
    not start (None: it may)."""

    lines: tuple[str, ...] = ()
    refused: str | None = None


class RunGuard:
    """One run's host-side guards: the git audit and the agent code directories it watches
    (:func:`egg_core.launch.after_run`), one audit at a time; ``said`` gets every line."""

    def __init__(
        self,
        git_state: dict[str, Any] | None,
        code_watch: Sequence[str],
        egg_home: str | os.PathLike[str],
        said: Callable[[str], None] | None = None,
    ) -> None:
        self.git_state = git_state
        self.code_watch = list(code_watch)
        self.egg_home = Path(egg_home)
        self._said = said
        self._lock = threading.Lock()
        self._unsafe_said: set[str] = set()
        self._sandbox: int | None = None
        self._pause_lock = threading.Lock()
        self._holders = 0
        self._stopped: list[int] = []

    def needs_audit(self) -> bool:
        """Whether the sandbox may have made something to audit: what a new repository would
        change has changed since the plan, or an agent code directory no mount could hold
        exists. A few ``stat`` calls (the session's git watcher asks every second)."""
        from egg_core.git import guard as gitguard

        if self.git_state is not None and gitguard.changed(self.git_state):
            return True
        return any(map(os.path.lexists, self.code_watch))

    def audit(self, starts: Iterable[str] = ()) -> tuple[list[str], list[str]]:
        """Audit now: (every line, the lines saying what could not be made safe). Never
        raises: an audit that fails is itself unsafe."""
        from egg_core import settings_code
        from egg_core.git import guard as gitguard
        from egg_core.quarantine import Quarantine

        with self._lock:
            lines: list[str] = []
            unsafe: list[str] = []
            try:
                if self.git_state is not None:
                    found = gitguard.check(self.git_state, self.egg_home, starts=starts)
                    lines += found.lines
                    unsafe += found.unsafe
                ruled = (self.git_state or {}).get("ruled", ())
                writable = pathrules.writable_under(ruled)
                quarantine = Quarantine(self.egg_home, "agent code", writable)
                lines += settings_code.take_new_code_dirs(
                    self.code_watch, self.egg_home, quarantine
                )
                unsafe += quarantine.failed
            except Exception as exc:  # a hostile layout must never make egg itself fail
                line = f"the audit failed ({type(exc).__name__}: {exc})"
                lines.append(line)
                unsafe.append(line)
            # what stays unsafe is said once, however often it is looked at again
            shown = [line for line in lines if line not in self._unsafe_said]
            self._unsafe_said.update(unsafe)
        if self._said is not None:
            for line in shown:
                self._said(line)
        return shown, unsafe

    def set_sandbox(self, pid: int | None) -> None:
        """The launch's process (its descendants are the sandbox); None once it has ended."""
        self._sandbox = pid

    @contextlib.contextmanager
    def holding(self, what: str, cwd: str) -> Iterator[Preflight]:
        """For the length of the block, in which ``what`` runs in ``cwd`` on the host: the
        sandbox paused (:mod:`egg_core.pause`: nothing it does can race the audit or the
        program), and the audit done first. The block gets a :class:`Preflight` whose
        ``refused`` says why ``what`` must not start, when it must not."""
        from egg_core.pause import PauseFailed

        try:
            self._pause()
        except PauseFailed as exc:
            yield Preflight((), f"{what} refused: the sandbox could not be paused ({exc})")
            return
        try:
            lines, unsafe = self.audit(starts=[os.path.abspath(cwd)])
            refused = None
            if unsafe:
                refused = f"{what} refused: git could run what the sandbox wrote ({unsafe[0]})"
            yield Preflight(tuple(lines), refused)
        finally:
            self._resume()

    def _pause(self) -> None:
        """Paused once however many programs run at a time; resumed when the last ends."""
        from egg_core.pause import pause

        with self._pause_lock:
            if self._holders == 0 and self._sandbox is not None:
                self._stopped = pause(self._sandbox)
            self._holders += 1

    def _resume(self) -> None:
        from egg_core.pause import resume

        with self._pause_lock:
            self._holders -= 1
            if self._holders == 0:
                stopped, self._stopped = self._stopped, []
                resume(stopped)
