"""``egg doctor`` checks for linux-ns: what this host lets the sandbox enforce, and the fixes."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
from pathlib import Path

from egg_core.api import Check
from egg_core.api.platform import host_which, untrusted_candidates

from . import cgroups

LANDLOCK_CREATE_RULESET = {"x86_64": 444, "aarch64": 444}
LANDLOCK_CREATE_RULESET_VERSION = 1


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def check_bwrap(bwrap: str | None) -> Check:
    if bwrap is None:
        return Check("bubblewrap", False, "bwrap not found", "apt install bubblewrap", ("*",))
    code, out = _run([bwrap, "--version"])
    return Check("bubblewrap", code == 0, f"{bwrap}: {out or 'no version'}")


def check_bind_fd(bwrap: str | None) -> Check:
    """Whether bwrap binds from descriptors (see :mod:`.bindfds`): without it a bind follows
    what its path names when bwrap mounts, and a sandbox that can write a directory on the way
    could swap it for a symlink after egg decided."""
    from . import bindfds

    if bwrap is not None and bindfds.supported(bwrap):
        return Check("bind sources", True, "bound from descriptors (--bind-fd): race-free")
    return Check(
        "bind sources",
        False,
        "this bwrap has no --bind-fd: binds follow their paths when bwrap mounts, and another "
        "sandbox that can write a directory on the way could swap it in between",
        "bubblewrap 0.10 or later (or a distribution's build with --bind-fd, as Debian 12's)",
        note=True,
    )


def check_userns(bwrap: str | None) -> Check:
    try:
        limit = int(Path("/proc/sys/user/max_user_namespaces").read_text())
    except (OSError, ValueError):
        limit = -1
    if limit == 0:
        return Check(
            "user namespaces",
            False,
            "disabled (user.max_user_namespaces = 0)",
            "sysctl -w user.max_user_namespaces=15000",
            ("*",),
        )
    if bwrap is None:
        return Check("user namespaces", False, "cannot test without bwrap", None, ("*",))
    code, out = _run([bwrap, "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true"])
    if code != 0:
        return Check(
            "user namespaces",
            False,
            f"bwrap --unshare-user failed: {out}",
            "see the AppArmor check below",
            ("*",),
        )
    return Check("user namespaces", True, f"allowed (max {limit})")


def check_apparmor() -> Check:
    path = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    try:
        value = path.read_text().strip()
    except OSError:
        return Check("AppArmor userns restriction", True, "not present on this kernel")
    if value != "1":
        return Check("AppArmor userns restriction", True, "off")
    if os.getuid() == 0:
        return Check("AppArmor userns restriction", True, "on, but egg runs as root here")
    return Check(
        "AppArmor userns restriction",
        False,
        "on: unprivileged user namespaces are refused (Ubuntu 23.10+)",
        "allow bwrap: apt install apparmor-profiles && sudo ln -s /usr/share/apparmor/extra-"
        "profiles/bwrap-userns-restrict /etc/apparmor.d/ && sudo systemctl reload apparmor "
        "(or: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0)",
        ("*",),
    )


def check_seccomp() -> Check:
    mode = "unknown"
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Seccomp:"):
                mode = line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        from .seccomp import build_bpf

        size = len(build_bpf())
    except Exception as exc:  # pyseccomp missing, libseccomp missing, kernel too old
        return Check(
            "seccomp",
            False,
            f"cannot build the filter: {exc}",
            "apt install libseccomp2; pip install pyseccomp",
            ("*",),
        )
    return Check("seccomp", True, f"filter builds ({size} bytes of BPF); kernel mode {mode}")


#: how a user gets memory and pids cgroups of their own on a systemd host (cgroup v2)
SYSTEMD_DELEGATION = (
    "sudo mkdir -p /etc/systemd/system/user@.service.d && printf '[Service]\\nDelegate=memory "
    "pids\\n' | sudo tee /etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl "
    "daemon-reload; then, after logging in again, run egg in a delegated scope: systemd-run "
    "--user --scope -p Delegate=yes egg ..."
)


def check_cgroups() -> Check:
    """memory, pids and CPU-accounting cgroups. Missing only because this user may not create
    them (not root, nothing delegated) is a note, not a failure: the platform works, and
    resources.memory, resources.max_pids and resources.cpu are what this user cannot have until
    they are delegated (resources.cpu_per_process needs no cgroup)."""
    support = cgroups.detect()
    blocks = tuple(cgroups.KEYS[c] for c in support.problems)
    problems = "; ".join(f"{c}: {why}" for c, why in sorted(support.problems.items()))
    if not support.problems:
        return Check("cgroups", True, support.describe())
    permission = os.getuid() != 0 and all(
        "not writable by uid" in why or "delegate" in why for why in support.problems.values()
    )
    if not permission:
        return Check(
            "cgroups",
            False,
            f"{support.describe()}; {problems}",
            "run egg as root, or delegate a cgroup to this user",
            blocks,
        )
    controllers = ", ".join(sorted(support.problems))
    where = "; ".join(why.split(" (")[0] for _, why in sorted(support.problems.items()))
    if support.version == 2:
        fix = SYSTEMD_DELEGATION
    else:
        fix = (
            "cgroup v1 is not delegated to users: run egg as root, or boot the host with cgroup "
            f"v2 (systemd.unified_cgroup_hierarchy=1) and then: {SYSTEMD_DELEGATION}"
        )
    return Check(
        "cgroups",
        True,
        f"{controllers}: not available to this user (uid {os.getuid()}: {where})",
        fix,
        blocks,
        note=True,
    )


def check_landlock() -> Check:
    number = LANDLOCK_CREATE_RULESET.get(platform.machine())
    if number is None:
        return Check("Landlock", True, "unknown syscall number on this architecture (not used)")
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(number, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 0:
        return Check("Landlock", True, f"not available (errno {ctypes.get_errno()}); not required")
    return Check("Landlock", True, f"ABI {abi} (not required by egg)")


def check_socket_gate() -> Check:
    """The socket gate (socketgate.py) needs seccomp user notifications with killable waits
    (Linux 5.19), pidfd_getfd (5.6) and openat2 (5.6): start ``true`` under it."""
    import subprocess

    from . import gate_filter, socketgate

    try:
        gate = socketgate.Gate(gate_filter.programs(None), socketgate.Grants())
    except Exception as exc:
        return Check("socket gate", False, f"cannot build its filters: {exc}", None, ("linux-ns",))
    try:
        proc = subprocess.Popen(
            ["true"], pass_fds=(gate.child_fd,), preexec_fn=gate.child_setup, close_fds=True
        )
        try:
            gate.started()
            ok, detail = True, "every connect() of a sandbox is judged by egg"
        except OSError:
            ok, detail = False, gate.error or "cannot start"
        proc.wait()
    finally:
        gate.close()
    fix = None if ok else "Linux 5.19 or later with seccomp user notifications"
    return Check("socket gate", ok, detail, fix, () if ok else ("linux-ns",))


def check_tools() -> list[Check]:
    checks = []
    prlimit = host_which("prlimit")
    checks.append(
        Check(
            "prlimit",
            prlimit is not None,
            prlimit or "not found",
            "apt install util-linux",
            () if prlimit else ("resources.max_fds", "resources.cpu", "resources.memory"),
        )
    )
    code, _ = _run([host_which("env") or "/usr/bin/env", "--default-signal=INT", "true"])
    checks.append(
        Check(
            "env --default-signal",
            code == 0,
            "coreutils env restores Ctrl-C for the command" if code == 0 else "unsupported",
            None if code == 0 else "coreutils >= 8.31 is needed",
            () if code == 0 else ("*",),
        )
    )
    return checks


#: the programs egg runs on the host, as the user
HELPERS = ("bwrap", "prlimit", "strace", "git")


def check_helpers() -> Check:
    """Threat H: egg runs its helpers only from places no sandbox can write (a ``bwrap`` planted
    in a workspace on PATH would run on the host at the next launch)."""
    used = []
    ignored = []
    missing = []
    for name in HELPERS:
        found = host_which(name)
        if found:
            used.append(f"{name}={found}")
        skipped = untrusted_candidates(name)
        ignored += skipped
        if not found and skipped:
            missing.append(name)
    detail = "run only from directories only root can write: " + (", ".join(used) or "none")
    if ignored:
        detail += "; ignored (a sandbox could have put them there): " + ", ".join(ignored)
    return Check(
        "host helpers",
        not missing,
        detail,
        None if not missing else f"install {', '.join(missing)} system-wide (apt install ...)",
        ("*",) if "bwrap" in missing else (),
    )


def diagnose(bwrap: str | None) -> list[Check]:
    return [
        check_bwrap(bwrap),
        check_bind_fd(bwrap),
        check_userns(bwrap),
        check_apparmor(),
        check_seccomp(),
        check_cgroups(),
        check_landlock(),
        check_socket_gate(),
        *check_tools(),
        check_helpers(),
    ]
