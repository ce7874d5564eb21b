"""Resolve egg.yaml + an agent profile into the effective policy, with provenance for every hole.

The sandbox a user reviews is their egg.yaml *plus* what egg adds for the agent. Every addition is
recorded as a :class:`DrilledHole` in one of three lists:

- ``drilled``: straight from the agent's profile (its API domains, its config directory, its key
  variables), each with the profile's reason;
- ``derived``: computed from other settings — a provider URL's exact host replaces the vendor
  domains, a loopback provider URL becomes a forwarded local port, ollama's server port;
- ``suppressed``: holes the profile asked for that the user turned off (``agent_domains: none``)
  or that the user's own ``deny:`` rules override.

:func:`resolve_policy` is a pure function of its arguments (the config, the profile, and the host
facts passed in), so ``egg explain`` can show exactly what ``egg run`` would enforce.

Why one module of this size: the effective policy's model and the one function that produces
it; every attribution rule (which hole, which reason) is read in one place, as ``egg explain``
shows them. Host observations are :class:`HostFacts`, made apart (:func:`observe_host`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from egg_core import capabilities as caps
from egg_core import observe, seeds
from egg_core.config import EggConfig
from egg_core.converters import to_tuple
from egg_core.pathrules import MODE_RANK, Mode
from egg_core.pathrules import under as _under
from egg_core.profiles import AgentProfile, EnvDefault, Grant
from egg_core.sshagent import ssh_agent_socket_paths

NEED_NONE = "none"
NEED_LOCAL = "local"
NEED_FILTERED = "https-filtered"
NEED_FULL = "full"

#: host control sockets that hand out root-equivalent power; always masked
CONTROL_SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    "/run/crio/crio.sock",
    "/var/run/crio/crio.sock",
    "/var/lib/lxd/unix.socket",
    "/var/snap/lxd/common/lxd/unix.socket",
    "/var/lib/incus/unix.socket",
)
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
    #: the host tools the sandbox may call (egg_core.tools), by name
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


def _abs(path: str, home: Path, cwd: Path) -> str:
    expanded = str(home) + path[1:] if path == "~" or path.startswith("~/") else path
    return os.path.normpath(os.path.join(cwd, expanded))


def _provider_target(url: str) -> tuple[str, int | None] | None:
    """(host, port) of a provider URL or ``host:port`` value; None if unparseable."""
    text = url.strip()
    if not text:
        return None
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname.lower(), port


def _is_loopback(host: str) -> bool:
    from egg_core.loopback import is_loopback

    return is_loopback(host)


def protected_paths(
    config_files: Sequence[str | os.PathLike[str]],
    egg_home: Path,
    launcher: Iterable[str] = (),
    cwd: str | os.PathLike[str] | None = None,
) -> list[FsEntry]:
    """What the sandbox may never write (and $EGG_HOME, which it may not even read).

    Threat I, unconditional: no config (``base: none`` included) can take these away. A
    missing ``./egg.yaml`` in ``cwd`` is held by an empty placeholder (which discovery reads as
    "no file"): a sandbox that created it would write the policy of the next run.
    """
    entries = [
        FsEntry(
            "deny",
            os.path.normpath(egg_home),
            f"{EGG_SOURCE}: $EGG_HOME holds session tokens, bases and tools",
        )
    ]
    for path in config_files:
        entries.append(
            FsEntry("deny-write", os.path.abspath(path), f"{EGG_SOURCE}: a config of this session")
        )
    if cwd is not None:
        local = os.path.join(os.path.abspath(cwd), "egg.yaml")
        if not any(os.path.abspath(path) == local for path in config_files):
            entries.append(
                FsEntry(
                    "deny-write",
                    local,
                    f"{EGG_SOURCE}: the config the next egg command here would read",
                    seed="",
                )
            )
    for path in launcher:
        entries.append(FsEntry("deny-write", path, f"{EGG_SOURCE}: the egg launcher/installation"))
    return entries


def launcher_paths(environ: Mapping[str, str]) -> list[str]:
    """The egg console script(s) and the installation they run (venv, package dirs)."""
    import importlib.util

    found: list[str] = []
    for prefix in {sys.prefix, sys.exec_prefix}:
        if prefix not in ("/", "/usr", "/usr/local"):
            found.append(observe.realpath(prefix))
    # every egg on PATH, trusted or not: protecting is not running
    search = os.pathsep.join(
        p for p in environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p)
    )
    script = observe.which("egg", search) if search else None
    if script:
        found += [os.path.abspath(script), observe.realpath(script)]
    # egg's own package (its plugins' code, the built-ins' too, is egg_core.plugincode's)
    spec = importlib.util.find_spec(__name__.partition(".")[0])
    if spec is not None and spec.submodule_search_locations:
        found += [observe.realpath(p) for p in spec.submodule_search_locations]
    unique = dict.fromkeys(os.path.normpath(p) for p in found)
    # drop entries inside another entry
    return [p for p in unique if not any(q != p and _under(p, q) for q in unique)]


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


@attrs.frozen(kw_only=True)
class HostFacts:
    """What resolution needs to know about the host, observed apart from it so that
    :func:`resolve_policy` itself is a pure function of its arguments (and the exec cache can
    record exactly these observations)."""

    #: live ssh-agent sockets (SSH_AUTH_SOCK and the usual places; they are globbed)
    ssh_agent_sockets: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: container-engine control sockets that exist on this host
    control_sockets: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)


def observe_host(home: str | os.PathLike[str], environ: Mapping[str, str]) -> HostFacts:
    """The host observations :func:`resolve_policy` rests on (see :class:`HostFacts`)."""
    return HostFacts(
        ssh_agent_sockets=[str(s) for s in ssh_agent_socket_paths(environ, Path(home))],
        control_sockets=[sock for sock in CONTROL_SOCKETS if observe.lexists(sock)],
    )


def resolve_policy(
    config: EggConfig,
    profile: AgentProfile,
    *,
    home: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    environ: Mapping[str, str],
    protected: Sequence[FsEntry] = (),
    skip_permissions: bool = False,
    platform_name: str | None = None,
    host: HostFacts | None = None,
) -> EffectivePolicy:
    """Merge ``config`` with ``profile``; attribute every automatic addition. Pure, given
    ``host`` (observed here when not given: :func:`observe_host`).

    :param environ: the host environment (provider URLs and relocating variables are read from
        it; no value ends up in the policy).
    :param protected: egg's own protections (see :func:`protected_paths`).
    :param platform_name: ``sys.platform`` whose platform-specific variables apply.
    """
    home_p, cwd_p = Path(home), Path(cwd)
    if host is None:
        host = observe_host(home_p, environ)
    agent = profile.name
    drilled: list[DrilledHole] = []
    derived: list[DrilledHole] = []
    suppressed: list[DrilledHole] = []

    # -- filesystem
    fs = [FsEntry(r.mode, _abs(r.path, home_p, cwd_p), r.source or "egg.yaml") for r in config.fs]
    denied = [e.path for e in fs if e.mode == "deny"]
    relocated = relocations(profile, str(home_p), environ)
    agent_dirs: list[tuple[Grant, Mode]] = [(g, "rw") for g in profile.write_dirs]
    agent_dirs += [(g, "rw-prefix") for g in profile.write_prefix_dirs]
    for grant, mode in agent_dirs:
        path = home_path(grant.value, str(home_p), relocated)
        if not path:
            continue  # anchored at a variable that is not set
        if mode == "rw-prefix" and path != str(home_p / grant.value):
            mode = "rw"  # moved: its siblings there are not the agent's
        blocker = next((d for d in denied if _under(path, d) and d != "/"), None)
        hole = DrilledHole("write_dir", path, agent, grant.reason)
        if blocker is not None:
            suppressed.append(
                attrs.evolve(hole, reason=f"{grant.reason}; denied by deny:{blocker}")
            )
            continue
        fs.append(FsEntry(mode, path, f"agent:{agent}"))
        drilled.append(hole)

    def agent_path(grant: Grant, kind: str) -> str | None:
        """The grant's path, its hole drilled; None (suppressed if denied) when it has none."""
        path = home_path(grant.value, str(home_p), relocated)
        if not path:
            return None
        hole = DrilledHole(kind, path, agent, grant.reason)
        if any(_under(path, d) for d in denied):
            suppressed.append(attrs.evolve(hole, reason=f"{grant.reason}; denied"))
            return None
        drilled.append(hole)
        return path

    for grant in profile.cache_dirs:
        if cache := agent_path(grant, "cache_dir"):
            fs.append(FsEntry("cache", cache, f"agent:{agent}"))
    home_files = [f for g in profile.home_files if (f := agent_path(g, "home_file"))]
    ssh_dir = str(home_p / ".ssh")
    ssh_denied = any(_under(ssh_dir, d) for d in denied)

    # -- environment names
    config_env = tuple(n for n in config.env.names if n != "*")
    env_all = config.env.everything
    agent_env = [g.value for g in profile.env_vars]
    platform = platform_name or sys.platform
    agent_env += [p.name for p in profile.platform_env if p.platform == platform]
    # exactly what egg.yaml lists (the built-in default: config.DEFAULT_ENV) and
    # what the agent's profile drills: ``base: {env: none}`` means none of the host's others
    env_names = tuple(dict.fromkeys([*config_env, *agent_env]))
    if not env_all:
        for grant in profile.env_vars:
            if grant.value not in config_env:
                drilled.append(DrilledHole("env", grant.value, agent, grant.reason))
        for penv in profile.platform_env:
            if penv.platform == platform and penv.name not in config_env:
                drilled.append(DrilledHole("env", penv.name, agent, penv.reason))
    set_env = list(profile.set_env)
    if skip_permissions:
        set_env += profile.skip_permissions_env
    for default in set_env:
        drilled.append(DrilledHole("env", f"{default.name}={default.value}", agent, default.reason))
    env_explicit = tuple(dict.fromkeys([*config_env, *agent_env]))

    # ssh-agent sockets are masked when ~/.ssh is denied and the user did not opt in by name
    if ssh_denied and "SSH_AUTH_SOCK" not in config_env:
        for sock in host.ssh_agent_sockets:
            fs.append(
                FsEntry("deny", sock, f"{EGG_SOURCE}: live ssh-agent socket (~/.ssh is denied)")
            )
    for sock in host.control_sockets:
        fs.append(
            FsEntry("deny", sock, f"{EGG_SOURCE}: container-engine socket (root on the host)")
        )

    # -- network
    net = config.network
    domains: list[str] = []
    local_ports: list[int] = list(net.local_ports)
    need_full = net.unrestricted
    for domain in net.domains:
        if domain.startswith("["):  # [::1]:4000
            name, _, rest = domain[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
        elif domain.count(":") == 1:
            name, _, port = domain.rpartition(":")
        else:
            name, port = domain, ""
        if name and _is_loopback(name.lower()) and port.isdigit():
            derived.append(
                DrilledHole("local_port", port, agent, f"egg.yaml allows {domain}: forwarded")
            )
            local_ports.append(int(port))
        elif not _is_loopback(domain.lower()):
            domains.append(domain)
    if not need_full:
        provider = _provider_hole(profile, environ)
        if provider is None:
            for grant in profile.domains:
                hole = DrilledHole("domain", grant.value, agent, grant.reason)
                if net.agent_domains == "none":
                    suppressed.append(
                        attrs.evolve(hole, reason=f"{grant.reason}; agent_domains: none")
                    )
                elif grant.value not in domains:
                    drilled.append(hole)
                    domains.append(grant.value)
            for port_grant in profile.local_ports:
                derived.append(
                    DrilledHole("local_port", str(port_grant.port), agent, port_grant.reason)
                )
                local_ports.append(port_grant.port)
        else:
            # An explicit provider URL is authoritative: its exact host (or loopback port)
            # replaces the vendor's domains and default port.
            kind, value, reason = provider
            derived.append(DrilledHole(kind, value, agent, reason))
            if kind == "local_port":
                local_ports.append(int(value))
            else:
                domains.append(value)
            replaced = [(g.value, g.reason) for g in profile.domains]
            replaced += [(str(p.port), p.reason) for p in profile.local_ports]
            for grant_value, grant_reason in replaced:
                hole_kind = "local_port" if grant_value.isdigit() else "domain"
                suppressed.append(
                    DrilledHole(
                        hole_kind,
                        grant_value,
                        agent,
                        f"{grant_reason}; replaced by the provider URL",
                    )
                )
    local_ports = list(dict.fromkeys(local_ports))
    if need_full:
        need, domains, local_ports = NEED_FULL, ["*"], []
    elif domains:
        need = NEED_FILTERED
    elif local_ports:
        need = NEED_LOCAL
    else:
        need = NEED_NONE

    resources = config.resources
    return EffectivePolicy(
        agent=agent,
        profile=profile,
        home=str(home_p),
        cwd=str(cwd_p),
        fs=_order(fs),
        protected=tuple(protected),
        network_need=need,
        domains=tuple(dict.fromkeys(domains)),
        local_ports=tuple(local_ports),
        mode=net.mode or "enforce",
        env_all=env_all,
        env_names=env_names,
        env_explicit=env_explicit,
        config_env_names=config_env,
        set_env=tuple(set_env),
        ssh_denied=ssh_denied,
        cpu_seconds=resources.cpu_seconds,
        memory_bytes=resources.memory_bytes,
        max_fds=resources.max_fds,
        max_pids=resources.max_pids,
        cpu_per_process_seconds=resources.cpu_per_process_seconds,
        skip_permissions=skip_permissions or config.dangerously_skip_permissions,
        audit=config.audit,
        trace=config.trace,
        requires_sandbox=requires_sandbox(config, agent),
        persistence_guards=config.persistence_guards,
        clipboard=config.clipboard,
        tools=config.tools,
        home_files=tuple(home_files),
        relocated=tuple(relocated),
        drilled=drilled,
        derived=derived,
        suppressed=suppressed,
    )


def _provider_hole(
    profile: AgentProfile, environ: Mapping[str, str]
) -> tuple[str, str, str] | None:
    """An explicit provider URL in the host environment: (kind, value, reason) or None."""
    for var in profile.provider_url_vars:
        url = environ.get(var, "").strip()
        if not url:
            continue
        target = _provider_target(url)
        if target is None:
            continue
        host, port = target
        if _is_loopback(host):
            if port is None:
                continue
            return ("local_port", str(port), f"{var} points at this machine (port {port})")
        return ("domain", host, f"{var} routes the agent's API to {host}")
    return None


def _order(entries: list[FsEntry]) -> list[FsEntry]:
    """Shallow paths first, so a rule on a nested path applies on top of its parent's rule;
    at equal depth the more restrictive rule comes last and wins. Exact duplicates are dropped."""
    unique = list(dict.fromkeys(entries))
    keyed = sorted(
        enumerate(unique),
        key=lambda item: (
            0 if item[1].path == "/" else item[1].path.count("/"),
            MODE_RANK[item[1].mode],
            item[0],
        ),
    )
    return [entry for _, entry in keyed]
