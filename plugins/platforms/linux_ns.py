"""The ``linux-ns`` platform: bubblewrap + seccomp + cgroups + an enforced network allowlist.

What a sandboxed process gets (every claim has a test in tests/linux that attempts the escape):
- new user, mount, pid, ipc, uts, cgroup (and, unless the network is ``*``, net) namespaces, all
  capabilities dropped even for a root caller, no further user namespaces (``--disable-userns``);
- a read-only ``/`` (``deny:/`` jail mode: only the listed paths and the system dirs), writable
  binds for ``rw:``, empty read-only tmpfs/file for ``deny:``, read-only binds for
  ``deny-write:``; private ``/tmp``, ``/var/tmp`` and ``/run`` (the host's D-Bus, systemd and
  container sockets live there), fresh ``/proc`` with ``/proc/sys`` read-only, minimal
  ``/dev``;
- egg's protections last: ``$EGG_HOME`` hidden, the config chain and the egg installation
  read-only;
- a seccomp filter (see :mod:`egg_plugins.platforms.linux.seccomp`);
- limits: RLIMIT_NOFILE and RLIMIT_CPU through ``prlimit``, memory and pids through cgroups with
  RLIMIT_AS (4 GiB floor) as a backstop; a limit the host cannot enforce is an EnforcementError;
- network: ``*`` shares the host network; anything else gets its own empty network namespace, and
  allowed domains / forwarded local ports are reached only through the host-side proxy
  (:mod:`egg_core.netproxy`) bridged in over Unix sockets.
The environment is passed as bwrap's own environment, never with ``--setenv`` (which would put
secrets on a command line that ``/proc`` shows).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

from egg_core import sandbox as caps
from egg_core.errors import EnforcementError
from egg_core.hookspecs import RegisterPlatform, hookimpl
from egg_core.policy import NEED_FILTERED, NEED_FULL, NEED_NONE, EffectivePolicy
from egg_core.sandbox import Availability, Check, Launch, Platform, Prepared

from .linux import bwrap as bw

PROXY_PORT = 3128
AS_FLOOR = 4 << 30
BRIDGE = Path(bw.__file__).with_name("bridge.py")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def proxy_port(local_ports: tuple[int, ...]) -> int:
    """The in-namespace proxy port: 3128 unless a forwarded local port already takes it."""
    port = PROXY_PORT
    while port in local_ports:
        port += 1
    return port


def _read_status(fd: int) -> dict[str, object]:
    """bwrap's --json-status-fd records, merged (``child-pid``, ``exit-code``)."""
    chunks = []
    try:
        while data := os.read(fd, 65536):
            chunks.append(data)
    except OSError:
        pass
    finally:
        os.close(fd)
    merged: dict[str, object] = {}
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            merged.update(record)
    return merged


