"""linux-ns's network: the in-namespace bridge's ports, the host-side filtering proxy the bridge
forwards to, and the part of a launch's exec-cache recipe that starts them again on a hit.

A sandbox with a network namespace of its own reaches nothing but the sockets in its ``net``
directory: the bridge (``bridge.py``, run inside as the command's parent) listens on loopback
ports and carries each connection to one of them — the proxy's (the allowlist, enforced and
logged by :class:`egg_core.netproxy.FilteringProxy` on the host) or a forwarded local port's.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from egg_core.api import EffectivePolicy, Launch, Prepared
from egg_core.api.platform import NEED_FILTERED, NEED_FULL, NEED_NONE, observe

from ..ssh import agent as ssh_agent
from ..ssh.agent import SSH_AUTH_SOCK
from . import bwrap as bw

#: the proxy's port inside the namespace, unless a forwarded local port takes it
PROXY_PORT = 3128
BRIDGE = Path(bw.__file__).with_name("bridge.py")
#: what the sandbox runs: the bridge compiled for the interpreter that runs it (a script given
#: as source is compiled on every start, about 0.7 ms of every launch with a network)
BRIDGE_INSIDE = "bridge.pyc"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
#: the filtered ssh agent's socket, beside the proxy's
AGENT_SOCKET = "agent.sock"
AGENT_INSIDE = f"{bw.NET_DIR_INSIDE}/{AGENT_SOCKET}"


def proxy_port(local_ports: tuple[int, ...]) -> int:
    """The in-namespace proxy port: 3128 unless a forwarded local port already takes it."""
    port = PROXY_PORT
    while port in local_ports:
        port += 1
    return port


def plan(policy: EffectivePolicy) -> tuple[list[str], dict[int, str]]:
    """(bridge --listen options, {port: socket name}) for a policy with a network namespace."""
    if policy.network_need in (NEED_NONE, NEED_FULL):
        return [], {}
    listens: list[str] = []
    sockets: dict[int, str] = {}
    if policy.network_need == NEED_FILTERED or policy.mode == "observe":
        port = proxy_port(policy.local_ports)
        sockets[port] = "proxy.sock"
    for local in policy.local_ports:
        sockets[local] = f"port-{local}.sock"
    for port, name in sockets.items():
        listens += ["--listen", f"{port}={bw.NET_DIR_INSIDE}/{name}"]
    return listens, sockets


def bridged(listens: list[str], argv: list[str]) -> list[str]:
    """``argv`` run under the bridge, listening as ``listens`` says (see :func:`plan`)."""
    # The bridge is copied next to the sockets (start) and runs with the interpreter's real
    # path: egg may be installed where the sandbox cannot see it (a checkout under /tmp).
    python = observe.realpath(sys.executable)
    return [python, "-I", "-S", f"{bw.NET_DIR_INSIDE}/{BRIDGE_INSIDE}", *listens, "--", *argv]


def kept_bridge(cache_dir: Path) -> Path:
    """Where the compiled bridge is kept: named after its source and this interpreter's
    bytecode, so that a change of either makes another."""
    import hashlib
    import importlib.util

    key = hashlib.sha256(importlib.util.MAGIC_NUMBER + BRIDGE.read_bytes()).hexdigest()[:16]
    return cache_dir / f"bridge-{key}.pyc"


def compiled_bridge(cache_dir: Path, net_dir: Path) -> Path:
    """The bridge compiled, kept in ``cache_dir`` (``$EGG_HOME/cache``, which no sandbox sees)
    under a name of its source's and this interpreter's, and copied into ``net_dir``; returns
    the kept file (the copy when it cannot be kept)."""
    import py_compile

    kept = kept_bridge(cache_dir)
    copy = net_dir / BRIDGE_INSIDE
    try:
        if not kept.is_file():
            cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = kept.with_name(f".{kept.name}.{os.getpid()}")
            py_compile.compile(str(BRIDGE), cfile=str(tmp), doraise=True)
            os.replace(tmp, kept)
        shutil.copyfile(kept, copy)
        return kept
    except (OSError, py_compile.PyCompileError):
        py_compile.compile(str(BRIDGE), cfile=str(copy), doraise=True)
        return copy


def start(
    launch: Launch,
    policy: EffectivePolicy,
    sockets: dict[int, str],
    prepared: Prepared,
    host_keys: Sequence[str] = (),
) -> Path:
    """Serve the proxy (and the forwards, and the filtered ssh agent, which may bind sessions
    to ``host_keys``, the allowed hosts' known_hosts lines) for this launch."""
    from egg_core.api.platform import (  # asyncio: only launches that filter pay for it
        NO_PROXY_INSIDE,
        DecisionLog,
        FilteringProxy,
        NetworkRules,
        ProxyThread,
    )

    # in the run's own directory however deep $EGG_HOME is (the proxy binds through
    # /proc/self/fd when the path is too long for a socket): never in a shared /tmp
    net_dir = launch.work_dir / "net"
    net_dir.mkdir(mode=0o700, exist_ok=True)
    compiled_bridge(launch.egg_home / "cache", net_dir)
    proxy_sock = None
    port_sockets: dict[int, Path] = {}
    for port, name in sockets.items():
        if name == "proxy.sock":
            proxy_sock = net_dir / name
            inside = f"http://127.0.0.1:{port}"
            for variable in PROXY_VARIABLES:
                prepared.env[variable] = inside
                prepared.env[variable.lower()] = inside
            prepared.env["NO_PROXY"] = prepared.env["no_proxy"] = NO_PROXY_INSIDE
        else:
            port_sockets[port] = net_dir / name
    log = DecisionLog(launch.network_log or launch.work_dir / "network.log")
    rules = NetworkRules(domains=policy.domains, local_ports=policy.local_ports, mode=policy.mode)
    transport = launch.network_transport
    proxy = FilteringProxy(
        rules,
        log,
        resolver=transport.resolver if transport else None,
        connector=transport.connector if transport else None,
        head_timeout=transport.head_timeout if transport else None,
    )
    agent = None
    if proxy_sock is not None and ssh_agent.wanted(prepared.env):
        agent = (
            net_dir / AGENT_SOCKET,
            ssh_agent.handler(policy, host_keys, prepared.env[SSH_AUTH_SOCK], log),
        )
        prepared.env[SSH_AUTH_SOCK] = AGENT_INSIDE
    elif SSH_AUTH_SOCK in prepared.env:
        del prepared.env[SSH_AUTH_SOCK]  # the host's socket is unreachable: no agent inside
    thread = ProxyThread(proxy, proxy_sock or net_dir / "proxy.sock", port_sockets, agent=agent)
    thread.start()
    prepared.add_cleanup(thread.stop)
    return net_dir


def offer(launch: Launch, prepared: Prepared, net_dir: Path, sockets: dict[int, str]) -> None:
    """The network part of the recipe: the cached launch's runner binds the proxy's sockets
    in a fresh ``net`` directory of its own and serves them under the same rules from a
    child process (:mod:`egg_plugins.platforms.linux.fastnet`)."""
    assert prepared.recipe is not None
    policy = launch.policy
    observe.content(str(BRIDGE))
    kept = kept_bridge(launch.egg_home / "cache")
    observe.content(str(kept))
    prepared.recipe["runner"] = "egg_plugins.platforms.linux.fastnet:run"
    prepared.recipe["network"] = {
        "net_dir": str(net_dir),
        "bridge": str(kept),
        "bridge_name": BRIDGE_INSIDE,
        "ports": {port: name for port, name in sockets.items() if name != "proxy.sock"},
        "rules": {
            "domains": list(policy.domains),
            "local_ports": list(policy.local_ports),
            "mode": policy.mode,
        },
        # None: the launch directory's own, as the full path's (launch.work_dir)
        "log": str(launch.network_log) if launch.network_log else None,
    }
