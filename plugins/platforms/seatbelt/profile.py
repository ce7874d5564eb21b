"""An :class:`~egg_core.policy.EffectivePolicy` as a Seatbelt profile for ``sandbox-exec -p``.

Shape (SBPL gives precedence to the *later* of two matching rules, so order is the mechanism):

1. ``(allow default)``: Seatbelt is the boundary for files, network and the escape set below;
   everything else (Mach services, IPC, sysctl reads) stays open, because a deny-default profile
   for the whole of macOS breaks common toolchains often (the public generators cited in
   :mod:`egg_plugins.platforms.macos_seatbelt` that start from ``(allow default)`` say so).
2. Network, by the policy's need: ``none`` -> ``(deny network*)``; ``local`` -> only the
   forwarded loopback ports, plus mDNSResponder so that ``localhost`` resolves; ``https-filtered``
   -> only the host-side filtering proxy's loopback port (and forwarded ports), no DNS (the proxy
   resolves); ``full`` -> no network rule except that host Unix sockets in the shared temp dirs
   (tmux, IDE and ssh-agent sockets live there) stay closed, as linux-ns's private ``/tmp`` does.
3. Files: every write denied, then what any program must write (devices, the shared temp dirs),
   then the policy's ``fs`` rules in their order (shallow paths first), then egg's protections.
   ``deny`` also denies ``connect()`` to Unix sockets under the path (a file rule does not stop
   ``connect()`` on macOS); ``rw-prefix`` becomes a regex anchored at the prefix.
4. The escape set (the counterpart of linux-ns's seccomp filter; see :data:`ESCAPE_SET`).
5. The session's own endpoints: the tool socket, the shared directory, the ssh route and the
   filtered ssh agent's socket (under ``$EGG_HOME``, which the protections deny: so, later).
6. The directories above every denied or protected path cannot be renamed, removed or cloned
   (renaming ``a/`` would bring ``a/secret`` out under a name no rule covers).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import attrs

from egg_core.api import EffectivePolicy, FsEntry
from egg_core.api.platform import NEED_FILTERED, NEED_FULL, NEED_LOCAL, NEED_NONE

from .paths import Probe, Resolve, ancestors, host_probe, lexical_resolve, spellings
from .sbpl import comment, prefix_regex, quote, rule

DNS_SOCKET = "/private/var/run/mDNSResponder"
PREVIEW_PORT = "<port>"

#: what any program writes whatever the policy says (linux-ns gives a private /tmp and a fresh /dev)
SCRATCH_WRITABLE = (
    ("literal", "/dev/null"),
    ("literal", "/dev/zero"),
    ("literal", "/dev/tty"),
    ("literal", "/dev/ptmx"),
    ("literal", "/dev/dtracehelper"),
    ("subpath", "/dev/fd"),
    ("regex", "^/dev/ttys[0-9]+$"),
    ("subpath", "/private/tmp"),
    ("subpath", "/private/var/tmp"),
    ("regex", "^/private/var/folders/[^/]+/[^/]+/T/"),
)

#: where host processes keep their Unix sockets (tmux, IDE helpers, launchd's ssh-agent)
SHARED_SOCKET_DIRS = ("/private/tmp", "/private/var/tmp", "/private/var/folders")

#: The escape set: (what it closes, with the linux-ns seccomp denial it stands for; its rules).
#: The Linux denials with no macOS counterpart are listed in the platform module.
ESCAPE_SET: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "other processes' info, argv and environment (pid namespace, /proc/<pid>/environ)",
        (
            "(deny process-info* (target others))",
            "(allow process-info* (target same-sandbox))",
            '(deny sysctl-read (sysctl-name-prefix "kern.procargs"))',
        ),
    ),
    (
        "signals to processes outside the sandbox (pid namespace)",
        ("(deny signal (target others))", "(allow signal (target same-sandbox))"),
    ),
    (
        "task ports of other processes (ptrace, process_vm_readv/writev)",
        (
            "(deny mach-priv-task-port (target others))",
            "(allow mach-priv-task-port (target same-sandbox))",
        ),
    ),
    (
        "mounting (mount, umount2, pivot_root, the new mount API)",
        ("(deny file-mount file-unmount)",),
    ),
    (
        "kernel extensions and firmware variables (init/finit/delete_module, kexec)",
        ("(deny system-kext*)", "(deny nvram*)"),
    ),
    (
        "packet capture and raw disks (bpf)",
        ('(deny file-read* file-write* (regex "^/dev/bpf") (regex "^/dev/r?disk"))',),
    ),
    (
        "setuid/setgid programs gain nothing (no_new_privs)",
        ("(deny process-exec* (require-any (file-mode #o4000) (file-mode #o2000)))",),
    ),
    (
        "hard links that alias a denied or read-only file into a writable dir",
        ("(deny file-link)",),
    ),
    (
        "programs started outside the sandbox (Launch Services, Apple Events, launchd jobs)",
        ("(deny lsopen)", "(deny appleevent-send)", "(deny job-creation)"),
    ),
)


@attrs.frozen(kw_only=True)
class ProfileRequest:
    """What the profile needs besides the policy; host access only through ``resolve``/``probe``."""

    #: the filtering proxy's loopback port; None in previews (``egg explain``), which show
    #: :data:`PREVIEW_PORT` instead, because the real port is picked when the proxy starts
    proxy_port: int | None = None
    tool_socket: str | None = None
    shared_dir: str | None = None
    #: the ssh route's directory (:mod:`egg_plugins.platforms.ssh.route`: its config, the
    #: ProxyCommand, the allowed hosts' known_hosts lines, the ssh/scp/sftp put first on PATH)
    ssh_route: str | None = None
    #: egg's filtered ssh agent's socket (:mod:`egg_core.agentfilter`), served by egg
    ssh_agent: str | None = None
    resolve: Resolve = attrs.field(default=lexical_resolve, eq=False)
    probe: Probe = attrs.field(default=host_probe, eq=False)


def uses_proxy(policy: EffectivePolicy) -> bool:
    """Whether the launch needs the filtering proxy (as linux-ns decides it)."""
    if policy.network_need in (NEED_NONE, NEED_FULL):
        return False
    return policy.network_need == NEED_FILTERED or policy.mode == "observe"


def build_profile(policy: EffectivePolicy, request: ProfileRequest) -> str:
    """The complete profile text; the same inputs always give the same text."""
    header = [
        "(version 1)",
        comment(f"egg: macos-seatbelt profile for {policy.agent}; later rules win"),
        "(allow default)",
    ]
    escapes = [
        comment("the escape set (what linux-ns's seccomp filter denies, where macOS has it)")
    ]
    for why, escape_rules in ESCAPE_SET:
        escapes += [comment(why), *escape_rules]
    sections = [
        header,
        _network(policy, request),
        _filesystem(policy, request),
        escapes,
        _session(request),
        _pinned(policy, request),
    ]
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


# -- network


def _network(policy: EffectivePolicy, request: ProfileRequest) -> list[str]:
    need = policy.network_need
    if need == NEED_FULL:
        return [
            comment("network: full; host Unix sockets in the shared temp dirs stay closed"),
            rule(
                "deny", ["network-outbound"], [_unix_socket(d, "dir") for d in SHARED_SOCKET_DIRS]
            ),
        ]
    out = [comment(f"network: {need}"), "(deny network*)"]
    if uses_proxy(policy):
        port = request.proxy_port if request.proxy_port is not None else PREVIEW_PORT
        out += [
            comment("the host-side filtering proxy: the only way to the allowed domains"),
            rule("allow", ["network-outbound"], [_loopback(port)]),
        ]
    if policy.local_ports:
        out += [
            comment("forwarded loopback ports"),
            rule("allow", ["network-outbound"], [_loopback(p) for p in policy.local_ports]),
        ]
    if need == NEED_LOCAL:
        out += [
            comment("name lookups (localhost) go through mDNSResponder on macOS"),
            rule("allow", ["network-outbound"], [_unix_socket(DNS_SOCKET, "file")]),
        ]
    return out


def _loopback(port: int | str) -> str:
    return f"(remote tcp {quote(f'localhost:{port}')})"


def _unix_socket(path: str, kind: str) -> str:
    inner = "path-literal" if kind == "file" else "subpath"
    return f"(remote unix-socket ({inner} {quote(path)}))"


# -- files


def _filesystem(policy: EffectivePolicy, request: ProfileRequest) -> list[str]:
    out = [
        comment("files: reads allowed, writes denied, except as the rules below say"),
        "(deny file-write*)",
        comment("what every program writes: devices and the shared temp dirs"),
        rule("allow", ["file-write*"], [_filter(kind, p) for kind, p in SCRATCH_WRITABLE]),
    ]
    for entry in policy.fs:
        out += _entry(entry, request)
    if policy.protected:
        out.append(comment("egg's protections: applied last, never overridden"))
        for entry in policy.protected:
            out += _entry(entry, request)
    return out


def _filter(kind: str, value: str) -> str:
    """``(literal "...")``, ``(subpath "...")`` or ``(regex "...")`` with ``value`` quoted."""
    return f"({kind} {quote(value)})"


def _path_filters(names: Iterable[str], kind: str) -> list[str]:
    return [_filter("literal" if kind == "file" else "subpath", n) for n in names]


def _entry(entry: FsEntry, request: ProfileRequest) -> list[str]:
    head = comment(f"{entry.mode} ({entry.source})")
    if entry.path == "/" and entry.mode in ("ro", "deny-write"):
        return [comment(f"{entry.mode} / ({entry.source}): already the base rule")]
    if entry.path == "/" and entry.mode == "deny":
        return [comment(f"deny / ({entry.source}): jail mode is not supported by macos-seatbelt")]
    kind = request.probe(request.resolve(entry.path))
    names = spellings(entry.path, request.resolve)
    denied = spellings(entry.path, request.resolve, data_volume=True)
    if entry.mode == "rw":
        return [head, rule("allow", ["file-read*", "file-write*"], _path_filters(names, kind))]
    if entry.mode == "cache":
        # Seatbelt filters paths, it cannot put another directory at one: on macOS a cache rule
        # is the host's own cache (README: Platforms)
        note = comment("the host's own cache here: Seatbelt cannot mount a sandbox-only one")
        return [
            head,
            note,
            rule("allow", ["file-read*", "file-write*"], _path_filters(names, kind)),
        ]
    if entry.mode == "rw-prefix":
        regexes = [f"(regex {quote(prefix_regex(n))})" for n in names]
        return [head, rule("allow", ["file-read*", "file-write*"], regexes)]
    if entry.mode == "ro":
        return [
            head,
            rule("allow", ["file-read*"], _path_filters(names, kind)),
            rule("deny", ["file-write*"], _path_filters(denied, kind)),
        ]
    if entry.mode == "deny-write":
        return [head, rule("deny", ["file-write*"], _path_filters(denied, kind))]
    if entry.mode == "deny":
        return [
            head,
            rule("deny", ["file-read*", "file-write*"], _path_filters(denied, kind)),
            rule("deny", ["network-outbound"], [_unix_socket(n, kind) for n in denied]),
        ]
    raise ValueError(f"unknown filesystem mode {entry.mode!r} for {entry.path!r}")


# -- the session and the pinned ancestors


def _session(request: ProfileRequest) -> list[str]:
    out: list[str] = []
    if request.tool_socket:
        sock = request.resolve(request.tool_socket)
        tools = os.path.dirname(sock)
        out += [
            comment(
                "the run's tool socket and its shims, read-only (egg tool-call, egg.yaml tools:)"
            ),
            rule("allow", ["network-outbound"], [_unix_socket(sock, "file")]),
            *_read_only_directory(tools),
        ]
    if request.ssh_route:
        route = request.resolve(request.ssh_route)
        out += [
            comment(
                "the ssh route, read-only: egg's ssh config and ProxyCommand (a CONNECT to the "
                "filtering proxy) and the allowed hosts' known_hosts lines"
            ),
            *_read_only_directory(route),
        ]
    if request.ssh_agent:
        agent = request.resolve(request.ssh_agent)
        out += [
            comment(
                "egg's filtered ssh agent (signs only logins to the allowed hosts' keys); the "
                "host's agent socket stays denied"
            ),
            rule("allow", ["network-outbound"], [_unix_socket(agent, "file")]),
            rule("allow", ["file-read*"], [_filter("literal", agent)]),
        ]
    if request.shared_dir:
        shared = request.resolve(request.shared_dir)
        out += [
            comment("the session's shared directory (browser-open requests)"),
            rule("allow", ["file-read*", "file-write*"], [_filter("subpath", shared)]),
        ]
    return out


def _read_only_directory(path: str) -> list[str]:
    """One of egg's own directories under the denied ``$EGG_HOME``, readable and not writable."""
    return [
        rule("allow", ["file-read*"], [_filter("subpath", path)]),
        rule("deny", ["file-write*"], [_filter("subpath", path)]),
    ]


def _pinned(policy: EffectivePolicy, request: ProfileRequest) -> list[str]:
    guarded = [
        name
        for entry in (*policy.fs, *policy.protected)
        if entry.mode in ("ro", "deny", "deny-write") and entry.path != "/"
        for name in spellings(entry.path, request.resolve, data_volume=True)
    ]
    above = ancestors(guarded)
    if not above:
        return []
    return [
        comment("directories above a denied or read-only path cannot be renamed or cloned away"),
        rule("deny", ["file-write-unlink", "file-clone"], [_filter("literal", a) for a in above]),
    ]