class LinuxNamespaces(Platform):
    name = "linux-ns"
    description = "Linux namespaces via bubblewrap, seccomp, cgroups and a filtering proxy"
    capabilities = frozenset(caps.CAPABILITIES)

    def bwrap_path(self) -> str | None:
        return shutil.which("bwrap")

    def available(self) -> Availability:
        if not sys.platform.startswith("linux"):
            return Availability(False, f"needs Linux (this is {sys.platform})")
        if self.bwrap_path() is None:
            return Availability(
                False, "bwrap not found: install bubblewrap (apt install bubblewrap)"
            )
        try:
            if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
                return Availability(
                    False, "user namespaces are disabled (sysctl user.max_user_namespaces=0)"
                )
        except (OSError, ValueError):
            pass
        if os.getuid() != 0:
            try:
                restricted = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
                if restricted.read_text().strip() == "1":
                    return Availability(
                        False,
                        "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+): allow "
                        "bwrap with an AppArmor profile (apt install apparmor-profiles; see egg "
                        "doctor) or sysctl kernel.apparmor_restrict_unprivileged_userns=0",
                    )
            except OSError:
                pass
        return Availability(True, f"bubblewrap at {self.bwrap_path()}")

    def gaps(self, policy: EffectivePolicy) -> list[str]:
        gaps = super().gaps(policy) + bw.symlink_problems(policy)
        if policy.network_need != NEED_FULL:
            # the in-sandbox end of a forward listens on the port itself, without capabilities
            gaps += [
                f"network.local_ports {port}: the sandbox cannot listen on a port below 1024 "
                "(it holds no capabilities); serve the local model on an unprivileged port"
                for port in policy.local_ports
                if port < 1024
            ]
        wanted = {"memory": policy.memory_bytes, "pids": policy.max_pids}
        if any(v is not None for v in wanted.values()):
            from .linux import cgroups

            support = cgroups.detect()
            for controller, value in wanted.items():
                if value is not None and controller not in support.parents:
                    key = "memory" if controller == "memory" else "max_pids"
                    gaps.append(
                        f"resources.{key} needs the {controller} cgroup: "
                        f"{support.problems[controller]}"
                    )
        return gaps

    def diagnose(self) -> list[Check]:
        from .linux.doctor import diagnose

        return diagnose(self.bwrap_path())

    # -- building the command

    def _network_plan(self, policy: EffectivePolicy) -> tuple[list[str], dict[int, str]]:
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

    def _argv(self, launch: Launch, listens: list[str]) -> list[str]:
        # bwrap's monitor is spawned with SIGINT/SIGQUIT ignored so that Ctrl-C reaches only the
        # command; ``env --default-signal`` gives the command back the default dispositions.
        argv = ["env", "--default-signal=INT,QUIT", "--", *launch.argv]
        if not listens:
            return argv
        return [sys.executable, "-I", "-S", str(BRIDGE), *listens, "--", *argv]

    def _prefix(self, policy: EffectivePolicy) -> list[str]:
        limits = []
        if policy.max_fds is not None:
            limits.append(f"--nofile={policy.max_fds}:{policy.max_fds}")
        if policy.cpu_seconds is not None:
            soft = max(1, int(-(-policy.cpu_seconds // 1)))
            limits.append(f"--cpu={soft}:{soft + 5}")
        if policy.memory_bytes is not None:
            space = max(policy.memory_bytes, AS_FLOOR)
            limits.append(f"--as={space}:{space}")
        return ["prlimit", *limits, "--"] if limits else []

    def command(self, launch: Launch) -> list[str]:
        policy = launch.policy
        listens, _ = self._network_plan(policy)
        request = bw.BwrapRequest(
            argv=self._argv(launch, listens),
            empty_file=str(launch.egg_home / "run" / "empty"),
            tty=launch.tty,
            seccomp_fd=3,
            status_fd=4,
            net_dir=str(launch.work_dir / "net") if listens else None,
            extra_ro=bw.python_paths() if listens else (),
        )
        args = bw.build_args(policy, request, self.bwrap_path() or "bwrap")
        prefix = self._prefix(policy)
        if policy.memory_bytes is not None or policy.max_pids is not None:
            prefix = ["/bin/sh", "-c", "<join the session's cgroups>", "egg-cgroup-join", *prefix]
        return [*prefix, *args]

    def prepare(self, launch: Launch) -> Prepared:
        policy = launch.policy
        bwrap = self.bwrap_path()
        if bwrap is None:
            raise EnforcementError(
                "bwrap not found: install bubblewrap (apt install bubblewrap)", platform=self.name
            )
        prepared = Prepared(argv=[], env=dict(launch.env), cwd=launch.cwd)
        try:
            self._prepare(launch, policy, bwrap, prepared)
        except BaseException:
            prepared.cleanup()
            raise
        return prepared

    def _prepare(
        self,
        launch: Launch,
        policy: EffectivePolicy,
        bwrap: str,
        prepared: Prepared,
    ) -> None:
        from .linux import seccomp as sc

        cache = launch.egg_home / "cache"
        try:
            empty = bw.empty_file(launch.egg_home / "run")
        except OSError:
            empty = bw.empty_file(launch.work_dir)
        seccomp_fd = sc.open_bpf_fd(cache)
        prepared.add_cleanup(lambda: _close(seccomp_fd))
        status_read, status_write = os.pipe()
        os.set_inheritable(status_write, True)
        prepared.add_spawn_hook(lambda: _close(status_write))
        prepared.add_cleanup(lambda: _close(status_write))

        listens, sockets = self._network_plan(policy)
        net_dir = None
        if sockets:
            net_dir = self._start_network(launch, policy, sockets, prepared)
        request = bw.BwrapRequest(
            argv=self._argv(launch, listens),
            empty_file=empty,
            tty=launch.tty,
            seccomp_fd=seccomp_fd,
            status_fd=status_write,
            net_dir=str(net_dir) if net_dir else None,
            extra_ro=bw.python_paths() if listens else (),
        )
        placeholders = bw.placeholder_paths(policy)
        args = bw.build_args(policy, request, bwrap)
        prepared.add_cleanup(lambda: bw.remove_placeholders(placeholders))
        prefix = self._prefix(policy)
        if policy.memory_bytes is not None or policy.max_pids is not None:
            from .linux import cgroups

            group = cgroups.create(
                f"{os.getpid()}-{os.urandom(4).hex()}", policy.memory_bytes, policy.max_pids
            )
            prepared.add_cleanup(group.destroy)
            prefix = group.join_prefix() + prefix
            prepared.add_exit_reason(
                lambda code: (
                    "killed by the memory limit (resources.memory): out of memory"
                    if group.died_of_oom()
                    else None
                )
            )
        if policy.cpu_seconds is not None:
            prepared.add_exit_reason(
                lambda code: (
                    "killed by the CPU-time limit (resources.cpu)"
                    if code == 128 + signal.SIGXCPU
                    else None
                )
            )
        if policy.max_pids is not None:
            prepared.notes.append(f"process limit: {policy.max_pids}")
        prepared.argv = prefix + args
        prepared.pass_fds = (seccomp_fd, status_write)
        prepared.ignore_signals = (signal.SIGINT, signal.SIGQUIT)

        def exit_code(returncode: int) -> int | None:
            status = {**_read_status(status_read), **early}
            code = status.get("exit-code")
            if isinstance(code, int):
                return code
            if returncode < 0:
                return 128 - returncode
            return None

        prepared.set_exit_code_reader(exit_code)
        early: dict[str, object] = {}

        def child_pid() -> int | None:
            """The command's host pid, from bwrap's first status record (blocks until then)."""
            if "child-pid" not in early:
                line = _read_line(status_read)
                try:
                    early.update(json.loads(line) if line else {})
                except ValueError:
                    pass
            pid = early.get("child-pid")
            return pid if isinstance(pid, int) else None

        prepared.set_child_pid_reader(child_pid)

    def _start_network(
        self, launch: Launch, policy: EffectivePolicy, sockets: dict[int, str], prepared: Prepared
    ) -> Path:
        from egg_core.netproxy import (
            DecisionLog,
            FilteringProxy,
            NetworkRules,
            ProxyThread,
            test_network_seam,
        )

        net_dir = launch.work_dir / "net"
        net_dir.mkdir(mode=0o700, exist_ok=True)
        proxy_sock = None
        port_sockets: dict[int, Path] = {}
        for port, name in sockets.items():
            if name == "proxy.sock":
                proxy_sock = net_dir / name
                inside = f"http://127.0.0.1:{port}"
                for variable in PROXY_VARIABLES:
                    prepared.env[variable] = inside
                    prepared.env[variable.lower()] = inside
                prepared.env["NO_PROXY"] = prepared.env["no_proxy"] = ""
            else:
                port_sockets[port] = net_dir / name
        log = DecisionLog(launch.network_log or launch.work_dir / "network.log")
        rules = NetworkRules(
            domains=policy.domains, local_ports=policy.local_ports, mode=policy.mode
        )
        proxy = FilteringProxy(rules, log, **test_network_seam(os.environ))
        thread = ProxyThread(proxy, proxy_sock or net_dir / "proxy.sock", port_sockets)
        thread.start()
        prepared.add_cleanup(thread.stop)
        return net_dir


def _read_line(fd: int) -> str:
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = os.read(fd, 1)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(LinuxNamespaces())
