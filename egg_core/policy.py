"""The effective policy: what one launch enforces, and where each part of it came from.

The sandbox a user reviews is their egg.yaml *plus* what egg adds for the agent. Every addition is
recorded as a :class:`DrilledHole` in one of three lists:

- ``drilled``: straight from the agent's profile (its API domains, its config directory, its key
  variables), each with the profile's reason;
- ``derived``: computed from other settings — a provider URL's exact host replaces the vendor
  domains, a loopback provider URL becomes a forwarded local port, ollama's server port;
- ``suppressed``: holes the profile asked for that the user turned off (``agent_domains: none``)
  or that the user's own ``deny:`` rules override.

This module is the model (:class:`EffectivePolicy`, :class:`FsEntry`, :class:`DrilledHole`, the
network needs) and the path anchoring an agent's grants use; the policy is made by
:func:`egg_core.resolution.resolve_policy`, and egg's own protections, which every policy carries,
are :mod:`egg_core.protections`'.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from egg_core import capabilities as caps
from egg_core import seeds
from egg_core.config.model import EggConfig
from egg_core.converters import to_tuple
from egg_core.pathrules import Mode
from egg_core.profiles import AgentProfile, EnvDefault

NEED_NONE = "none"
NEED_LOCAL = "local"
NEED_FILTERED = "https-filtered"
NEED_FULL = "full"

#: FsEntry.seed value for a directory placeholder
SEED_DIRECTORY = seeds.DIRECTORY
EGG_SOURCE = "egg"


@attrs.frozen
class DrilledHole:
    """One capability added on the agent's behalf that the user did not write in egg.yaml."""

    kind: str  # "domain" | "write_dir" | "env" | "local_port"
    value: str
    agent: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value, "agent": self.agent, "reason": self.reason}


@attrs.frozen
class FsEntry:
    """A filesystem rule with an absolute path and where it came from.

    ``mode`` is one of ``rw``, ``ro``, ``deny``, ``deny-write``, ``cache`` (a sandbox-only cache
    mounted there, see :func:`sandbox_cache_dir`), or ``rw-prefix`` (a writable agent dir that also
    covers its same-prefix siblings, ``~/.claude`` -> ``~/.claude.json``).

    ``seed`` (``deny-write`` only): what the platform puts at the path for the length of a run
    when it does not exist, so that the sandbox cannot create it — text for a file,
    :data:`SEED_DIRECTORY` for an empty directory. The host sees the seed too, so it must be
    harmless to whatever reads the path there (an empty ``.git/commondir`` makes every host git
    command fail; ``.`` does not). Removed after the run if still unchanged.
    """

    mode: Mode
    path: str
    source: str
    seed: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {"mode": self.mode, "path": self.path, "source": self.source}
        if self.seed is not None:
            out["seed"] = "(directory)" if self.seed == SEED_DIRECTORY else self.seed
        return out


