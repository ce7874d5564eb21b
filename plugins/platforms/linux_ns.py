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

Why one module of this size: it is the platform's one object, wiring the pieces under
``linux/`` (bwrap, seccomp, cgroups, the bridge, placeholders) into a launch and its recipe.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from egg_core import pathrules
from egg_core import sandbox as caps
from egg_core.errors import EnforcementError
from egg_core.hookspecs import RegisterPlatform, hookimpl
from egg_core.paths import host_which
from egg_core.policy import NEED_FILTERED, NEED_FULL, NEED_NONE, EffectivePolicy
from egg_core.sandbox import Availability, Check, Launch, Platform, Prepared

from .linux import bwrap as bw
from .linux import fastrun
from .linux.placeholders import Held
from .linux.placeholders import plant as plant_placeholders
from .linux.placeholders import remove as remove_placeholders
from .linux.status import StatusReader

PROXY_PORT = 3128
AS_FLOOR = 4 << 30
BRIDGE = Path(bw.__file__).with_name("bridge.py")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


#: where the spawner puts the real stderr for the command (bwrap's own is a pipe); a single
#: digit, as the shell's redirections need, and never one of the descriptors bwrap is told about
#: (see :func:`egg_plugins.platforms.linux.fastrun.away_from`)
COMMAND_STDERR_FD = fastrun.COMMAND_STDERR_FD
#: run inside the sandbox first: the command's stderr back in place, then the command
STDERR_SHIM = (
    "/bin/sh",
    "-c",
    f'exec 2>&{COMMAND_STDERR_FD} {COMMAND_STDERR_FD}>&-; exec "$@"',
    "egg-stderr",
)


def lock_dir(egg_home: Path) -> Path:
    """Where runs hold their locks on shared placeholders (hidden from every sandbox)."""
    return egg_home / "run" / "locks"


def proxy_port(local_ports: tuple[int, ...]) -> int:
    """The in-namespace proxy port: 3128 unless a forwarded local port already takes it."""
    port = PROXY_PORT
    while port in local_ports:
        port += 1
    return port


