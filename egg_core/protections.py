"""egg's own protections: what no egg.yaml can open to a sandbox, and the host facts resolution
masks (threat I, and the container-engine sockets that are root on the host).

:func:`protected_paths` is what every launch carries on top of its policy — ``$EGG_HOME`` hidden,
the session's configs and the ``egg.yaml`` the next command here would read held read-only, egg's
launcher and installation read-only (:func:`launcher_paths`). :func:`observe_host` observes, apart
from resolution so that resolution stays a pure function, the sockets resolution masks: live
ssh-agent sockets and container-engine control sockets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from egg_core import observe
from egg_core.converters import to_tuple
from egg_core.pathrules import under as _under
from egg_core.policy import EGG_SOURCE, FsEntry
from egg_core.sshagent import ssh_agent_socket_paths

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
    """The egg command(s) on PATH and the installation they run (venv, package dirs)."""
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


@attrs.frozen(kw_only=True)
class HostFacts:
    """What resolution needs to know about the host, observed apart from it so that
    :func:`~egg_core.resolution.resolve_policy` itself is a pure function of its arguments (and
    the exec cache can record exactly these observations)."""

    #: live ssh-agent sockets (SSH_AUTH_SOCK and the usual places; they are globbed)
    ssh_agent_sockets: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: container-engine control sockets that exist on this host
    control_sockets: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)


def observe_host(home: str | os.PathLike[str], environ: Mapping[str, str]) -> HostFacts:
    """The host observations :func:`~egg_core.resolution.resolve_policy` rests on (see
    :class:`HostFacts`)."""
    return HostFacts(
        ssh_agent_sockets=[str(s) for s in ssh_agent_socket_paths(environ, Path(home))],
        control_sockets=[sock for sock in CONTROL_SOCKETS if observe.lexists(sock)],
    )
