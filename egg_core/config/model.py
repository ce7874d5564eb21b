"""egg.yaml's model: the config as frozen attrs data, the built-in defaults, and merging.

Parsing and validating YAML is :mod:`egg_core.config.parsing`; finding the files and resolving their
base chains is :mod:`egg_core.config.files`, which is what the rest of egg calls.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from egg_core.converters import to_tuple
from egg_core.pathrules import Mode
from egg_core.paths import expand_user, user_home

#: ``cache``: the sandbox gets a cache of its own at that path (shared by sandbox runs, never
#: read by the host), so nothing it leaves there runs at the host's next build (threat H)
FS_MODES = ("rw", "ro", "deny", "deny-write", "cache")
NETWORK_MODES = ("enforce", "observe")
AGENT_DOMAINS = ("merge", "none")
MAX_BASE_DEPTH = 10
DEFAULT_SOURCE = "built-in default"


@attrs.frozen
class FsRule:
    """``mode:path`` — the path as written (``~`` and relative paths are kept)."""

    mode: Mode
    path: str
    source: str = attrs.field(default="", eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.mode}:{self.path}"

    def normalized(self, home: Path) -> str:
        return normalize_path(self.path, home)


def normalize_path(path: str, home: Path) -> str:
    """``~`` expanded, ``.``/``..`` folded, no trailing slash; relative paths stay relative."""
    expanded = expand_user(path, home)
    return os.path.normpath(expanded) if expanded else expanded


@attrs.frozen(kw_only=True)
class BaseRef:
    """The ``base`` key. ``mapping`` records the shape it was written in (for round trips)."""

    name: str | None = None
    fs: str | None = None
    network: str | None = None
    env: str | None = None
    mapping: bool = False

    @property
    def masks(self) -> dict[str, str]:
        return {
            k: v for k, v in (("fs", self.fs), ("network", self.network), ("env", self.env)) if v
        }


@attrs.frozen(kw_only=True)
class NetworkConfig:
    """The ``network`` key.

    ``domains`` holds ``*`` alone for unrestricted network, nothing for no network. ``shape``
    records how it was written (``none``, ``star``, ``list``, ``mapping``, or ``absent``) so that
    a legacy scalar or list re-emits as written.
    """

    domains: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    local_ports: tuple[int, ...] = attrs.field(default=(), converter=to_tuple)
    mode: str | None = None
    log: bool | None = None
    agent_domains: str | None = None
    shape: str = "absent"

    @property
    def unrestricted(self) -> bool:
        return "*" in self.domains

    @property
    def needs_mapping(self) -> bool:
        """A mapping-only option is set, so the scalar/list shapes cannot express this."""
        return bool(
            self.local_ports
            or self.mode is not None
            or self.log is not None
            or self.agent_domains is not None
        )

    def summary(self) -> str:
        """``none``, ``*``, or the comma-separated domains (session metadata, ``egg ls``)."""
        if self.unrestricted:
            return "*"
        parts = list(self.domains) + [f"localhost:{p}" for p in self.local_ports]
        return ",".join(parts) if parts else "none"


@attrs.frozen(kw_only=True)
class EnvConfig:
    """The ``env`` key: ``*`` (everything) or the variable names passed from the host."""

    names: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    shape: str = "absent"  # absent | star | list

    @property
    def everything(self) -> bool:
        return "*" in self.names


@attrs.frozen(kw_only=True)
class Resources:
    """The ``resources`` key, values as written; parsed values come from :mod:`egg_core.units`."""

    #: the whole sandbox's CPU time (every process it ever had, together)
    cpu: str | int | None = None
    memory: str | int | None = None
    max_fds: int | None = None
    max_pids: int | None = None
    #: each process's own CPU time (RLIMIT_CPU), for hosts that cannot account a sandbox's
    cpu_per_process: str | int | None = None

    @property
    def cpu_seconds(self) -> float | None:
        from egg_core.units import parse_duration

        return None if self.cpu is None else parse_duration(self.cpu)

    @property
    def cpu_per_process_seconds(self) -> float | None:
        from egg_core.units import parse_duration

        return None if self.cpu_per_process is None else parse_duration(self.cpu_per_process)

    @property
    def memory_bytes(self) -> int | None:
        from egg_core.units import parse_size

        return None if self.memory is None else parse_size(self.memory)

    @property
    def any(self) -> bool:
        return any(
            v is not None
            for v in (self.cpu, self.memory, self.max_fds, self.max_pids, self.cpu_per_process)
        )


@attrs.frozen(kw_only=True)
class EggConfig:
    """One egg.yaml, or the result of merging a chain of them."""

    base: BaseRef | None = None
    fs: tuple[FsRule, ...] = attrs.field(default=(), converter=to_tuple)
    network: NetworkConfig = NetworkConfig()
    env: EnvConfig = EnvConfig()
    resources: Resources = Resources()
    shell: str | None = None
    dangerously_skip_permissions: bool = False
    audit: bool = False
    trace: bool = False
    agent_settings: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=to_tuple)
    #: threat H (DESIGN.md §9): what the sandbox writes never runs on the host later (git's
    #: metadata guarded, agent settings restored). On unless a config turns it off by name;
    #: ``base: none`` alone never does.
    persistence_guards: bool = True
    #: threat N: let the program write the user's clipboard through the terminal (OSC 52)
    clipboard: bool = False
    #: the privileged host tools (egg_core.tools) the sandbox may call, by name; none by default
    tools: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: top-level keys present in the source file, for emitting what was written
    present: frozenset[str] = attrs.field(default=frozenset(), eq=False, repr=False)
    source: str = attrs.field(default="", eq=False, repr=False)

    def rules(self, *modes: str) -> list[FsRule]:
        return [r for r in self.fs if r.mode in modes]

    @property
    def agent_settings_map(self) -> dict[str, str]:
        return dict(self.agent_settings)


# --- built-in configs --------------------------------------------------------------------------


def default_cache_dirs() -> list[str]:
    """OS-standard cache directories build tools write to (go, npm, pip, cargo): no secrets, but
    code the host runs later (a built wheel, an npx package, a crate's build script), so each is
    a ``cache:`` — the sandbox's own, never the host's."""
    dirs = ["~/.cache", "~/.npm", "~/.cargo/registry", "~/go/pkg/mod"]
    if sys.platform == "darwin":
        dirs.insert(0, "~/Library/Caches")
    return dirs


def default_deny_paths() -> list[str]:
    """Credentials and histories a coding agent has no business reading."""
    return [
        "~/.ssh",
        "~/.gnupg",
        "~/.aws",
        "~/.docker",
        "~/.kube",
        "~/.netrc",
        "~/.bash_history",
        "~/.zsh_history",
        "~/.local/share/fish/fish_history",
        "~/.python_history",
        "~/.node_repl_history",
        "~/.psql_history",
        "~/.mysql_history",
        "~/.sqlite_history",
    ]


#: the locale: ``LANG``, every ``LC_*`` category ``locale`` prints (POSIX's and glibc's) and
#: ``LC_ALL`` over them, and the language list gettext reads — messages, dates, sorting and the
#: character set a program works in are the user's, inside as outside
LOCALE_ENV = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
)
#: what the built-in default passes from the host: who and where the user is, the terminal
#: (``COLORTERM`` says it shows 24-bit colour: without it Gemini warns on every start and TUIs
#: fall back to 256 colours), the time zone and the locale. Nothing in it is a secret.
DEFAULT_ENV = ("HOME", "PATH", "TERM", "COLORTERM", "USER", "TZ", *LOCALE_ENV)


def default_config() -> EggConfig:
    """The restrictive default used when no egg.yaml exists, and the parent of one without base.

    Read-only root (the platforms' default), writable working directory and cache dirs,
    credentials and shell histories denied, a minimal environment, no network.
    """
    fs = [FsRule("rw", "./", DEFAULT_SOURCE)]
    fs += [FsRule("cache", d, DEFAULT_SOURCE) for d in default_cache_dirs()]
    fs += [FsRule("deny", d, DEFAULT_SOURCE) for d in default_deny_paths()]
    # ./egg.yaml and git's metadata are egg's own protections (policy.protected_paths,
    # egg_core.git.guard): they hold whatever base a config names.
    return EggConfig(
        base=BaseRef(name="none"),
        fs=fs,
        network=NetworkConfig(shape="none"),
        env=EnvConfig(names=DEFAULT_ENV, shape="list"),
        present=frozenset({"base", "fs", "network", "env"}),
        source=DEFAULT_SOURCE,
    )


def unsandboxed_config() -> EggConfig:
    """The explicit trusted-host policy: an outer VM or container is the boundary.

    Full environment and network, no filesystem or resource rules; egg still keeps the session
    (PTY persistence) but runs no OS sandbox.
    """
    return EggConfig(
        base=BaseRef(name="none"),
        network=NetworkConfig(domains=("*",), shape="star"),
        env=EnvConfig(names=("*",), shape="star"),
        present=frozenset({"base", "fs", "network", "env"}),
        source="built-in unsandboxed",
    )


# --- merge -------------------------------------------------------------------------------------


def merge_configs(parent: EggConfig, child: EggConfig, home: Path | None = None) -> EggConfig:
    """``child`` on top of ``parent`` (DESIGN.md §4).

    fs: appended; a child ``ro:``/``rw:`` of a path drops the parent's ``deny:`` or ``cache:``
    of that same normalized path (and a child ``rw:`` also drops a parent ``deny-write:``).
    network and env: unions, ``*`` wins. resources: per field, the child's value if set. shell:
    the child's if set. dangerously_skip_permissions, audit, trace: OR. agent_settings: per
    key, the child wins. persistence_guards, clipboard: the child's if it sets it. tools: union.
    """
    home = home or user_home()
    child_paths = {r.normalized(home): r.mode for r in child.fs if r.mode in ("ro", "rw")}

    def dropped(rule: FsRule) -> bool:
        mode = child_paths.get(rule.normalized(home))
        return (rule.mode in ("deny", "cache") and mode is not None) or (
            rule.mode == "deny-write" and mode == "rw"
        )

    fs: list[FsRule] = []
    seen: set[tuple[str, str]] = set()
    for rule in [*(r for r in parent.fs if not dropped(r)), *child.fs]:
        key = (rule.mode, rule.normalized(home))
        if key not in seen:
            seen.add(key)
            fs.append(rule)
    return EggConfig(
        base=None,
        fs=fs,
        network=merge_network(parent.network, child.network),
        env=merge_env(parent.env, child.env),
        resources=Resources(
            cpu=_child_wins(parent.resources.cpu, child.resources.cpu),
            memory=_child_wins(parent.resources.memory, child.resources.memory),
            max_fds=_child_wins(parent.resources.max_fds, child.resources.max_fds),
            max_pids=_child_wins(parent.resources.max_pids, child.resources.max_pids),
            cpu_per_process=_child_wins(
                parent.resources.cpu_per_process, child.resources.cpu_per_process
            ),
        ),
        shell=_child_wins(parent.shell, child.shell),
        dangerously_skip_permissions=(
            parent.dangerously_skip_permissions or child.dangerously_skip_permissions
        ),
        audit=parent.audit or child.audit,
        trace=parent.trace or child.trace,
        agent_settings=tuple({**dict(parent.agent_settings), **dict(child.agent_settings)}.items()),
        persistence_guards=(
            child.persistence_guards
            if "persistence_guards" in child.present
            else parent.persistence_guards
        ),
        clipboard=child.clipboard if "clipboard" in child.present else parent.clipboard,
        tools=_union(parent.tools, child.tools),
        present=(parent.present | child.present) - {"base"},
        source=child.source,
    )


def _child_wins(parent: Any, child: Any) -> Any:
    return parent if child is None else child


def _union(a: Iterable[Any], b: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys([*a, *b]))


def merge_network(parent: NetworkConfig, child: NetworkConfig) -> NetworkConfig:
    domains = (
        ("*",)
        if parent.unrestricted or child.unrestricted
        else _union(parent.domains, child.domains)
    )
    merged = NetworkConfig(
        domains=domains,
        local_ports=_union(parent.local_ports, child.local_ports),
        mode=_child_wins(parent.mode, child.mode),
        log=_child_wins(parent.log, child.log),
        agent_domains=_child_wins(parent.agent_domains, child.agent_domains),
    )
    return attrs.evolve(merged, shape=_network_shape(merged, parent.shape, child.shape))


def _network_shape(net: NetworkConfig, *shapes: str) -> str:
    if net.needs_mapping or "mapping" in shapes:
        return "mapping"
    if net.unrestricted:
        return "star"
    if net.domains:
        return "list"
    return "none" if any(s != "absent" for s in shapes) else "absent"


def merge_env(parent: EnvConfig, child: EnvConfig) -> EnvConfig:
    if parent.everything or child.everything:
        return EnvConfig(names=("*",), shape="star")
    names = _union(parent.names, child.names)
    absent = parent.shape == child.shape == "absent"
    return EnvConfig(names=names, shape="absent" if absent and not names else "list")


# --- resolution of base chains -----------------------------------------------------------------