class LinuxNamespaces(Platform):
    name = "linux-ns"
    description = "Linux namespaces via bubblewrap, seccomp, cgroups and a filtering proxy"
    capabilities = frozenset(caps.CAPABILITIES)
    #: a bind mount cannot be renamed over: the agent's home files go through a layer
    stages_home_files = True

    def bwrap_path(self) -> str | None:
        return host_which("bwrap")

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

    def shared_path(self, host_dir: Path) -> str:
        return bw.SHARED_DIR_INSIDE

    def tools_path(self, host_dir: Path) -> str:
        return bw.TOOLS_DIR_INSIDE

    def diagnose(self) -> list[Check]:
        from .linux.doctor import diagnose

        return diagnose(self.bwrap_path())

    def sweep(self) -> list[str]:
        from .linux import cgroups

        try:
            return cgroups.sweep()
        except Exception:  # recovery must never make an egg command fail
            return []

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
        # bwrap's own stderr is a pipe egg reads (its reason when set-up fails); the command
        # gets the real one back from COMMAND_STDERR_FD, where the spawner put it.
        argv = [*STDERR_SHIM, "env", "--default-signal=INT,QUIT", "--", *launch.argv]
        if not listens:
            return argv
        # The bridge is copied next to the sockets (prepare) and runs with the interpreter's real
        # path: egg may be installed where the sandbox cannot see it (a checkout under /tmp).
        python = os.path.realpath(sys.executable)
        return [python, "-I", "-S", f"{bw.NET_DIR_INSIDE}/bridge.py", *listens, "--", *argv]

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
        if not limits:
            return []
        prlimit = host_which("prlimit")
        if prlimit is None:
            raise EnforcementError(
                "resource limits need prlimit (apt install util-linux)", platform=self.name
            )
        return [prlimit, *limits, "--"]

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
            extra_ro=bw.python_paths() if listens or launch.tools_dir else (),
            tools_dir=str(launch.tools_dir) if launch.tools_dir else None,
            shared_dir=str(launch.shared_dir) if launch.shared_dir else None,
            cache_root=str(launch.egg_home),
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
        seccomp_fd = fastrun.away_from(sc.open_bpf_fd(cache), COMMAND_STDERR_FD)
        prepared.add_cleanup(_closer(seccomp_fd))
        status_read, status_write = os.pipe()
        status_write = fastrun.away_from(status_write, COMMAND_STDERR_FD)
        os.set_inheritable(status_write, True)
        # Closed after the spawn and again (harmlessly) at cleanup: the closer closes once, so a
        # later close can never hit whatever reused the number (the event loop's epoll fd).
        close_status_write = _closer(status_write)
        prepared.add_spawn_hook(close_status_write)
        prepared.add_cleanup(close_status_write)

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
            extra_ro=bw.python_paths() if listens or launch.tools_dir else (),
            tools_dir=str(launch.tools_dir) if launch.tools_dir else None,
            shared_dir=str(launch.shared_dir) if launch.shared_dir else None,
            cache_root=str(launch.egg_home),
            home_layer=str(launch.home_layer) if launch.home_layer else None,
            home_staged=launch.home_staged,
        )
        for source in bw.cache_sources(policy, str(launch.egg_home)):
            os.makedirs(source, mode=0o700, exist_ok=True)
        placeholders = bw.placeholder_paths(policy)
        visited: list[str] = []
        volatile: list[str] = []
        args = bw.build_args(policy, request, bwrap, visited, volatile)
        prefix = self._prefix(policy)
        uses_cgroups = policy.memory_bytes is not None or policy.max_pids is not None
        if uses_cgroups:
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
        prepared.stderr_fd = COMMAND_STDERR_FD
        # A host socket (or its directory) removed between the scan and bwrap's mounts must not
        # fail the launch: masks for what is gone are dropped right before each spawn, and a
        # launch that failed anyway while one of them vanished is prepared again.
        gone = frozenset(volatile)
        prepared.add_start_hook(
            lambda: setattr(prepared, "argv", fastrun.drop_vanished(prepared.argv, gone))
        )
        prepared.set_retry_check(lambda said: fastrun.any_vanished(gone, said))
        prepared.ignore_signals = (signal.SIGINT, signal.SIGQUIT)
        status = StatusReader(status_read)
        prepared.add_cleanup(status.close)
        prepared.set_exit_code_reader(status.exit_code)
        prepared.set_child_pid_reader(status.child_pid)
        # a plugin's resolver and connector are objects the cache cannot store: not cached
        cached_network = not sockets or launch.network_transport is None
        if cached_network and not uses_cgroups and not launch.tools_dir:
            self._offer_recipe(launch, prepared, seccomp_fd, status_write, placeholders, volatile)
            if net_dir is not None and prepared.recipe is not None:
                self._offer_network(launch, prepared, net_dir, sockets)
        # Planted right before the spawn (bwrap binds each onto itself, so it must exist then),
        # not before: what egg exec caches must see the host without them.
        held: list[Held] = []

        def plant() -> None:
            held.extend(plant_placeholders(placeholders, str(lock_dir(launch.egg_home))))

        prepared.add_start_hook(plant)
        prepared.add_cleanup(lambda: remove_placeholders(held))

    def _offer_recipe(
        self,
        launch: Launch,
        prepared: Prepared,
        seccomp_fd: int,
        status_fd: int,
        placeholders: list[tuple[str, str]],
        volatile: list[str],
    ) -> None:
        """Describe this launch for egg exec's cache. Its facts are what the decision looked at
        (recorded through egg_core.observe as it was made), and the paths its command line names."""
        from egg_core import observe

        from .linux import seccomp as sc

        seccomp_file = sc.bpf_file(launch.egg_home / "cache")
        if seccomp_file is None:
            return
        observe.content(str(seccomp_file))
        policy = launch.policy
        table = {str(seccomp_fd): fastrun.SECCOMP_FD, str(status_fd): fastrun.STATUS_FD}
        argv = list(prepared.argv)
        for index, arg in enumerate(argv[:-1]):
            if arg in ("--seccomp", "--json-status-fd"):
                argv[index + 1] = table[argv[index + 1]]
        layer = str(launch.home_layer) if launch.home_layer else None
        net = str(launch.work_dir / "net")
        # every path the command line names must still be what it was (egg's own files among
        # them: the empty file, the cache directories); the home layer and the network's
        # sockets are made afresh for every run (the cache's runner substitutes them), and a
        # placeholder is its own kind of fact
        seeded = {path for path, _ in placeholders}
        for arg in argv:
            fresh = (layer is not None and pathrules.under(arg, layer)) or pathrules.under(arg, net)
            if arg.startswith("/") and arg not in seeded and not fresh:
                observe.realpath(arg)
        reasons = {}
        if policy.cpu_seconds is not None:
            reasons[128 + signal.SIGXCPU] = "killed by the CPU-time limit (resources.cpu)"
        prepared.recipe = {
            "runner": "egg_plugins.platforms.linux.fastrun:run",
            "argv": argv,
            "seccomp_file": str(seccomp_file),
            "ignore_signals": [int(s) for s in prepared.ignore_signals],
            "tty": launch.tty,
            "placeholders": [list(pair) for pair in placeholders],
            "lock_dir": str(lock_dir(launch.egg_home)),
            "volatile": sorted(set(volatile)),
            "stderr_fd": COMMAND_STDERR_FD,
            "exit_reasons": reasons,
        }
        if layer:
            prepared.recipe["home_layer"] = layer
            prepared.recipe["home_files"] = [
                os.path.join(policy.home, name) for name in launch.home_staged
            ]

    def _offer_network(
        self, launch: Launch, prepared: Prepared, net_dir: Path, sockets: dict[int, str]
    ) -> None:
        """The network part of the recipe: the cached launch's runner binds the proxy's sockets
        in a fresh ``net`` directory of its own and serves them under the same rules from a
        child process (:mod:`egg_plugins.platforms.linux.fastnet`)."""
        from egg_core import observe

        assert prepared.recipe is not None
        policy = launch.policy
        observe.content(str(BRIDGE))
        prepared.recipe["runner"] = "egg_plugins.platforms.linux.fastnet:run"
        prepared.recipe["network"] = {
            "net_dir": str(net_dir),
            "bridge": str(BRIDGE),
            "ports": {port: name for port, name in sockets.items() if name != "proxy.sock"},
            "rules": {
                "domains": list(policy.domains),
                "local_ports": list(policy.local_ports),
                "mode": policy.mode,
            },
            # None: the launch directory's own, as the full path's (launch.work_dir)
            "log": str(launch.network_log) if launch.network_log else None,
        }

    def _start_network(
        self, launch: Launch, policy: EffectivePolicy, sockets: dict[int, str], prepared: Prepared
    ) -> Path:
        from egg_core.netproxy import (
            NO_PROXY_INSIDE,
            DecisionLog,
            FilteringProxy,
            ProxyThread,
        )
        from egg_core.netrules import NetworkRules

        # in the run's own directory however deep $EGG_HOME is (the proxy binds through
        # /proc/self/fd when the path is too long for a socket): never in a shared /tmp
        net_dir = launch.work_dir / "net"
        net_dir.mkdir(mode=0o700, exist_ok=True)
        shutil.copyfile(BRIDGE, net_dir / "bridge.py")
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
        rules = NetworkRules(
            domains=policy.domains, local_ports=policy.local_ports, mode=policy.mode
        )
        transport = launch.network_transport
        proxy = FilteringProxy(
            rules,
            log,
            resolver=transport.resolver if transport else None,
            connector=transport.connector if transport else None,
        )
        thread = ProxyThread(proxy, proxy_sock or net_dir / "proxy.sock", port_sockets)
        thread.start()
        prepared.add_cleanup(thread.stop)
        return net_dir


def _closer(fd: int) -> Callable[[], None]:
    """A function that closes ``fd`` the first time it is called and does nothing after."""
    state = {"open": True}

    def close() -> None:
        if state["open"]:
            state["open"] = False
            try:
                os.close(fd)
            except OSError:
                pass

    return close


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(LinuxNamespaces())
