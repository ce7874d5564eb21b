"""The platform contract: how an effective policy becomes a sandboxed process.

A platform (linux-ns, macos-seatbelt, unsandboxed, or a third party's) states what it *can*
enforce as a set of capability names, says whether it is usable on this host, previews the exact
command it would run (``egg explain``), and prepares a launch: argv, environment, file descriptors
to pass, and cleanup. Selection never falls back to a weaker platform: a policy needing a
capability the chosen platform lacks is an :class:`~egg_core.errors.EnforcementError` listing each
gap and its fix.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from egg_core.converters import to_tuple

if TYPE_CHECKING:
    from egg_core.policy import EffectivePolicy

# Capability names (a policy needs a subset; a platform declares the ones it enforces), kept in
# egg_core.capabilities so that the policy can name them without the platform contract.
from egg_core.capabilities import (
    CAPABILITIES,
    ENV_FILTER,
    FS_DENY_READ,
    FS_JAIL,
    FS_RESTRICT_WRITE,
    LIMIT_CPU,
    LIMIT_CPU_PER_PROCESS,
    LIMIT_FDS,
    LIMIT_MEMORY,
    LIMIT_PIDS,
    NET_FILTERED,
    NET_FULL,
    NET_LOCAL,
    NET_NONE,
    SYSCALL_FILTER,
)

__all__ = [
    "CAPABILITIES",
    "ENV_FILTER",
    "FS_DENY_READ",
    "FS_JAIL",
    "FS_RESTRICT_WRITE",
    "LIMIT_CPU",
    "LIMIT_CPU_PER_PROCESS",
    "LIMIT_FDS",
    "LIMIT_MEMORY",
    "LIMIT_PIDS",
    "NET_FILTERED",
    "NET_FULL",
    "NET_LOCAL",
    "NET_NONE",
    "SYSCALL_FILTER",
    "Availability",
    "Check",
    "Launch",
    "Platform",
    "Prepared",
]


@attrs.frozen
class Availability:
    """Whether a platform can run on this host, and if not, why (and how to fix it)."""

    ok: bool
    reason: str

    def __iter__(self) -> Any:  # allows ``ok, reason = platform.available()``
        return iter((self.ok, self.reason))


@attrs.frozen(kw_only=True)
class Launch:
    """Everything a platform needs to start one sandboxed command."""

    policy: EffectivePolicy
    argv: tuple[str, ...] = attrs.field(converter=to_tuple)
    env: Mapping[str, str]
    cwd: Path
    work_dir: Path  # private, host-only directory for this run (session dir or a temp dir)
    egg_home: Path  # caches a platform may keep (never visible inside a sandbox)
    tty: bool = False
    network_log: Path | None = None  # where network decisions go (default: work_dir)
    #: a host directory the command may write to (the session's browser-open outbox); the
    #: platform makes it visible at :meth:`Platform.shared_path`
    shared_dir: Path | None = None
    #: the run's home layer (egg_core.homefiles), for a platform with ``stages_home_files``:
    #: bind it over the home, the home's entries back into it, except ``home_staged``
    home_layer: Path | None = None
    #: the names at the top of the home staged in the layer (not bound from the host)
    home_staged: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: the run's tool socket directory (egg_core.tools.server) when egg.yaml enables tools: the
    #: platform shows it inside read-only, names its socket in EGG_TOOL_SOCKET and puts its
    #: ``bin/`` first on PATH (:meth:`Platform.tools_path`)
    tools_dir: Path | None = None
    #: how the platform's filtering proxy resolves and connects, when a plugin replaces the
    #: system's (``egg_network_transport``; a ``egg_core.netproxy.NetworkTransport``)
    network_transport: Any = attrs.field(default=None, eq=False)


@attrs.define
class Prepared:
    """A launch made ready: run ``argv`` with ``env`` in ``cwd``, passing ``pass_fds``.

    ``preexec_fn`` (if any) runs in the child between fork and exec. ``cleanup()`` undoes every
    side effect of preparing (helper processes, temp files, cgroups); it is idempotent and must be
    called on every exit path — ``Prepared`` is a context manager for that reason.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    preexec_fn: Callable[[], None] | None = None
    #: signals the spawned process must start with ignored (the platform restores them for the
    #: command itself); a sandbox's outer monitor must survive the terminal's Ctrl-C
    ignore_signals: tuple[int, ...] = ()
    #: the spawned process leads a process group of its own, so that the terminal's Ctrl-C and
    #: Ctrl-\\ reach egg alone (which passes them on to the command: :mod:`egg_core.spawn`)
    own_process_group: bool = False
    notes: list[str] = attrs.Factory(list)
    _cleanups: list[Callable[[], None]] = attrs.Factory(list)
    _exit_reasons: list[Callable[[int], str | None]] = attrs.Factory(list)
    _spawn_hooks: list[Callable[[], None]] = attrs.Factory(list)
    _start_hooks: list[Callable[[], None]] = attrs.Factory(list)
    _exit_code: Callable[[int], int | None] | None = None
    _child_pid: Callable[[], int | None] | None = None
    #: a self-contained description of this launch that ``egg exec`` may cache and run again
    #: without resolving anything (see :mod:`egg_core.execcache`); None when it cannot be cached.
    #: ``"runner"`` names the ``module:function`` a hit calls as ``function(entry, env)`` (the
    #: command's exit code, or None: run the full path, nothing ran); with ``"admits": True``
    #: as ``function(entry, env, admit)``, where the runner starts the sandbox at once, calls
    #: ``admit()`` while it sets up, and lets the command start only when it said yes
    #: (:class:`egg_core.cachedrun.Admission`; a runner that fails closed first calls
    #: ``admit.failed_closed()``, one that finds the launch cannot run as cached tells
    #: ``admit.miss(why)`` and returns None)
    recipe: dict[str, Any] | None = None
    #: when set, the spawned process's own stderr must be a pipe (what it says while setting up
    #: the sandbox: read back by :func:`egg_core.spawn.setup_errors`) and the real stderr must be
    #: this descriptor, which the command inside takes as its stderr
    stderr_fd: int | None = None
    _retry: Callable[[str], bool] | None = None

    def set_retry_check(self, fn: Callable[[str], bool]) -> None:
        """Say whether a launch that failed before its command started may be prepared again
        and retried (something it rested on changed under it, say a host socket vanished);
        ``fn`` gets what the sandbox's set-up said on its stderr."""
        self._retry = fn

    def should_retry(self, said: str = "") -> bool:
        return self._retry is not None and self._retry(said)

    def set_child_pid_reader(self, fn: Callable[[], int | None]) -> None:
        self._child_pid = fn

    def child_pid(self) -> int | None:
        """The host pid of the command itself (not the sandbox's monitor), if the platform knows
        it; used to forward signals to the command. May block until the command started."""
        return self._child_pid() if self._child_pid is not None else None

    @property
    def reports_child_pid(self) -> bool:
        """Whether :meth:`child_pid` says if the command started (None: it never did)."""
        return self._child_pid is not None

    def add_start_hook(self, fn: Callable[[], None]) -> None:
        """Run in the parent right before the spawn: host changes that must not be seen while
        the launch is being prepared (and cached), such as planting placeholders."""
        self._start_hooks.append(fn)

    def starting(self) -> None:
        while self._start_hooks:
            self._start_hooks.pop(0)()

    def add_spawn_hook(self, fn: Callable[[], None]) -> None:
        """Run in the parent right after the child was spawned (close the child's fd copies)."""
        self._spawn_hooks.append(fn)

    def spawned(self) -> None:
        while self._spawn_hooks:
            self._spawn_hooks.pop(0)()

    def set_exit_code_reader(self, fn: Callable[[int], int | None]) -> None:
        """Map the spawned process's wait status to the command's exit code.

        The reader returns None when the sandbox failed before the command started.
        """
        self._exit_code = fn

    def command_exit_code(self, returncode: int) -> int | None:
        """The command's exit code (128+N for signal N) from the spawned process's returncode;
        None if the sandbox itself failed before the command could start."""
        if self._exit_code is not None:
            return self._exit_code(returncode)
        return 128 - returncode if returncode < 0 else returncode

    def add_cleanup(self, fn: Callable[[], None]) -> None:
        self._cleanups.append(fn)

    def add_exit_reason(self, fn: Callable[[int], str | None]) -> None:
        """Register a probe that explains a death (OOM, CPU limit) from the exit status."""
        self._exit_reasons.append(fn)

    def exit_reason(self, returncode: int) -> str | None:
        """Why the command died, when a limit of the platform killed it; None otherwise."""
        for probe in self._exit_reasons:
            reason = probe(returncode)
            if reason:
                return reason
        return None

    def cleanup(self) -> None:
        while self._cleanups:
            fn = self._cleanups.pop()
            try:
                fn()
            except Exception:
                pass  # cleanup must not mask the command's own outcome

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


