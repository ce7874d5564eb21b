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
- limits: memory, pids and the sandbox's CPU time through cgroups (the CPU budget held by a
  watcher: :mod:`egg_plugins.platforms.linux.cpubudget`), with RLIMIT_AS (4 GiB floor) and
  RLIMIT_CPU as backstops; RLIMIT_NOFILE and a per-process CPU limit through ``prlimit``; a limit
  the host cannot enforce is an EnforcementError;
- network: ``*`` shares the host network; anything else gets its own empty network namespace, and
  allowed domains / forwarded local ports are reached only through the host-side proxy
  (:mod:`egg_core.netproxy`) bridged in over Unix sockets (:mod:`.linux.network`).
The environment is passed as bwrap's own environment, never with ``--setenv`` (which would put
secrets on a command line that ``/proc`` shows).

Why one module of this size: it is the platform's one object, wiring the pieces under
``linux/`` (bwrap, seccomp, cgroups, the network, the socket gate, placeholders) into a launch
and its recipe; each piece's own work lives in its module there.
"""

from __future__ import annotations

import math
import os
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from egg_core.api import (
    Availability,
    Check,
    EffectivePolicy,
    EggError,
    EnforcementError,
    Launch,
    Platform,
    Prepared,
    RegisterPlatform,
    hookimpl,
)
from egg_core.api.fast import SANDBOX_FAILED
from egg_core.api.platform import (
    NEED_FULL,
    NEED_NONE,
    host_which,
    observe,
    under,
    writable_under,
)
from egg_core.api.platform import capabilities as caps

from .linux import (
    bindfds,
    cpubudget,
    fastrun,
    gate_filter,
    network,
    socketgate,
    sshroute,
    vanishing,
)
from .linux import bwrap as bw
from .linux.placeholders import Held
from .linux.placeholders import plant as plant_placeholders
from .linux.placeholders import remove as remove_placeholders
from .linux.status import StatusReader
from .linux.trust import one_look, ruled_paths
from .ssh import agent as ssh_agent
from .ssh import route as ssh_route

AS_FLOOR = 4 << 30
#: seconds of CPU between RLIMIT_CPU's SIGXCPU (soft) and its SIGKILL (hard)
CPU_GRACE = 5
#: seconds past resources.cpu's budget that RLIMIT_CPU, its backstop, lets one process go
BACKSTOP_MARGIN = 1
#: the exit code of a command killed for CPU time: 128 + SIGXCPU, by RLIMIT_CPU or the budget
CPU_EXIT = cpubudget.EXIT_CODE


#: where the spawner puts the real stderr for the command (bwrap's own is a pipe); a single
#: digit, as the shell's redirections need, and never one of the descriptors bwrap is told about
#: (see :func:`egg_plugins.platforms.linux.fastrun.away_from`)
COMMAND_STDERR_FD = fastrun.COMMAND_STDERR_FD
#: run inside the sandbox first: the command's stderr back in place, then the command (an exec
#: cache hit drops it: the socket gate gives the held command egg's stderr when it lets it go)
STDERR_SHIM = fastrun.STDERR_SHIM


def _signal_defaults(tty: bool) -> list[str]:
    """What puts Ctrl-C's signals back to their defaults for the command, when it needs it.

    With a terminal (``--tty``, sessions) the command shares its process group with bwrap's
    monitor, which must survive the terminal's Ctrl-C and Ctrl-\\: the monitor is spawned with
    SIGINT and SIGQUIT ignored, and ``env --default-signal`` gives the command the defaults
    back. Without one, bwrap gets a process group of its own (``Prepared.own_process_group``):
    the terminal's signals reach egg alone, which passes them on to the command, and nothing
    is ignored — one exec fewer on every launch (about 0.7 ms of an exec cache hit)."""
    return ["env", "--default-signal=INT,QUIT", "--"] if tty else []


def lock_dir(egg_home: Path) -> Path:
    """Where runs hold their locks on shared placeholders (hidden from every sandbox)."""
    return egg_home / "run" / "locks"


class LinuxNamespaces(Platform):
    name = "linux-ns"
    description = "Linux namespaces via bubblewrap, seccomp, cgroups and a filtering proxy"
    capabilities = frozenset(caps.CAPABILITIES)
    #: a bind mount cannot be renamed over: the agent's home files go through a layer
    stages_home_files = True
    diagnoses_when_unavailable = True  # a missing or broken bwrap is what egg doctor explains

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
        if _uses_cgroups(policy):
            from .linux import cgroups

            gaps += cgroups.gaps(
                {"memory": policy.memory_bytes, "pids": policy.max_pids, "cpu": policy.cpu_seconds}
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

    def _argv(self, launch: Launch, listens: list[str]) -> list[str]:
        # bwrap's own stderr is a pipe egg reads (its reason when set-up fails); the command
        # gets the real one back from COMMAND_STDERR_FD, where the spawner put it.
        argv = [*STDERR_SHIM, *_signal_defaults(launch.tty), *launch.argv]
        return network.bridged(listens, argv) if listens else argv

    def _prefix(self, policy: EffectivePolicy) -> list[str]:
        limits = []
        if policy.max_fds is not None:
            limits.append(f"--nofile={policy.max_fds}:{policy.max_fds}")
        cpu = cpu_rlimit(policy)
        if cpu is not None:
            limits.append(f"--cpu={cpu}:{cpu + CPU_GRACE}")
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

    def describe(self, launch: Launch) -> dict[str, Any]:
        """The socket gate's answer, for ``egg explain``: which unix sockets the sandbox reaches."""
        named, unsafe = named_sockets(launch.policy)
        lines = [
            "every connect() is judged by egg (the socket gate); reachable:",
            "  the sandbox's own sockets (those it binds)",
        ]
        if launch.policy.network_need not in (NEED_NONE, NEED_FULL) or launch.tools_dir:
            lines.append("  egg's own: the proxy's and the tool server's sockets")
        lines += [f"  {path} (a rule names it)" for path in named if _is_socket(path)]
        lines += [
            f"  not {path}: a rule names it, but the sandbox can write its directory"
            for path in unsafe
        ]
        lines.append(
            "  abstract names: the sandbox's own network namespace's"
            if launch.policy.network_need != NEED_FULL
            else "  abstract names: the host's (network: '*' shares its namespace)"
        )
        lines.append("refused (EACCES): every other unix socket; unix datagram sockets")
        detail = {"unix sockets": "\n".join(lines)}
        if "proxy.sock" in network.plan(launch.policy)[1].values():
            kept = ssh_route.known_hosts(launch.policy)  # read once: the count and the agent's
            wanted = ssh_agent.wanted(dict(launch.env))
            agent = ssh_agent.key_count(launch.policy, kept) if wanted else None
            config = "egg's /etc/ssh/ssh_config inside"
            keys_at = f"{sshroute.ROUTE_INSIDE}/known_hosts"
            detail["ssh"] = ssh_route.explain(kept, agent, config, keys_at)
        return detail

    def command(self, launch: Launch) -> list[str]:
        policy = launch.policy
        listens, _ = network.plan(policy)
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
        if _uses_cgroups(policy):
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
            with one_look():  # the decision rests on one look at each path (see linux.trust)
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
        # as bwrap's options name it (a bind's source by its real path: bw.real_sources), so
        # that the masks it makes are found (linux.vanishing), $EGG_HOME below a symlink too
        empty = os.path.realpath(empty)  # not a fact: egg's own file
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

        listens, sockets = network.plan(policy)
        net_dir = None
        route = None
        host_keys: list[str] = []
        if "proxy.sock" in sockets.values():
            host_keys = ssh_route.known_hosts(policy)
            route = ssh_route.prepare(launch.egg_home, host_keys, sshroute.ROUTE_INSIDE)
        if sockets:
            net_dir = network.start(launch, policy, sockets, prepared, host_keys)
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
            # per-run: by its real path, so that no fact of the run is taken of it
            home_layer=os.path.realpath(launch.home_layer)  # not a fact: made for this run
            if launch.home_layer
            else None,
            home_staged=launch.home_staged,
            ssh_route=route,
        )
        for source in bw.cache_sources(policy, str(launch.egg_home)):
            os.makedirs(source, mode=0o700, exist_ok=True)
        placeholders = bw.placeholder_paths(policy)
        args = bw.build_args(policy, request, bwrap)
        gate = self._gate(launch, policy, net_dir, prepared)
        prefix = self._prefix(policy)
        group_spec = None
        join: list[str] = []
        status = StatusReader(status_read)
        prepared.add_cleanup(status.close)
        exit_code: Callable[[int], int | None] = status.exit_code
        if _uses_cgroups(policy):
            from .linux import cgrouprun, cgroups

            group_spec = cgroups.spec(policy.memory_bytes, policy.max_pids, policy.cpu_seconds)
            group = cgroups.create(cgrouprun.new_name(), group_spec)
            prepared.add_cleanup(group.close)
            join = group.prefix()
            # the CPU budget is watched from the spawn on, by whoever supervises the sandbox
            prepared.add_spawn_hook(group.started)
            prepared.add_exit_reason(group.reason)
            exit_code = group.exit_code(exit_code)
        backstop = cpu_exit_reason(policy)
        if backstop is not None:
            prepared.add_exit_reason(lambda code: backstop if code == CPU_EXIT else None)
        if policy.max_pids is not None:
            prepared.notes.append(f"process limit: {policy.max_pids}")
        prepared.argv = join + prefix + args
        prepared.pass_fds = (seccomp_fd, status_write, gate.child_fd)
        prepared.stderr_fd = COMMAND_STDERR_FD
        if launch.tty:
            prepared.ignore_signals = (signal.SIGINT, signal.SIGQUIT)
        else:
            prepared.own_process_group = True
        prepared.set_exit_code_reader(exit_code)
        prepared.set_child_pid_reader(status.child_pid)
        # a masked file that is gone by the time bwrap mounts (a container engine's socket, an
        # ssh-agent's) must not fail the launch: see linux.vanishing
        masks = vanishing.file_masks(args, empty, bwrap)
        if masks:
            prepared.add_start_hook(
                lambda: setattr(
                    prepared, "argv", vanishing.drop_vanished(prepared.argv, masks, empty, bwrap)
                )
            )
            prepared.set_retry_check(lambda said: vanishing.any_vanished(masks, said))
        # a plugin's resolver and connector are objects the cache cannot store: not cached
        transport = launch.network_transport
        cached_network = not sockets or transport is None or transport.system
        # the filtered ssh agent is served by this process's proxy thread alone: not cached
        agent_served = prepared.env.get(ssh_agent.SSH_AUTH_SOCK) == network.AGENT_INSIDE
        if cached_network and not launch.tools_dir and not agent_served:
            self._offer_recipe(
                launch,
                prepared,
                bwrap,
                seccomp_fd,
                status_write,
                placeholders,
                gate,
                group_spec,
                len(join),
                empty,
            )
            if net_dir is not None and prepared.recipe is not None:
                network.offer(launch, prepared, net_dir, sockets)
        # Planted right before the spawn (bwrap binds each onto itself, so it must exist then),
        # not before: what egg exec caches must see the host without them.
        held: list[Held] = []

        def plant() -> None:
            held.extend(plant_placeholders(placeholders, str(lock_dir(launch.egg_home))))

        prepared.add_start_hook(plant)
        prepared.add_cleanup(lambda: remove_placeholders(held))
        if bindfds.supported(bwrap):
            self._bind_by_descriptor(prepared, bwrap)

    def _bind_by_descriptor(self, prepared: Prepared, bwrap: str) -> None:
        """Right before the spawn (the last start hook: after masks of vanished files are
        dropped and placeholders planted), every bind's source is opened and bwrap is given the
        descriptor: what the decision looked at is what is mounted (see :mod:`.linux.bindfds`).
        bwrap's options are read from ``bwrap`` on: what runs before it (the cgroup join,
        prlimit, a session's strace) ends options of its own with a ``--``."""
        opened: list[int] = []

        def pin() -> None:
            try:
                argv, fds = bindfds.pin(prepared.argv, bwrap)
            except bindfds.PinFailed as exc:
                raise EggError(
                    f"the sandbox failed before the command started: {exc.strerror}",
                    exit_code=SANDBOX_FAILED,
                ) from None
            opened.extend(fds)
            prepared.argv = argv
            prepared.pass_fds = (*prepared.pass_fds, *fds)

        def close() -> None:
            while opened:
                os.close(opened.pop())

        prepared.add_start_hook(pin)
        prepared.add_spawn_hook(close)
        prepared.add_cleanup(close)

    def _offer_recipe(
        self,
        launch: Launch,
        prepared: Prepared,
        bwrap: str,
        seccomp_fd: int,
        status_fd: int,
        placeholders: list[tuple[str, str]],
        gate: socketgate.Gate,
        group_spec: dict[str, Any] | None,
        joined: int,
        empty: str,
    ) -> None:
        """Describe this launch for egg exec's cache. Its facts are what the decision looked at
        (recorded through egg_core.observe as it was made), and the paths its command line names.
        Its cgroups are made afresh for every run (``group_spec``; see linux.cgrouprun): the
        cached command line starts after the ``joined`` words that join this run's own."""
        from egg_core.api.platform import observe

        from .linux import seccomp as sc

        seccomp_file = sc.bpf_file(launch.egg_home / "cache")
        gate_files = gate_filter.program_files(launch.egg_home / "cache")
        if seccomp_file is None or gate_files is None:
            return
        for path in (seccomp_file, *gate_files):
            observe.content(str(path))
        policy = launch.policy
        table = {str(seccomp_fd): fastrun.SECCOMP_FD, str(status_fd): fastrun.STATUS_FD}
        argv = list(prepared.argv)
        argv = argv[joined:]
        for index, arg in enumerate(argv[:-1]):
            if arg in ("--seccomp", "--json-status-fd"):
                argv[index + 1] = table[argv[index + 1]]
        layer = None
        if launch.home_layer:
            layer = os.path.realpath(launch.home_layer)  # not a fact: made for this run
        net = str(launch.work_dir / "net")
        # every path the command line names must still be what it was (egg's own files among
        # them: the empty file, the cache directories); the home layer and the network's
        # sockets are made afresh for every run (the cache's runner substitutes them), and a
        # placeholder is its own kind of fact
        seeded = {path for path, _ in placeholders}
        for arg in argv:
            fresh = (layer is not None and under(arg, layer)) or under(arg, net)
            if arg.startswith("/") and arg not in seeded and not fresh:
                observe.realpath(arg)
        backstop = cpu_exit_reason(policy)
        reasons = {CPU_EXIT: backstop} if backstop is not None else {}
        prepared.recipe = {
            "runner": "egg_plugins.platforms.linux.fastrun:run",
            "admits": True,  # it starts bwrap at once, and asks while bwrap sets up
            "argv": argv,
            "seccomp_file": str(seccomp_file),
            "ignore_signals": [int(s) for s in prepared.ignore_signals],
            "process_group": prepared.own_process_group,
            "tty": launch.tty,
            "placeholders": [list(pair) for pair in placeholders],
            "lock_dir": str(lock_dir(launch.egg_home)),
            "gate_programs": [str(path) for path in gate_files],
            "gate_grants": gate.grants.as_json(),
            "stderr_fd": COMMAND_STDERR_FD,
            "exit_reasons": reasons,
            "cgroup": group_spec,
            "empty_file": empty,
            "masks": vanishing.file_masks(argv, empty, bwrap),
            # bwrap's own word: a cached command line may start with prlimit
            "bwrap": bwrap,
            "bind_fds": bindfds.supported(bwrap),
        }
        if layer:
            prepared.recipe["home_layer"] = layer
            prepared.recipe["home_files"] = [
                os.path.join(policy.home, name) for name in launch.home_staged
            ]

    def _gate(
        self, launch: Launch, policy: EffectivePolicy, net_dir: Path | None, prepared: Prepared
    ) -> socketgate.Gate:
        """The socket gate for this launch (see :mod:`.linux.socketgate`): loaded in the child
        that becomes bwrap, judging every connect from the moment it exists. The sandbox may
        reach its own sockets, egg's (the proxy's, the tool server's) and any socket an ``rw:``
        or ``ro:`` rule names exactly — how a user lets a sandbox reach one (see
        :func:`named_sockets`)."""
        named, _ = named_sockets(policy)
        own_dirs = [str(d) for d in (net_dir, launch.tools_dir) if d is not None]
        grants = socketgate.Grants(named, own_dirs)
        gate = socketgate.Gate(gate_filter.programs(launch.egg_home / "cache"), grants)
        prepared.add_cleanup(gate.close)
        earlier = prepared.preexec_fn

        def child() -> None:
            if earlier is not None:
                earlier()
            gate.child_setup()

        prepared.preexec_fn = child
        prepared.add_spawn_hook(lambda: start_gate(gate))
        return gate


