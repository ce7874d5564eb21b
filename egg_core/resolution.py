"""Resolve egg.yaml + an agent profile into the effective policy, with provenance for every hole.

:func:`resolve_policy` is a pure function of its arguments (the config, the profile, and the host
facts passed in), so ``egg explain`` can show exactly what ``egg run`` would enforce. It runs in
named steps, each adding its holes (:class:`~egg_core.policy.DrilledHole`: drilled, derived or
suppressed, every one with its reason): the filesystem (egg.yaml's rules, the agent's directories
and files through them), the environment (the names the sandbox sees, the values the profile
sets), the host's sockets masked whatever egg.yaml says, and the network (egg.yaml's domains and
forwarded ports, the agent's, or an explicit provider URL's exact host instead); the resources
are egg.yaml's as they are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from egg_core.config.model import EggConfig
from egg_core.netrules import split_entry
from egg_core.pathrules import MODE_RANK, Mode
from egg_core.pathrules import under as _under
from egg_core.policy import (
    EGG_SOURCE,
    NEED_FILTERED,
    NEED_FULL,
    NEED_LOCAL,
    NEED_NONE,
    DrilledHole,
    EffectivePolicy,
    FsEntry,
    home_path,
    relocations,
    requires_sandbox,
)
from egg_core.profiles import AgentProfile, EnvDefault, Grant
from egg_core.protections import HostFacts, observe_host


@attrs.define
class _Holes:
    """What resolution added for the agent, as ``egg explain`` lists it (see
    :class:`~egg_core.policy.DrilledHole`)."""

    drilled: list[DrilledHole] = attrs.Factory(list)
    derived: list[DrilledHole] = attrs.Factory(list)
    suppressed: list[DrilledHole] = attrs.Factory(list)


@attrs.frozen
class _Filesystem:
    entries: list[FsEntry]
    home_files: list[str]
    relocated: list[tuple[str, str]]
    #: ~/.ssh is under a deny: rule (its live agent sockets are masked unless asked for)
    ssh_denied: bool


@attrs.frozen
class _Environment:
    everything: bool
    names: tuple[str, ...]
    explicit: tuple[str, ...]
    from_config: tuple[str, ...]
    set_env: tuple[EnvDefault, ...]


@attrs.frozen
class _Network:
    need: str
    domains: tuple[str, ...]
    local_ports: tuple[int, ...]


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
    ``host`` (observed here when not given: :func:`~egg_core.protections.observe_host`).

    :param environ: the host environment (provider URLs and relocating variables are read from
        it; no value ends up in the policy).
    :param protected: egg's own protections (see :func:`~egg_core.protections.protected_paths`).
    :param platform_name: ``sys.platform`` whose platform-specific variables apply.
    """
    home_p, cwd_p = Path(home), Path(cwd)
    if host is None:
        host = observe_host(home_p, environ)
    holes = _Holes()
    fs = _filesystem(config, profile, home_p, cwd_p, environ, holes)
    env = _environment(config, profile, platform_name or sys.platform, skip_permissions, holes)
    masks = _host_masks(host, fs.ssh_denied, env.from_config)
    network = _network(config, profile, environ, holes)
    resources = config.resources
    return EffectivePolicy(
        agent=profile.name,
        profile=profile,
        home=str(home_p),
        cwd=str(cwd_p),
        fs=_order([*fs.entries, *masks]),
        protected=tuple(protected),
        network_need=network.need,
        domains=network.domains,
        local_ports=network.local_ports,
        mode=config.network.mode or "enforce",
        env_all=env.everything,
        env_names=env.names,
        env_explicit=env.explicit,
        config_env_names=env.from_config,
        set_env=env.set_env,
        ssh_denied=fs.ssh_denied,
        cpu_seconds=resources.cpu_seconds,
        memory_bytes=resources.memory_bytes,
        max_fds=resources.max_fds,
        max_pids=resources.max_pids,
        cpu_per_process_seconds=resources.cpu_per_process_seconds,
        skip_permissions=skip_permissions or config.dangerously_skip_permissions,
        audit=config.audit,
        trace=config.trace,
        requires_sandbox=requires_sandbox(config, profile.name),
        persistence_guards=config.persistence_guards,
        clipboard=config.clipboard,
        tools=config.tools,
        home_files=tuple(fs.home_files),
        relocated=tuple(fs.relocated),
        drilled=holes.drilled,
        derived=holes.derived,
        suppressed=holes.suppressed,
    )


def _filesystem(
    config: EggConfig,
    profile: AgentProfile,
    home: Path,
    cwd: Path,
    environ: Mapping[str, str],
    holes: _Holes,
) -> _Filesystem:
    """egg.yaml's fs rules, then the agent's directories and files drilled through them (each
    one a deny: rule covers suppressed instead, with the rule named)."""
    agent = profile.name
    fs = [FsEntry(r.mode, _abs(r.path, home, cwd), r.source or "egg.yaml") for r in config.fs]
    denied = [e.path for e in fs if e.mode == "deny"]
    relocated = relocations(profile, str(home), environ)
    agent_dirs: list[tuple[Grant, Mode]] = [(g, "rw") for g in profile.write_dirs]
    agent_dirs += [(g, "rw-prefix") for g in profile.write_prefix_dirs]
    for grant, mode in agent_dirs:
        path = home_path(grant.value, str(home), relocated)
        if not path:
            continue  # anchored at a variable that is not set
        if mode == "rw-prefix" and path != str(home / grant.value):
            mode = "rw"  # moved: its siblings there are not the agent's
        blocker = next((d for d in denied if _under(path, d) and d != "/"), None)
        hole = DrilledHole("write_dir", path, agent, grant.reason)
        if blocker is not None:
            holes.suppressed.append(
                attrs.evolve(hole, reason=f"{grant.reason}; denied by deny:{blocker}")
            )
            continue
        fs.append(FsEntry(mode, path, f"agent:{agent}"))
        holes.drilled.append(hole)

    def agent_path(grant: Grant, kind: str) -> str | None:
        """The grant's path, its hole drilled; None (suppressed if denied) when it has none."""
        path = home_path(grant.value, str(home), relocated)
        if not path:
            return None
        hole = DrilledHole(kind, path, agent, grant.reason)
        if any(_under(path, d) for d in denied):
            holes.suppressed.append(attrs.evolve(hole, reason=f"{grant.reason}; denied"))
            return None
        holes.drilled.append(hole)
        return path

    for grant in profile.cache_dirs:
        if cache := agent_path(grant, "cache_dir"):
            fs.append(FsEntry("cache", cache, f"agent:{agent}"))
    home_files = [f for g in profile.home_files if (f := agent_path(g, "home_file"))]
    ssh_denied = any(_under(str(home / ".ssh"), d) for d in denied)
    return _Filesystem(fs, home_files, relocated, ssh_denied)