@attrs.frozen(kw_only=True)
class EffectivePolicy:
    """The fully resolved sandbox policy for one session; what ``egg explain`` renders."""

    agent: str
    profile: AgentProfile = attrs.field(eq=False, repr=False)
    home: str
    cwd: str
    fs: tuple[FsEntry, ...] = attrs.field(converter=to_tuple)
    #: egg's own protections, applied after (and never overridden by) every rule in ``fs``
    protected: tuple[FsEntry, ...] = attrs.field(default=(), converter=to_tuple)
    network_need: str = NEED_NONE
    domains: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    local_ports: tuple[int, ...] = attrs.field(default=(), converter=to_tuple)
    mode: str = "enforce"
    env_all: bool = False
    env_names: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    env_explicit: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    config_env_names: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    set_env: tuple[EnvDefault, ...] = attrs.field(default=(), converter=to_tuple)
    ssh_denied: bool = False
    #: the whole sandbox's CPU time (resources.cpu)
    cpu_seconds: float | None = None
    memory_bytes: int | None = None
    max_fds: int | None = None
    max_pids: int | None = None
    #: each process's own CPU time (resources.cpu_per_process)
    cpu_per_process_seconds: float | None = None
    skip_permissions: bool = False
    audit: bool = False
    trace: bool = False
    requires_sandbox: bool = True
    #: threat H guards (git metadata, agent settings); off only by egg.yaml's key of that name
    persistence_guards: bool = True
    #: sessions pass the program's clipboard writes (OSC 52) to the terminal
    clipboard: bool = False
    #: the host tools the sandbox may call (egg_core.tools.model), by name
    tools: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: the agent's files at the top of $HOME it replaces atomically (see egg_core.homefiles)
    home_files: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: (home-relative prefix, absolute path) for each of the agent's relocations in force
    relocated: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=to_tuple)
    drilled: tuple[DrilledHole, ...] = attrs.field(default=(), converter=to_tuple)
    derived: tuple[DrilledHole, ...] = attrs.field(default=(), converter=to_tuple)
    suppressed: tuple[DrilledHole, ...] = attrs.field(default=(), converter=to_tuple)

    # -- views used by platforms

    def home_path(self, relative: str) -> str:
        """Where the agent's home-relative ``relative`` is, with its relocations applied
        (``.codex/config.toml`` is ``$CODEX_HOME/config.toml`` when that is set)."""
        return home_path(relative, self.home, self.relocated)

    def paths(self, *modes: str) -> list[str]:
        return [e.path for e in self.fs if e.mode in modes]

    @property
    def mounts(self) -> list[FsEntry]:
        return [e for e in self.fs if e.mode in ("rw", "ro", "rw-prefix")]

    @property
    def deny(self) -> list[str]:
        return self.paths("deny")

    @property
    def deny_write(self) -> list[str]:
        return self.paths("deny-write")

    @property
    def jail(self) -> bool:
        """``deny:/``: only the listed paths (and what programs need to run) exist."""
        return "/" in self.deny

    @property
    def writes_restricted(self) -> bool:
        return not any(e.path == "/" and e.mode == "rw" for e in self.fs)

    def required_capabilities(self) -> dict[str, str]:
        """Capability name -> the part of the policy that needs it (for gap messages)."""
        if not self.requires_sandbox:
            return {caps.NET_FULL: "network '*'"}
        need: dict[str, str] = {}
        if self.jail:
            need[caps.FS_JAIL] = "deny:/ (jail mode)"
        if self.deny or self.protected:
            first = (self.deny or [e.path for e in self.protected])[0]
            need[caps.FS_DENY_READ] = f"deny:{first}"
        if self.writes_restricted:
            need[caps.FS_RESTRICT_WRITE] = "a read-only filesystem outside rw: paths"
        need[
            {
                NEED_NONE: caps.NET_NONE,
                NEED_LOCAL: caps.NET_LOCAL,
                NEED_FILTERED: caps.NET_FILTERED,
                NEED_FULL: caps.NET_FULL,
            }[self.network_need]
        ] = f"network ({self.network_need})"
        need[caps.SYSCALL_FILTER] = "any sandboxed policy (escape syscalls are denied)"
        if not self.env_all:
            need[caps.ENV_FILTER] = "an env allowlist"
        for cap, value, label in (
            (caps.LIMIT_CPU, self.cpu_seconds, "resources.cpu"),
            (caps.LIMIT_MEMORY, self.memory_bytes, "resources.memory"),
            (caps.LIMIT_PIDS, self.max_pids, "resources.max_pids"),
            (caps.LIMIT_FDS, self.max_fds, "resources.max_fds"),
            (caps.LIMIT_CPU_PER_PROCESS, self.cpu_per_process_seconds, "resources.cpu_per_process"),
        ):
            if value is not None:
                need[cap] = label
        return need

    def network_summary(self) -> str:
        if self.network_need == NEED_FULL:
            return "*"
        parts = list(self.domains) + [f"localhost:{p}" for p in self.local_ports]
        return ",".join(parts) if parts else "none"


def sandbox_cache_dir(egg_home: Path | str, path: str) -> str:
    """Where the sandbox-only cache for the host path ``path`` lives: under
    ``$EGG_HOME/sandbox-cache``, named after the path, shared by every sandbox run of this user
    and read by nothing on the host."""
    name = os.path.normpath(path).strip("/").replace("%", "%25").replace("/", "%")
    return os.path.join(os.fspath(egg_home), "sandbox-cache", name or "%")


def requires_sandbox(config: EggConfig, agent: str | None = None) -> bool:
    """Whether ``config`` asks egg to enforce anything at all.

    Only a config with every boundary wide open — no filesystem rules, network ``*``, env ``*``,
    no resource limits — runs without an OS sandbox (an outer VM or container being the boundary).
    A wildcard network alone never turns off filesystem, syscall and resource isolation.
    """
    return bool(
        config.fs
        or not config.network.unrestricted
        or not config.env.everything
        or config.resources.any
    )


def home_path(relative: str, home: str, relocated: Sequence[tuple[str, str]]) -> str:
    """``relative`` under ``home``, or under the relocation whose prefix it starts with. A path
    that starts with ``$VARIABLE`` is anchored at that variable's directory; "" when it is not
    set (the path does not exist for this launch)."""
    for prefix, target in sorted(relocated, key=lambda pair: -len(pair[0])):
        if relative == prefix or relative.startswith(prefix + "/"):
            return os.path.normpath(target + relative[len(prefix) :])
    if relative.startswith("$"):
        return ""
    return os.path.normpath(os.path.join(home, relative))


def relocations(
    profile: AgentProfile, home: str, environ: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The profile's relocations set in ``environ``, and the ``$VARIABLE`` anchors its paths
    use: (prefix, absolute path). ``~`` is the home; a relative value is taken from the home
    too (egg does not guess a working directory)."""
    moves = [(m.prefix, m.variable, m.inside) for m in profile.relocations]
    for grant in (
        *profile.write_dirs,
        *profile.settings_files,
        *profile.code_dirs,
        *profile.cache_dirs,
        *profile.restored_files,
    ):
        head = grant.value.split("/", 1)[0]
        if head.startswith("$") and len(head) > 1:
            moves.append((head, head[1:], ""))
    found = []
    for prefix, variable, inside in dict.fromkeys(moves):
        value = environ.get(variable, "").strip()
        if not value:
            continue
        if value == "~" or value.startswith("~/"):
            value = home + value[1:]
        base = os.path.join(home, value)  # an absolute value replaces the home
        found.append((prefix, os.path.normpath(os.path.join(base, inside))))
    return found
