"""The host side of a Seatbelt launch: resource limits, the filtering proxy and the filtered
ssh agent it serves.

Seatbelt has no resource controls and no network namespace, so these run outside the profile:
rlimits are set in the child between fork and exec (``sandbox-exec`` then execs the command, which
inherits them), and the filtering proxy listens on the host's loopback, where the profile lets the
command reach its port and nothing else.
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core.api import EffectivePolicy, EnforcementError, Prepared

from ..ssh import agent as ssh_agent

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
#: seconds between the CPU limit's SIGXCPU and its SIGKILL, as linux-ns does
CPU_GRACE = 5


@attrs.frozen
class Limit:
    """One rlimit to set in the child: ``resource.RLIMIT_*``, its values, and the egg.yaml key."""

    resource: int
    soft: int
    hard: int
    key: str


def limits(policy: EffectivePolicy) -> list[Limit]:
    """The rlimits ``policy`` asks for (max_fds -> NOFILE, cpu_per_process -> CPU); memory, pids
    and the session's CPU time have none on macOS that bound a session, so the platform does not
    claim them."""
    import resource

    found: list[Limit] = []
    if policy.max_fds is not None:
        found.append(Limit(resource.RLIMIT_NOFILE, policy.max_fds, policy.max_fds, "max_fds"))
    if policy.cpu_per_process_seconds is not None:
        soft = max(1, math.ceil(policy.cpu_per_process_seconds))
        found.append(Limit(resource.RLIMIT_CPU, soft, soft + CPU_GRACE, "cpu_per_process"))
    return found


def fit_to_host(wanted: list[Limit]) -> list[Limit]:
    """Each limit within this host's hard limit (an unprivileged process cannot raise it).

    A soft limit above the host's hard limit cannot be enforced as asked: that is an
    EnforcementError, never a silently weaker limit. Only the CPU grace period may shrink.
    """
    import resource

    fitted: list[Limit] = []
    for limit in wanted:
        _, host_hard = resource.getrlimit(limit.resource)
        if host_hard == resource.RLIM_INFINITY or limit.hard <= host_hard:
            fitted.append(limit)
        elif limit.soft <= host_hard:
            fitted.append(attrs.evolve(limit, hard=host_hard))
        else:
            raise EnforcementError(
                f"resources.{limit.key} asks for {limit.soft}, above this host's hard limit "
                f"{host_hard}; lower it or raise the limit (launchctl limit)",
                platform="macos-seatbelt",
            )
    return fitted


def child_setup(wanted: list[Limit], *, new_session: bool) -> Callable[[], None] | None:
    """What runs in the child before exec: rlimits, and without a terminal a new session (no
    controlling terminal means no TIOCSTI into the user's terminal).

    The proxy thread may be running when the child forks, so the function does nothing but two
    plain system calls with values computed here, in the parent (no imports, no locks).
    """
    if not wanted and not new_session:
        return None
    import resource

    setrlimit = resource.setrlimit
    values = [(limit.resource, (limit.soft, limit.hard)) for limit in wanted]

    def setup() -> None:
        if new_session:
            os.setsid()
        for which, value in values:
            setrlimit(which, value)

    return setup


def cpu_exit_reason(code: int) -> str | None:
    if code == 128 + signal.SIGXCPU or code == -signal.SIGXCPU:
        return "killed by the per-process CPU-time limit (resources.cpu_per_process)"
    return None


def start_proxy(
    policy: EffectivePolicy,
    network_log: Path,
    prepared: Prepared,
    transport: Any = None,
    agent: tuple[Path, Sequence[str]] | None = None,
) -> int:
    """Start the filtering proxy on 127.0.0.1 (a free port); point the proxy variables at it.
    With ``agent`` (a socket path, the allowed hosts' known_hosts lines), the same thread
    serves egg's filtered ssh agent there, for ``prepared.env``'s ``SSH_AUTH_SOCK``, which
    then names it.

    Returns the port; ``prepared`` stops the proxy on cleanup. ``NO_PROXY`` names loopback
    (:data:`egg_core.netproxy.NO_PROXY_INSIDE`): the profile admits only the forwarded ports there.
    """
    from egg_core.api.platform import (
        NO_PROXY_INSIDE,
        DecisionLog,
        FilteringProxy,
        NetworkRules,
        ProxyThread,
    )

    rules = NetworkRules(domains=policy.domains, local_ports=policy.local_ports, mode=policy.mode)
    proxy = FilteringProxy(
        rules,
        DecisionLog(network_log),
        resolver=transport.resolver if transport else None,
        connector=transport.connector if transport else None,
        head_timeout=transport.head_timeout if transport else None,
    )
    served = None
    if agent is not None:
        path, host_keys = agent
        upstream = prepared.env[ssh_agent.SSH_AUTH_SOCK]
        served = (path, ssh_agent.handler(policy, host_keys, upstream, proxy.log))
        prepared.env[ssh_agent.SSH_AUTH_SOCK] = str(path)
    thread = ProxyThread(proxy, None, {}, tcp=("127.0.0.1", 0), agent=served)
    prepared.add_cleanup(thread.stop)
    thread.start()
    if thread.port is None:
        raise EnforcementError("the filtering proxy did not start", platform="macos-seatbelt")
    url = f"http://127.0.0.1:{thread.port}"
    for variable in PROXY_VARIABLES:
        prepared.env[variable] = prepared.env[variable.lower()] = url
    prepared.env["NO_PROXY"] = prepared.env["no_proxy"] = NO_PROXY_INSIDE
    return thread.port


def proxy_variable_names() -> list[str]:
    """The variables :func:`start_proxy` sets, for ``egg explain``."""
    names = [*PROXY_VARIABLES, "NO_PROXY"]
    return sorted({*names, *(n.lower() for n in names)})