class Platform(abc.ABC):
    """A way to run a command inside a boundary. Subclass it and register an instance."""

    #: unique name users pass to ``--platform``
    name: str = ""
    #: one line for ``egg doctor`` and ``egg plugins``
    description: str = ""
    #: capability names (constants above) this platform enforces when available
    capabilities: frozenset[str] = frozenset()
    #: True only for a platform that enforces nothing (chosen explicitly, never as a fallback)
    outer_boundary: bool = False
    #: True for a platform that cannot let the sandbox replace exactly the agent's files at the
    #: top of a read-only $HOME, and so wants them staged in a layer it binds over the home
    #: (:attr:`Launch.home_layer`; see egg_core.homefiles)
    stages_home_files: bool = False
    #: True for a platform whose :meth:`diagnose` is worth reading where it is unavailable (its
    #: checks say what is missing and how to fix it: ``egg doctor`` runs them then too); False
    #: for one that is simply not for this host (a macOS platform on Linux)
    diagnoses_when_unavailable: bool = False

    @abc.abstractmethod
    def available(self) -> Availability:
        """Whether this platform can run here; the reason names what is missing and the fix."""

    def gaps(self, policy: EffectivePolicy) -> list[str]:
        """What ``policy`` needs that this platform cannot enforce, each with its fix."""
        needed = policy.required_capabilities()
        return [
            f"{reason} needs {cap}, which {self.name} does not enforce"
            for cap, reason in needed.items()
            if cap not in self.capabilities
        ]

    @abc.abstractmethod
    def command(self, launch: Launch) -> list[str]:
        """The exact command :meth:`prepare` would run, without side effects (``egg explain``)."""

    @abc.abstractmethod
    def prepare(self, launch: Launch) -> Prepared:
        """Make the launch ready; raise EnforcementError if the host cannot enforce the policy."""

    def shared_path(self, host_dir: Path) -> str:
        """Where ``Launch.shared_dir`` appears to the command (the host path if not remapped)."""
        return str(host_dir)

    def tools_path(self, host_dir: Path) -> str:
        """Where ``Launch.tools_dir`` appears to the command (the host path if not remapped).
        The core names ``<it>/tool.sock`` in EGG_TOOL_SOCKET and puts ``<it>/bin`` first on
        PATH; a platform that remaps it must show it there read-only."""
        return str(host_dir)

    def describe(self, launch: Launch) -> dict[str, Any]:
        """Extra platform-specific detail for ``egg explain`` (a generated profile, say)."""
        return {}

    def diagnose(self) -> list[Check]:
        """Host checks for ``egg doctor``: what this host lets the platform enforce."""
        return []

    def sweep(self) -> list[str]:
        """Remove what launches of this platform left on the host when the process that ran them
        was killed (a ``kill -9`` of a session daemon cannot clean up): called by the egg
        command that recovers the crashed run. One line per thing removed; never raises."""
        return []


@attrs.frozen
class Check:
    """One ``egg doctor`` finding: what was checked, whether it is fine, details and the fix."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    #: policy features that fail on this host because of this check (e.g. "resources.memory")
    blocks: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: not a fault of the platform, only a feature this user cannot have here (shown as a note,
    #: with its fix, under a platform that is still available)
    note: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "fix": self.fix,
            "note": self.note,
            "blocks": list(self.blocks),
        }