def _environment(
    config: EggConfig,
    profile: AgentProfile,
    platform: str,
    skip_permissions: bool,
    holes: _Holes,
) -> _Environment:
    """The variable names the sandbox sees: exactly what egg.yaml lists (the built-in default:
    config.DEFAULT_ENV) and what the agent's profile drills (``base: {env: none}`` means none of
    the host's others), and the values the profile sets."""
    agent = profile.name
    config_env = tuple(n for n in config.env.names if n != "*")
    env_all = config.env.everything
    agent_env = [g.value for g in profile.env_vars]
    agent_env += [p.name for p in profile.platform_env if p.platform == platform]
    if not env_all:
        for grant in profile.env_vars:
            if grant.value not in config_env:
                holes.drilled.append(DrilledHole("env", grant.value, agent, grant.reason))
        for penv in profile.platform_env:
            if penv.platform == platform and penv.name not in config_env:
                holes.drilled.append(DrilledHole("env", penv.name, agent, penv.reason))
    set_env = list(profile.set_env)
    if skip_permissions:
        set_env += profile.skip_permissions_env
    for default in set_env:
        holes.drilled.append(
            DrilledHole("env", f"{default.name}={default.value}", agent, default.reason)
        )
    names = tuple(dict.fromkeys([*config_env, *agent_env]))
    return _Environment(env_all, names, names, config_env, tuple(set_env))


def _host_masks(host: HostFacts, ssh_denied: bool, config_env: Sequence[str]) -> list[FsEntry]:
    """The host's sockets masked whatever egg.yaml says: live ssh-agent sockets when ~/.ssh is
    denied (and the user did not let SSH_AUTH_SOCK in by name), container-engine sockets always."""
    masks = []
    if ssh_denied and "SSH_AUTH_SOCK" not in config_env:
        why = f"{EGG_SOURCE}: live ssh-agent socket (~/.ssh is denied)"
        masks += [FsEntry("deny", sock, why) for sock in host.ssh_agent_sockets]
    why = f"{EGG_SOURCE}: container-engine socket (root on the host)"
    masks += [FsEntry("deny", sock, why) for sock in host.control_sockets]
    return masks


def _network(
    config: EggConfig, profile: AgentProfile, environ: Mapping[str, str], holes: _Holes
) -> _Network:
    """egg.yaml's domains (a loopback ``host:port`` among them is a forwarded port), then the
    agent's domains and ports — or, when an explicit provider URL is set, its exact host or
    loopback port instead of them — and the need that makes."""
    agent = profile.name
    net = config.network
    domains: list[str] = []
    local_ports: list[int] = list(net.local_ports)
    for domain in net.domains:
        name, port = split_entry(domain)  # [::1]:4000 too
        if name and _is_loopback(name.lower()) and port.isdigit():
            holes.derived.append(
                DrilledHole("local_port", port, agent, f"egg.yaml allows {domain}: forwarded")
            )
            local_ports.append(int(port))
        elif not _is_loopback(domain.lower()):
            domains.append(domain)
    if net.unrestricted:
        return _Network(NEED_FULL, ("*",), ())
    provider = _provider_hole(profile, environ)
    if provider is None:
        for grant in profile.domains:
            hole = DrilledHole("domain", grant.value, agent, grant.reason)
            if net.agent_domains == "none":
                holes.suppressed.append(
                    attrs.evolve(hole, reason=f"{grant.reason}; agent_domains: none")
                )
            elif grant.value not in domains:
                holes.drilled.append(hole)
                domains.append(grant.value)
        for port_grant in profile.local_ports:
            holes.derived.append(
                DrilledHole("local_port", str(port_grant.port), agent, port_grant.reason)
            )
            local_ports.append(port_grant.port)
    else:
        # An explicit provider URL is authoritative: its exact host (or loopback port)
        # replaces the vendor's domains and default port.
        kind, value, reason = provider
        holes.derived.append(DrilledHole(kind, value, agent, reason))
        if kind == "local_port":
            local_ports.append(int(value))
        else:
            domains.append(value)
        replaced = [(g.value, g.reason) for g in profile.domains]
        replaced += [(str(p.port), p.reason) for p in profile.local_ports]
        for grant_value, grant_reason in replaced:
            hole_kind = "local_port" if grant_value.isdigit() else "domain"
            holes.suppressed.append(
                DrilledHole(
                    hole_kind, grant_value, agent, f"{grant_reason}; replaced by the provider URL"
                )
            )
    ports = tuple(dict.fromkeys(local_ports))
    unique = tuple(dict.fromkeys(domains))
    need = NEED_FILTERED if unique else NEED_LOCAL if ports else NEED_NONE
    return _Network(need, unique, ports)


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