def named_sockets(policy: EffectivePolicy) -> tuple[list[str], list[str]]:
    """The paths ``rw:`` and ``ro:`` rules name whose socket the gate grants, and those it
    does not: a name in a directory the sandbox can write is the sandbox's to fill (a symlink
    to a host socket, a hard link of one, a host socket moved there from beside it), and egg
    finds the socket to grant by that name on the host."""
    ruled = ruled_paths(policy)
    writable = writable_under(ruled)
    granted: list[str] = []
    unsafe: list[str] = []
    for real, mode in ruled:
        if mode in ("rw", "ro"):
            (unsafe if writable(os.path.dirname(real)) else granted).append(real)
    return granted, [path for path in unsafe if _is_socket(path)]


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(observe.stat(path).st_mode)
    except OSError:
        return False


def start_gate(gate: socketgate.Gate) -> None:
    """Take the gate's listener from the child (see :meth:`socketgate.Gate.started`)."""
    try:
        gate.started()
    except OSError as exc:
        raise EnforcementError(gate.error or f"cannot start the socket gate: {exc}") from exc


def _uses_cgroups(policy: EffectivePolicy) -> bool:
    return any(v is not None for v in (policy.memory_bytes, policy.max_pids, policy.cpu_seconds))


def cpu_rlimit(policy: EffectivePolicy) -> int | None:
    """RLIMIT_CPU's soft limit for every process (whole seconds), the lower of
    resources.cpu_per_process and a backstop for resources.cpu's budget: BACKSTOP_MARGIN past
    it, so that the budget's watcher (which says what the sandbox used) always comes first, and
    a single process still cannot run on should the watcher ever fail. No process alone can use
    more than its sandbox, so the backstop never ends one the budget would have left running."""
    wanted = []
    if policy.cpu_seconds is not None:
        wanted.append(math.ceil(policy.cpu_seconds) + BACKSTOP_MARGIN)
    if policy.cpu_per_process_seconds is not None:
        wanted.append(max(1, math.ceil(policy.cpu_per_process_seconds)))
    return min(wanted) if wanted else None


def cpu_exit_reason(policy: EffectivePolicy) -> str | None:
    """What a command killed by RLIMIT_CPU's SIGXCPU (exit :data:`CPU_EXIT`) was killed by."""
    per_process = policy.cpu_per_process_seconds
    if per_process is not None and (
        policy.cpu_seconds is None
        or math.ceil(per_process) < math.ceil(policy.cpu_seconds) + BACKSTOP_MARGIN
    ):
        return "killed by the per-process CPU-time limit (resources.cpu_per_process)"
    if policy.cpu_seconds is not None:
        return cpubudget.REASON
    return None


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
