"""The ``macos-seatbelt`` platform: ``sandbox-exec -p PROFILE command...`` with a generated profile.

The profile (see :mod:`egg_plugins.platforms.seatbelt.profile`) starts from ``(allow default)`` and
denies: reads of ``deny:`` paths (and ``connect()`` to Unix sockets under them); writes outside
``rw:`` paths (devices and the shared temp dirs stay writable); the network beyond what the
policy's need allows; and the escape set below. ``sandbox-exec`` execs the command directly, so
it gets exactly the filtered environment egg passes (no value is ever on the command line), and
rlimits set between fork and exec bind it.

Capabilities claimed, and why:
- ``fs.deny-read``, ``fs.restrict-write``: path rules, checked by the kernel on the resolved path;
  the profile names each path resolved (symlinks, and on macOS the letter case stored on disk),
  as written, and for denies on the Data volume, and the directories above a denied path cannot
  be renamed or cloned to bring its contents out under another name.
- ``net.none``, ``net.local``, ``net.filtered``, ``net.full``: ``(deny network*)`` with exceptions
  for forwarded loopback ports and the filtering proxy's port (host 127.0.0.1, a free port, see
  :meth:`egg_core.netproxy.FilteringProxy.start_tcp`). A client that ignores the proxy variables
  has no other route: enforcement, not cooperation. DNS (mDNSResponder) only in ``local`` mode,
  where ``localhost`` must resolve; never with the proxy (it resolves) or without network.
- ``syscall.filter``, as this set of SBPL denials for linux-ns's seccomp escape set:
  ptrace/process_vm_* -> task ports of other processes (``mach-priv-task-port``); the pid
  namespace and /proc/<pid>/environ -> ``process-info*`` and signals only within the sandbox,
  ``kern.procargs`` unreadable; mount/umount2/pivot_root -> ``file-mount``/``file-unmount``;
  init_module/finit_module/delete_module/kexec -> ``system-kext*`` and ``nvram*``; bpf ->
  ``/dev/bpf*`` (and raw disks); no_new_privs -> no exec of setuid/setgid programs; hard links
  (the EXDEV bind mounts give on Linux) -> ``file-link``. macOS-only escapes with no syscall
  counterpart are denied too: ``lsopen``, ``appleevent-send`` and ``job-creation`` start programs
  outside any sandbox (linux-ns hides D-Bus/systemd's sockets for the same reason).
  No macOS counterpart (nothing to deny): setns/unshare/clone namespace flags, io_uring,
  userfaultfd, iopl/ioperm/modify_ldt, open_by_handle_at, lookup_dcookie, uselib, nfsservctl,
  TIOCLINUX. Root-only on macOS and not expressed (their operation names vary across releases):
  reboot, swapon/swapoff, acct, clock setters, quotactl. keyctl's counterpart, the Keychain, is
  what agents log in with and stays reachable. TIOCSTI has no portable SBPL rule: without a
  terminal the command gets a new session (no controlling terminal, so TIOCSTI fails); with one
  (``egg exec`` in a terminal) it is NOT blocked on macOS.
- ``limit.cpu-per-process``, ``limit.fds``: RLIMIT_CPU (SIGXCPU, then SIGKILL 5 s later) and
  RLIMIT_NOFILE.
- ``env.filter``: the environment egg passes is the only one the command sees.
Not claimed: ``limit.cpu`` (the whole session's CPU time: nothing accounts a session's
processes together), ``limit.memory`` (macOS does not enforce RLIMIT_AS/RLIMIT_DATA), ``limit.pids``
(RLIMIT_NPROC counts all of the user's processes, not the session's), ``fs.jail`` (``deny:/``
needs a system allowlist this platform does not generate). A policy needing one of them is an
EnforcementError naming the gap, never a weaker sandbox.

Known weaker than linux-ns: Mach services stay reachable (clipboard, Keychain); writes to the shared
temp dirs (``/private/tmp``, ``/private/var/tmp``, the per-user ``$TMPDIR``) persist and are seen
by other processes of the user (linux-ns gives a private ``/tmp``); with network ``*``, host Unix
sockets outside the shared temp dirs and the denied paths stay connectable; the proxy's loopback
port is reachable by other local processes (it forwards only what the allowlist allows); the ssh
route of a filtered launch (:meth:`MacSeatbelt.ssh_route`) is the ``ssh``, ``scp`` and ``sftp``
first on ``PATH``, since no file can be put where ssh reads its system config: ssh run by its
absolute path gets no route (and no way out: the profile admits only the proxy's port).

Not run here (this was written and tested on Linux; no macOS was available): ``sandbox-exec`` was
never executed on the generated profiles, so acceptance of every operation and filter name by the
profile compiler, the behaviour of each rule, and :meth:`MacSeatbelt.prepare` on macOS are
untested. :meth:`MacSeatbelt.prepare` compiles the profile once with ``/usr/bin/true`` before
returning, so a profile this macOS rejects is an EnforcementError with sandbox-exec's message,
not a failed session. The tests check the text: golden profiles, a structural parse against the
known operation and filter names, and property tests on hostile paths.

Sources relied on (public, read through egg's code search): Apple's operation-name table as
reproduced in public ``sandbox.h`` headers (fG!'s Apple Sandbox Guide list); OpenAI Codex's
``codex-rs/core/src/seatbelt_base_policy.sbpl`` (``target same-sandbox``, pty rules);
anthropic-experimental/sandbox-runtime ``src/sandbox/macos-sandbox-utils.ts`` (``remote
unix-socket`` filters, ``localhost:PORT`` network filters, ``$TMPDIR``'s parent, unlink-blocking of
ancestors); ehrlich-b/wingthing ``internal/sandbox/apple.go`` (the design egg reproduces: prefix
regex for ``~/.claude``, mDNSResponder, "a file deny does not stop connect()"); eugene1g/
agent-safehouse ``profiles/`` (Launch Services starts apps outside the sandbox; the
``/System/Volumes/Data`` spelling of home; ``process-info-pidinfo`` guards ``kern.procargs``);
other public generators found by code search for ``file-mount``/``file-link``/``job-creation``/
``file-clone`` denials and the ``(file-mode #o4000)`` setuid rule; Protonk/sandbox-boostrap's SBPL
cheatsheet (TinyScheme reader, filters and metafilters).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs

from egg_core.api import (
    Availability,
    Check,
    EffectivePolicy,
    EnforcementError,
    Launch,
    Platform,
    Prepared,
    RegisterPlatform,
    hookimpl,
)
from egg_core.api.platform import capabilities as caps

from .seatbelt import launch as host
from .seatbelt.paths import host_resolve, lexical_resolve
from .seatbelt.profile import ProfileRequest, build_profile, uses_proxy
from .ssh import agent as ssh_agent
from .ssh import route as ssh_routes

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
#: the session's tool socket, inside ``Launch.work_dir`` (where the session daemon creates it)
TOOL_SOCKET_NAME = "tool.sock"
#: the filtered ssh agent's socket, inside ``Launch.work_dir``
AGENT_SOCKET_NAME = "agent.sock"


@attrs.frozen
class SshRoute:
    """ssh in a filtered launch: the route's directory, the allowed hosts' known_hosts lines,
    and the filtered agent's socket (None: no agent inside)."""

    directory: str
    host_keys: tuple[str, ...]
    agent_socket: Path | None


