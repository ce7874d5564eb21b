"""Turn an effective policy into bubblewrap arguments. No namespace or mount code of our own.

Mount order is the policy's order (shallow paths first, the more restrictive rule last at equal
depth), because a later mount covers an earlier one. egg's own protections ($EGG_HOME, the config
chain, the launcher) are mounted after every user rule, so no ``rw:`` can reopen them, and the
writable directories above them are pinned in place (see :func:`pinned_entries`). Denied
directories become empty tmpfs mounts that are made read-only at the very end, after any deeper
rule has created its mount point inside them.

Paths are resolved on the host before they are handed to bwrap: a rule on a symlink applies to what
the symlink points at (a denied symlink hides its target), a dangling symlink or a missing path is
skipped (there is nothing to expose or hide) unless it is a ``deny-write`` path the sandbox could
create (see :func:`placeholder_paths`: it is bound onto itself, and the launch plants it first),
and nothing here raises on a strange path.

Host unix sockets are not a mount question: ``connect()`` works through a read-only mount, so
the socket gate (:mod:`.socketgate`) judges every connect instead, at the moment it is made.

The mounts are a typed plan (:mod:`.mountplan`), computed once and asked what a path already
is; the argv is rendered from it last. Trust analysis (which rule paths a sandbox could have
planted) is :mod:`.trust`.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

import attrs

from egg_core.api import EffectivePolicy, EnforcementError, FsEntry
from egg_core.api.platform import MODE_RANK as _MODE_RANK
from egg_core.api.platform import NEED_FULL, observe, sandbox_cache_dir
from egg_core.api.platform import depth as _depth
from egg_core.api.platform import under as _under

from . import bindfds, sshroute
from .mountplan import Mount, MountPlan
from .trust import (
    pinned_entries,
    placeholder_paths,
    planted_link,
    prefix_siblings,
    probe,
    ruled_paths,
    symlink_problems,
    untrusted_rules,
)

__all__ = [
    "BwrapRequest",
    "build_args",
    "placeholder_paths",
    "probe",
    "symlink_problems",
    "untrusted_rules",
]

#: what a program needs to run when ``deny:/`` (jail mode) hides everything else
JAIL_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SANDBOX_HOSTNAME = "egg"
#: where the host-side network sockets appear inside the sandbox
NET_DIR_INSIDE = "/run/egg-net"
#: where the session's shared directory (the browser-open outbox) appears inside
SHARED_DIR_INSIDE = "/run/egg-session"
#: where the run's tool socket directory (egg_core.tools.server) appears inside, read-only
TOOLS_DIR_INSIDE = "/run/egg-tools"
#: host trees every sandbox gets a tmpfs over (private scratch space; /run holds the host's
#: control sockets, which the socket gate refuses anyway)
TMPFS_ROOTS = ("/tmp", "/var/tmp", "/run")
#: bubblewrap refuses more arguments than this
BWRAP_MAX_ARGS = 9000


@attrs.frozen(kw_only=True)
class BwrapRequest:
    """The inputs of :func:`build_args` that are not in the policy."""

    argv: Sequence[str]
    empty_file: str
    tty: bool = False
    seccomp_fd: int | None = None
    status_fd: int | None = None
    net_dir: str | None = None  # host dir holding the proxy/port sockets, bound at NET_DIR_INSIDE
    extra_ro: Sequence[str] = ()  # host paths the launch itself needs (the bridge's Python)
    shared_dir: str | None = None  # host dir the command may write, bound at SHARED_DIR_INSIDE
    tools_dir: str | None = None  # the tool socket's dir, bound read-only at TOOLS_DIR_INSIDE
    #: where ``cache:`` rules get their sandbox-only directories ($EGG_HOME: see
    #: egg_core.policy.sandbox_cache_dir); None: such rules mount nothing (the path stays as the
    #: root mount has it, read-only)
    cache_root: str | None = None
    #: the run's home layer (egg_core.homefiles), bound over the home with the home's entries
    #: bound back into it, except ``home_staged`` (names whose copies the layer holds)
    home_layer: str | None = None
    home_staged: Sequence[str] = ()
    #: the ssh route's directory (:mod:`..ssh.route`), bound read-only at ROUTE_INSIDE with its
    #: config over the system's; None: no route (the network is not filtered)
    ssh_route: str | None = None


def build_args(policy: EffectivePolicy, request: BwrapRequest, bwrap: str = "bwrap") -> list[str]:
    """The full ``bwrap ... -- argv`` command line for ``policy``. Every host observation it
    rests on goes through :mod:`egg_core.observe` (the exec cache's facts)."""
    args = [
        bwrap,
        "--die-with-parent",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        SANDBOX_HOSTNAME,
    ]
    if not request.tty:
        # No controlling terminal to inject into (TIOCSTI is also denied by seccomp); interactive
        # sessions keep theirs because agents are TUIs.
        args.append("--new-session")
    if policy.network_need != NEED_FULL:
        args.append("--unshare-net")
    plan, remount = _mounts(policy, request)
    args += plan.args()
    for path in dict.fromkeys(remount):
        if not plan.covered_after(path):
            args += ["--remount-ro", path]
    args += ["--chdir", policy.cwd]
    if request.seccomp_fd is not None:
        args += ["--seccomp", str(request.seccomp_fd)]
    if request.status_fd is not None:
        args += ["--json-status-fd", str(request.status_fd)]
    if len(args) + len(request.argv) > BWRAP_MAX_ARGS:
        raise EnforcementError(
            f"the sandbox needs {len(args)} bubblewrap arguments, more than it accepts "
            f"({BWRAP_MAX_ARGS}); use fewer rules"
        )
    return [*real_sources(args, bwrap, own_sources(policy, request)), "--", *request.argv]


#: bwrap's options that bind a host path (its source) somewhere in the sandbox
BIND_OPTIONS = frozenset({"--bind", "--ro-bind", "--bind-try", "--ro-bind-try"})


def own_sources(policy: EffectivePolicy, request: BwrapRequest) -> frozenset[str]:
    """The sources egg names that no rule resolved: its own files and directories, the jail's
    system directories and the interpreter's. None is where a sandbox writes."""
    own = [
        request.empty_file,
        request.net_dir,
        request.shared_dir,
        request.tools_dir,
        request.home_layer,
        *(
            [request.ssh_route, os.path.join(request.ssh_route, "ssh_config")]
            if request.ssh_route
            else []
        ),
        *request.extra_ro,
        *(JAIL_SYSTEM_PATHS if policy.jail else ()),
        *(cache_sources(policy, request.cache_root) if request.cache_root else ()),
    ]
    return frozenset(path for path in own if path)


def real_sources(args: Sequence[str], bwrap: str, own: Collection[str]) -> list[str]:
    """``args`` with the sources of ``own`` (:func:`own_sources`) spelled as their real paths,
    which :mod:`.bindfds` opens with no symlink allowed on the way (``$EGG_HOME`` may be below a
    linked ``/home``, ``/lib64`` is ``usr/lib64``). Read as bwrap reads its options
    (:func:`.bindfds.options`): a ``--symlink`` whose target is ``--bind`` is no bind.

    Every other source is a real path the decision found (a rule's, by :func:`probe`) and is
    never resolved again: a directory swapped for a symlink since then would be followed to a
    real path ("/") that the pin opens happily, where the one decided is refused as changed.
    A source that is its real path already is left unobserved: egg's per-run directories (the
    home layer, made afresh for every run) must be no fact of the exec cache's entry."""
    out = list(args)
    for index in bindfds.options(args, bwrap):
        source = out[index + 1]
        own_real = source in own and os.path.realpath(source) == source  # not a fact: see above
        if out[index] in BIND_OPTIONS and source in own and not own_real:
            out[index + 1] = observe.realpath(source)
    return out


def placeholder_mounts(path: str) -> list[Mount]:
    """A placeholder bound onto itself (see :mod:`.placeholders`), its source by the real path
    of its directory as the decision finds it: the file itself is planted only at the spawn."""
    parent, name = os.path.split(path)
    return [Mount.bind(os.path.join(observe.realpath(parent), name), path, writable=False)]


def _mounts(policy: EffectivePolicy, request: BwrapRequest) -> tuple[MountPlan, list[str]]:
    """The mounts in the order bwrap makes them, and the directories to remount read-only.

    After the root come the replaced trees and the rules, by the depth of the path they resolve
    to (a replaced tree before a rule at the same path), so that a shallower mount never covers
    a deeper one: ``ro:/var`` cannot bring the host's /var/tmp back, and a rule reached through
    a symlink sorts where it lands. egg's protections go after every rule (nothing may cover
    them), then the user's restrictive rules beneath them again (a protected read-only directory
    must not uncover a ``deny`` inside it).
    """
    empty = request.empty_file
    plan = MountPlan(empty)
    if policy.jail:
        plan.add(
            Mount.same(path, writable=False, optional=True)
            for path in (*JAIL_SYSTEM_PATHS, *request.extra_ro)
        )
    else:
        plan.add([Mount.same("/", writable=False)])
    # (depth, rank, order, mounts): /tmp, /var/tmp and /run are replaced by a tmpfs
    blocks: list[tuple[int, int, int, list[Mount]]] = []
    for order, root in enumerate(TMPFS_ROOTS):
        block = [Mount.tmpfs(root)]
        if root == "/run" and policy.network_need == NEED_FULL:
            resolv = observe.realpath("/etc/resolv.conf")
            if resolv.startswith("/run/") and observe.isfile(resolv):
                block.append(Mount.same(resolv, writable=False))
        blocks.append((_depth(root), 0, order, block))
    remount: list[str] = []
    placeholders = dict(placeholder_paths(policy))
    staged: frozenset[str] = frozenset()
    if request.home_layer:
        home = observe.realpath(policy.home)
        staged = frozenset(os.path.join(home, name) for name in request.home_staged)
        # after every rule at the home's own depth (a rule there would cover the layer) and
        # before every deeper one (which land on the entries bound back into it)
        blocks.append(
            (
                _depth(home),
                len(_MODE_RANK) + 1,
                1,
                home_layer_mounts(home, request.home_layer, request.home_staged),
            )
        )
    untrusted = untrusted_rules(policy)
    ruled = ruled_paths(policy)
    entries = pinned_entries(policy)
    for order, entry in enumerate(entries):
        if entry.path in placeholders:
            block = placeholder_mounts(entry.path)
        elif entry.path in untrusted:
            continue
        elif entry.mode == "cache":
            block = cache_mounts(entry, request.cache_root)
        else:
            block = _entry_mounts(entry, empty, remount, ruled, staged)
        if block:
            rank = 1 + _MODE_RANK[entry.mode]
            blocks.append((_depth(probe(entry.path).real), rank, order, block))
    # The sandbox's own /dev and /proc go after every rule at their depth or above (rw:/proc,
    # a symlink to /) and before deeper ones (rw:/dev/kvm, deny:/proc/kallsyms).
    blocks.append((1, len(_MODE_RANK) + 1, 0, [Mount("--dev", "/dev"), Mount("--proc", "/proc")]))
    for _, _, _, block in sorted(blocks, key=lambda b: b[:3]):
        plan.add(block)
    # For a root caller, uid 0 inside is uid 0 on the host, and most sysctls check nothing but
    # the uid (kernel.core_pattern would run a program as host root). bwrap's own cover of
    # /proc/sys is skipped because the directory itself reports "not writable", so cover it here,
    # after every rule.
    plan.add(
        [
            Mount.same("/proc/sys", writable=False),
            Mount.same("/proc/sysrq-trigger", writable=False, optional=True),
        ]
    )
    if policy.jail:
        for path in (policy.cwd, policy.home):
            if probe(path).kind == "missing" or not _exposed(path, policy):
                plan.add([Mount.dir(path)])
    shielded = []
    for entry in policy.protected:
        if entry.path in placeholders:
            block = placeholder_mounts(entry.path)
        elif entry.mode == "deny":
            block = _entry_mounts(entry, empty, remount)
        else:
            real = probe(entry.path).real
            if entry.mode in ("deny-write", "ro") and plan.already_read_only(real):
                continue
            block = _entry_mounts(entry, empty, remount)
            shielded.append(real)
        plan.add(block)
    again = []
    for order, entry in enumerate(policy.fs):
        real = probe(entry.path).real
        if (
            entry.mode in ("deny", "deny-write", "ro")
            and entry.path not in untrusted
            and entry.path not in placeholders
            and any(_under(real, root) and real != root for root in shielded)
        ):
            again.append((_depth(real), _MODE_RANK[entry.mode], order, entry))
    for _, _, _, entry in sorted(again, key=lambda item: item[:3]):
        plan.add(_entry_mounts(entry, empty, remount, ruled))
    if request.net_dir:
        plan.add([Mount.bind(request.net_dir, NET_DIR_INSIDE, writable=False)])
    if request.shared_dir:
        plan.add([Mount.bind(request.shared_dir, SHARED_DIR_INSIDE, writable=True)])
    if request.tools_dir:
        plan.add([Mount.bind(request.tools_dir, TOOLS_DIR_INSIDE, writable=False)])
    if request.ssh_route:
        plan.add(
            Mount.bind(source, dest, writable=False)
            for source, dest in sshroute.mounts_for(request.ssh_route)
        )
    return plan, remount


def _exposed(path: str, policy: EffectivePolicy) -> bool:
    return any(
        e.mode in ("rw", "ro", "rw-prefix", "deny-write")
        and (path == e.path or path.startswith(e.path.rstrip("/") + "/"))
        for e in policy.fs
    )


def _entry_mounts(
    entry: FsEntry,
    empty_file: str,
    remount: list[str],
    ruled: Sequence[tuple[str, str]] = (),
    staged: frozenset[str] = frozenset(),
) -> list[Mount]:
    """One rule's mounts. A prefix sibling in ``staged`` is the home layer's own copy (replaced
    atomically there): never bound over."""
    if entry.path == "/":
        return []  # jail mode (deny:/) and rw:/ are handled by the root mount
    fact = probe(entry.path)
    if fact.kind == "missing":
        return []
    real = fact.real
    if entry.mode in ("rw", "ro", "deny-write", "rw-prefix"):
        writable = entry.mode in ("rw", "rw-prefix")
        result = [Mount.same(real, writable=writable)]
        if entry.mode == "rw-prefix":
            for sibling in prefix_siblings(entry.path):
                if sibling in staged:
                    continue
                sib = probe(sibling)
                if sib.kind != "missing" and sib.real != real and not planted_link(sibling, ruled):
                    result.append(Mount.same(sib.real, writable=True))
        return result
    # deny
    if fact.kind == "dir":
        remount.append(real)
        return [Mount.tmpfs(real)]
    return [Mount.bind(empty_file, real, writable=False)]


def home_layer_mounts(home: str, layer: str, staged: Sequence[str]) -> list[Mount]:
    """The home layer (see egg_core.homefiles): ``layer`` bound over ``home``, and every entry
    of the host's home bound back into it read-only — a symlink recreated as the same symlink,
    an entry gone by the time bwrap mounts skipped — except the ``staged`` names, whose copies
    the layer holds. What the rules say about deeper paths is mounted after this."""
    out = [Mount.bind(layer, home, writable=True)]
    try:
        names = sorted(observe.listdir(home))
    except OSError:
        names = []
    for name in names:
        if name in staged:
            continue
        path = os.path.join(home, name)
        try:
            if not observe.islink(path):
                raise OSError
            target = os.readlink(path)  # not a fact: a link's target is its identity's
        except OSError:
            out.append(Mount.same(path, writable=False, optional=True))
        else:
            out.append(Mount.symlink(target, path))
    return out


def cache_mounts(entry: FsEntry, cache_root: str | None) -> list[Mount]:
    """A ``cache:`` rule: the sandbox's own directory bound where the host's cache is, so what
    it leaves there (a built wheel, an npx package, a crate's build script) never runs at the
    host's next build, and every sandbox run finds what earlier ones cached. A missing path, or
    one that is not a directory, mounts nothing (as a missing ``rw:`` path)."""
    fact = probe(entry.path)
    if cache_root is None or fact.kind != "dir":
        return []
    return [Mount.bind(sandbox_cache_dir(cache_root, fact.real), fact.real, writable=True)]


def cache_sources(policy: EffectivePolicy, cache_root: str) -> list[str]:
    """The sandbox-only directories the ``cache:`` rules of ``policy`` bind (to create first)."""
    facts = [probe(e.path) for e in policy.fs if e.mode == "cache"]
    return [sandbox_cache_dir(cache_root, fact.real) for fact in facts if fact.kind == "dir"]


def empty_file(directory: Path) -> str:
    """A read-only empty regular file to mount over denied files (created once, then reused)."""
    path = directory / "empty"
    try:
        st = os.lstat(path)  # not a fact: egg's own file, checked at every launch
        if stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_uid == os.getuid():
            return str(path)
        os.unlink(path)
    except FileNotFoundError:
        pass
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = directory / f".empty.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    os.close(fd)
    os.replace(tmp, path)
    return str(path)


def python_paths() -> list[str]:
    """Where this Python lives, for running the network bridge inside a jail."""
    return sorted({observe.realpath(p) for p in (sys.base_prefix, sys.prefix)})
