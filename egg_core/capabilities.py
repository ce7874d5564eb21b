"""Capability names: what a policy needs enforced, and what a platform says it can enforce.

:meth:`egg_core.policy.EffectivePolicy.required_capabilities` names what a policy needs; each
platform (:class:`egg_core.sandbox.Platform`) declares the ones it enforces, and selection refuses a
platform that lacks one. The names are strings so that third-party platforms can declare them
without importing anything else.
"""

from __future__ import annotations

FS_DENY_READ = "fs.deny-read"  # deny: paths are unreadable
FS_RESTRICT_WRITE = "fs.restrict-write"  # writes only where rw: allows
FS_JAIL = "fs.jail"  # deny:/ exposes only the listed paths
NET_NONE = "net.none"  # no network at all
NET_LOCAL = "net.local"  # only forwarded loopback ports
NET_FILTERED = "net.filtered"  # only allowlisted domains, enforced for every client
NET_FULL = "net.full"  # unrestricted network
SYSCALL_FILTER = "syscall.filter"  # the escape-syscall denylist
LIMIT_CPU = "limit.cpu"  # the whole sandbox's CPU time
LIMIT_CPU_PER_PROCESS = "limit.cpu-per-process"  # each process's own CPU time (RLIMIT_CPU)
LIMIT_MEMORY = "limit.memory"
LIMIT_PIDS = "limit.pids"
LIMIT_FDS = "limit.fds"
ENV_FILTER = "env.filter"  # the process sees only the filtered environment

CAPABILITIES = frozenset(
    {
        FS_DENY_READ,
        FS_RESTRICT_WRITE,
        FS_JAIL,
        NET_NONE,
        NET_LOCAL,
        NET_FILTERED,
        NET_FULL,
        SYSCALL_FILTER,
        LIMIT_CPU,
        LIMIT_CPU_PER_PROCESS,
        LIMIT_MEMORY,
        LIMIT_PIDS,
        LIMIT_FDS,
        ENV_FILTER,
    }
)