_FIXES = {
    caps.LIMIT_MEMORY: "macOS cannot cap a session's memory (RLIMIT_AS is not enforced); remove "
    "resources.memory or use linux-ns",
    caps.LIMIT_PIDS: "macOS's RLIMIT_NPROC counts every process of the user, not the session's; "
    "remove resources.max_pids or use linux-ns",
    caps.LIMIT_CPU: "macOS cannot account a session's processes together; limit each process "
    "instead with resources.cpu_per_process, or use linux-ns",
    caps.FS_JAIL: "list the paths to deny instead of deny:/, or use linux-ns",
}


def _host() -> str:
    return sys.platform


class MacSeatbelt(Platform):
    name = "macos-seatbelt"
    description = "macOS Seatbelt (sandbox-exec) with a generated SBPL profile"
    capabilities = frozenset(
        {
            caps.FS_DENY_READ,
            caps.FS_RESTRICT_WRITE,
            caps.NET_NONE,
            caps.NET_LOCAL,
            caps.NET_FILTERED,
            caps.NET_FULL,
            caps.SYSCALL_FILTER,
            caps.LIMIT_CPU_PER_PROCESS,
            caps.LIMIT_FDS,
            caps.ENV_FILTER,
        }
    )

    def available(self) -> Availability:
        if _host() != "darwin":
            return Availability(
                False, f"needs macOS: Seatbelt (sandbox-exec) exists only there (this is {_host()})"
            )
        if not os.access(SANDBOX_EXEC, os.X_OK):
            return Availability(False, f"{SANDBOX_EXEC} is missing or not executable")
        return Availability(True, f"Seatbelt via {SANDBOX_EXEC}")

    def gaps(self, policy: EffectivePolicy) -> list[str]:
        return [
            f"{reason} needs {cap}, which {self.name} does not enforce: "
            + _FIXES.get(cap, "use another platform")
            for cap, reason in policy.required_capabilities().items()
            if cap not in self.capabilities
        ]

    def diagnose(self) -> list[Check]:
        ok, reason = self.available()
        return [
            Check(
                "sandbox-exec",
                ok,
                reason,
                None if ok else "run egg on macOS, or use linux-ns / unsandboxed elsewhere",
                blocks=() if ok else ("every sandboxed policy",),
            )
        ]

    # -- the profile

    def profile(
        self,
        launch: Launch,
        proxy_port: int | None = None,
        ssh: SshRoute | None = None,
    ) -> str:
        """The profile for ``launch`` (symlinks resolved on macOS; lexically elsewhere); without
        ``proxy_port`` a policy that uses the proxy shows a placeholder for it, and without
        ``ssh`` the route a launch would get (:meth:`ssh_route`), made or not."""
        if ssh is None and uses_proxy(launch.policy):
            ssh = self.ssh_route(launch, make=False)
        request = ProfileRequest(
            proxy_port=proxy_port,
            tool_socket=(
                str(launch.tools_dir / TOOL_SOCKET_NAME) if launch.tools_dir is not None else None
            ),
            shared_dir=str(launch.shared_dir) if launch.shared_dir is not None else None,
            ssh_route=ssh.directory if ssh else None,
            ssh_agent=str(ssh.agent_socket) if ssh and ssh.agent_socket else None,
            resolve=host_resolve if _host() == "darwin" else lexical_resolve,
        )
        return build_profile(launch.policy, request)

    def ssh_route(self, launch: Launch, *, make: bool = True) -> SshRoute:
        """ssh for a launch whose network is filtered (see :mod:`egg_plugins.platforms.ssh`):
        the route's directory, whose ``bin`` (ssh, scp and sftp with egg's config) goes first on
        ``PATH`` — Seatbelt cannot put a config where ssh reads its system one — and the filtered
        agent's socket when egg.yaml passes ``SSH_AUTH_SOCK``. ssh run by its absolute path gets
        no route, and fails: the profile lets it reach nothing but the proxy's port."""
        host_keys = ssh_routes.known_hosts(launch.policy)
        search = launch.env.get("PATH")
        if make:
            directory = ssh_routes.prepare(launch.egg_home, host_keys, None, search)
        else:
            directory = str(ssh_routes.plan(launch.egg_home, host_keys, None, search)[0])
        wanted = ssh_agent.wanted(dict(launch.env))
        return SshRoute(
            directory,
            tuple(host_keys),
            launch.work_dir / AGENT_SOCKET_NAME if wanted else None,
        )

    def command(self, launch: Launch) -> list[str]:
        return [SANDBOX_EXEC, "-p", self.profile(launch), *launch.argv]

    def describe(self, launch: Launch) -> dict[str, Any]:
        ssh = self.ssh_route(launch, make=False) if uses_proxy(launch.policy) else None
        detail: dict[str, Any] = {"profile": self.profile(launch, ssh=ssh)}
        if ssh is not None:
            detail["env_added"] = host.proxy_variable_names()
            agent = ssh_agent.key_count(launch.policy, ssh.host_keys) if ssh.agent_socket else None
            config = f"the ssh first on PATH ({ssh.directory}/bin/ssh, with egg's config)"
            keys_at = f"{ssh.directory}/known_hosts"
            detail["ssh"] = ssh_routes.explain(ssh.host_keys, agent, config, keys_at)
        return detail

    # -- running it

    def prepare(self, launch: Launch) -> Prepared:
        if _host() != "darwin":
            raise EnforcementError(
                f"needs macOS: Seatbelt (sandbox-exec) exists only there (this is {_host()}); "
                "use linux-ns here, or --platform unsandboxed inside a VM",
                platform=self.name,
            )
        policy = launch.policy
        gaps = self.gaps(policy)
        if gaps:
            raise EnforcementError(gaps, platform=self.name)
        if not os.access(SANDBOX_EXEC, os.X_OK):
            raise EnforcementError(f"{SANDBOX_EXEC} is missing", platform=self.name)
        limits = host.fit_to_host(host.limits(policy))
        prepared = Prepared(argv=[], env=dict(launch.env), cwd=launch.cwd)
        try:
            port = None
            ssh = None
            if uses_proxy(policy):
                ssh = self.ssh_route(launch)
                path = prepared.env.get("PATH")
                prepared.env["PATH"] = f"{ssh.directory}/bin" + (f":{path}" if path else "")
                agent = (ssh.agent_socket, ssh.host_keys) if ssh.agent_socket else None
                if agent is None:
                    prepared.env.pop(ssh_agent.SSH_AUTH_SOCK, None)  # the host's stays denied
                log = launch.network_log or launch.work_dir / "network.log"
                port = host.start_proxy(policy, log, prepared, launch.network_transport, agent)
            profile = self.profile(launch, port, ssh)
            _check_compiles(profile)
            prepared.argv = [SANDBOX_EXEC, "-p", profile, *launch.argv]
            prepared.preexec_fn = host.child_setup(limits, new_session=not launch.tty)
            if policy.cpu_per_process_seconds is not None:
                prepared.add_exit_reason(host.cpu_exit_reason)
        except BaseException:
            prepared.cleanup()
            raise
        return prepared


def _check_compiles(profile: str) -> None:
    """Apply ``profile`` to ``/usr/bin/true`` once: a profile this macOS rejects (an operation it
    does not know, say) becomes an EnforcementError with sandbox-exec's own message."""
    try:
        result = subprocess.run(
            [SANDBOX_EXEC, "-p", profile, "/usr/bin/true"],
            env={},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnforcementError(
            f"cannot run {SANDBOX_EXEC}: {exc}", platform="macos-seatbelt"
        ) from exc
    if result.returncode != 0:
        message = " ".join((result.stderr or result.stdout).split()) or f"exit {result.returncode}"
        raise EnforcementError(
            f"sandbox-exec rejected the generated profile: {message}", platform="macos-seatbelt"
        )


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(MacSeatbelt())
