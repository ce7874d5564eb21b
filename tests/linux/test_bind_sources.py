"""What egg decided to mount is what bwrap mounts: a directory swapped for a symlink between the
decision and bwrap's mounts is never followed (threat: another sandbox that can write a directory
on the way — a session in the parent workspace — races this launch).

The swap is made at the worst moment there is, deterministically: inside egg's own process,
right before the spawn (a ``sitecustomize`` wrapping ``Prepared.starting``), after every check.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from egg_plugins.platforms.linux import bindfds
from tests.linux.conftest import Box, Result, until_cached

#: the end of each ``sitecustomize`` below: its action run in egg's own process right before
#: the spawn, on every path — before the start hooks (the full path, sessions: before the
#: masks of vanished files are dropped and the binds pinned) and before the exec cache's fast
#: path plants its placeholders (the same moment there)
AT_THE_SPAWN = """
import egg_core.sandbox as sandbox
import egg_plugins.platforms.linux.placeholders as placeholders

_starting = sandbox.Prepared.starting
_plant = placeholders.plant


def starting(self):
    {act}()
    return _starting(self)


def plant(*args, **kwargs):
    {act}()
    return _plant(*args, **kwargs)


sandbox.Prepared.starting = starting
placeholders.plant = plant
"""

SWAP = """\
import os


def swap():
    if not os.path.exists({armed!r}):
        return
    if os.path.isdir({sub!r}) and not os.path.islink({sub!r}):
        os.rename({sub!r}, {sub!r} + ".orig")
        os.symlink({target!r}, {sub!r})

""" + AT_THE_SPAWN.format(act="swap")


def swapper(box: Box, sub: Path, armed: bool = True) -> dict[str, str]:
    """The environment that makes egg's process swap ``sub`` for a symlink that climbs to the
    root (``../../..``): bwrap resolving it would take the host's ``/`` as the source and the
    sandbox's ``/`` as the destination — the host's whole tree, writable. Not ``armed``, it
    swaps nothing until :func:`arm` (the same environment: a cached launch stays a hit)."""
    directory = box.mkdir(box.root / "swapper")
    climb = os.path.relpath("/", sub.parent)
    code = SWAP.format(sub=str(sub), target=climb, armed=str(box.root / "swapper-armed"))
    (directory / "sitecustomize.py").write_text(code)
    os.chmod(directory / "sitecustomize.py", 0o644)
    if armed:
        arm(box)
    return {"PYTHONPATH": str(directory)}


def arm(box: Box) -> None:
    """Outside the swapper's directory: its mtime is part of the exec cache's key."""
    (box.root / "swapper-armed").touch()


def refused(result: Result, cache: str) -> list[str]:
    """What egg said, once it is checked that a cached launch was one (``cache`` "1")."""
    said = result.stderr.splitlines()
    if cache == "1":
        assert "egg: exec cache hit" in said, result.stderr
    return [line for line in said if not line.startswith("egg: exec cache")]


def cached_or_not(box: Box, sub: Path, cache: str, *command: str) -> dict[str, str]:
    """The environment of a launch whose ``sub`` is swapped right before its spawn: with
    ``cache`` "1", a launch of ``command`` the exec cache stored (by a first run, unswapped)."""
    env = {"EGG_EXEC_CACHE": "debug" if cache == "1" else "0"}
    env.update(swapper(box, sub, armed=cache == "0"))
    if cache == "1":
        box.exec(*command, env=env)
        arm(box)
    return env


@pytest.mark.parametrize("cache", ["0", "1"])
def test_a_writable_directory_swapped_for_a_symlink_before_the_mount_is_never_followed(
    box: Box, cache: str
) -> None:
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")  # the host's, outside every rule: read-only
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})
    command = ("sh", "-c", f"echo escaped > {target}/x")
    env = cached_or_not(box, sub, cache, *command)

    result = box.exec(*command, env=env)

    assert not (target / "x").exists(), "the sandbox wrote a host directory outside every rule"
    assert result.returncode == 125, result.stderr
    said = refused(result, cache)
    assert len(said) == 1, result.stderr
    assert "changed while the sandbox was being set up" in said[0]
    assert str(sub) in said[0]


@pytest.mark.parametrize("options", [[], ["--trace"]], ids=["plain", "traced"])
def test_a_session_whose_directory_is_swapped_before_the_mount_never_starts(
    box: Box, options: list[str]
) -> None:
    """``--trace`` runs bwrap under strace, whose own options end with a ``--``."""
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})
    command = ["sh", "-c", f"echo escaped > {target}/x"]

    result = box.run("run", *options, "--", *command, env=swapper(box, sub))

    assert not (target / "x").exists()
    assert "changed while the sandbox was being set up" in result.stdout + result.stderr
    assert result.returncode == 125, result.stdout + result.stderr


def test_a_try_bind_whose_source_is_gone_is_left_out_and_others_are_descriptors(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    gone = str(tmp_path / "gone")
    argv, fds = bindfds.pin(
        ["bwrap", "--ro-bind-try", gone, "/gone", "--bind", str(kept), "/k", "--", "--bind", "x"],
        "bwrap",
    )
    try:
        assert argv == ["bwrap", "--bind-fd", str(fds[0]), "/k", "--", "--bind", "x"]
        assert os.readlink(f"/proc/self/fd/{fds[0]}") == str(kept)
        assert all(fd >= bindfds.FD_FLOOR and os.get_inheritable(fd) for fd in fds)
    finally:
        for fd in fds:
            os.close(fd)


def test_a_source_reached_through_a_symlink_is_refused_and_nothing_stays_open(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    before = set(os.listdir("/proc/self/fd"))

    with pytest.raises(bindfds.SourceChanged, match="changed while the sandbox"):
        bindfds.pin(
            ["bwrap", "--ro-bind", str(real), "/a", "--bind", str(tmp_path / "link/x"), "/b"],
            "bwrap",
        )

    assert set(os.listdir("/proc/self/fd")) == before


FLIP = """\
import os
import egg_core.sandbox as sandbox
import egg_plugins.platforms.linux.bwrap as bwrap

SUB = {sub!r}


def to_link():
    if os.path.isdir(SUB) and not os.path.islink(SUB):
        os.rename(SUB, SUB + ".orig")
        os.symlink({target!r}, SUB)


def back():
    if os.path.islink(SUB):
        os.unlink(SUB)
        os.rename(SUB + ".orig", SUB)


_real_sources = bwrap.real_sources
_starting = sandbox.Prepared.starting


def real_sources(*args, **kwargs):  # after every decision: a symlink
    to_link()
    return _real_sources(*args, **kwargs)


def starting(self):  # a directory again before the spawn (an attacker flipping it all along)
    back()
    return _starting(self)


bwrap.real_sources = real_sources
sandbox.Prepared.starting = starting
"""


def test_a_source_is_never_resolved_again_after_the_decision(box: Box) -> None:
    """A rule's source is its real path as the decision found it: spelling the sources by their
    real paths at the end of the command line must not follow a symlink swapped in since (it
    would be a real path, "/", that the pin opens happily, bound over the directory again).
    What is bound at ./sub is the directory decided, which is there again by the spawn."""
    sub = box.mkdir(box.workspace / "sub")
    box.write(sub / "marker", "the directory decided\n")
    target = box.mkdir(box.root / "host-target")
    hook = box.mkdir(box.root / "flipper")
    climb = os.path.relpath("/", sub.parent)
    (hook / "sitecustomize.py").write_text(FLIP.format(sub=str(sub), target=climb))
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})
    through = f"{sub}{target}/x"  # the host's / bound at ./sub would show the target here

    result = box.exec(
        "sh",
        "-c",
        f"cat {sub}/marker; echo escaped > {through}",
        env={"PYTHONPATH": str(hook), "EGG_EXEC_CACHE": "0"},
    )

    assert not (target / "x").exists(), "the host's / was bound writable at ./sub"
    assert result.stdout == "the directory decided\n", result.stderr


MIDWAY = """\
import os
import egg_plugins.platforms.linux.bwrap as bwrap

SUB = {sub!r}
_entry_mounts = bwrap._entry_mounts


def entry_mounts(entry, *args, **kwargs):  # after the trust analysis, before the rule's mounts
    if entry.path == SUB and os.path.isdir(SUB) and not os.path.islink(SUB):
        os.rename(SUB, SUB + ".orig")
        os.symlink({target!r}, SUB)
    return _entry_mounts(entry, *args, **kwargs)


bwrap._entry_mounts = entry_mounts
"""


@pytest.mark.parametrize("cache", ["0", "debug"], ids=["plain", "recorded"])
def test_a_directory_swapped_while_the_rules_are_decided_is_never_followed(
    box: Box, cache: str
) -> None:
    """The trust analysis found a directory (no planted link), the rule's mounts a symlink
    (``../../..``: the real path "/", source and destination, which the pin opens happily):
    one look at each path makes them agree, and the pin refuses the directory decided."""
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")
    hook = box.mkdir(box.root / "midway")
    climb = os.path.relpath("/", sub.parent)
    (hook / "sitecustomize.py").write_text(MIDWAY.format(sub=str(sub), target=climb))
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"]})
    env = {"PYTHONPATH": str(hook), "EGG_EXEC_CACHE": cache}  # the exec cache's recording too

    result = box.exec("sh", "-c", f"echo escaped > {target}/x", env=env)

    assert not (target / "x").exists(), "the sandbox wrote a host directory outside every rule"
    assert result.returncode == 125, result.stderr
    assert "changed while the sandbox was being set up" in result.stderr


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
@pytest.mark.parametrize("where", ["jail", "home below a symlink"])
def test_sources_egg_names_by_another_path_are_bound_by_their_real_paths(
    box: Box, where: str
) -> None:
    """The sources the rules did not resolve are egg's own: a jail's system directories
    (``/lib64`` is ``usr/lib64`` on a merged /usr) and a placeholder in a home reached through
    a symlink (its parent resolved when it was decided; a relative one: bwrap resolves an
    absolute one on the way to a mount point against its own root, not the sandbox's)."""
    (box.root / "linked").symlink_to(box.home.name)
    env = {"EGG_EXEC_CACHE": "0"}
    if where == "jail":
        fs = ["deny:/", "rw:."]
    else:
        env["HOME"] = str(box.root / "linked")
        fs = ["ro:/", "rw:~", "deny-write:~/planted.yaml"]
    box.config({"base": "none", "fs": fs})

    result = box.exec("sh", "-c", "echo ran", env=env)

    assert (result.returncode, result.stdout) == (0, "ran\n"), result.stderr
    assert not (box.home / "planted.yaml").exists()


@pytest.mark.parametrize("cache", ["0", "1"])
@pytest.mark.parametrize(
    ("identity", "resources"),
    [("root", {"memory": "2G"}), ("root", {"max_fds": 4096}), ("nobody", {"max_fds": 4096})],
    ids=["root-cgroups", "root-prlimit", "nobody-prlimit"],  # the memory cgroup: root's here
    indirect=["identity"],
)
def test_a_swapped_directory_is_never_followed_under_resource_limits(
    box: Box, cache: str, resources: dict[str, object]
) -> None:
    """Resource limits put wrappers before bwrap (the cgroup join, ``prlimit ... --``): their
    own ``--`` must not end the search for bwrap's binds."""
    sub = box.mkdir(box.workspace / "sub")
    target = box.mkdir(box.root / "host-target")
    box.config({"base": "none", "fs": ["ro:/", "rw:./sub"], "resources": resources})
    command = ("sh", "-c", f"echo escaped > {target}/x")
    env = cached_or_not(box, sub, cache, *command)

    result = box.exec(*command, env=env)

    assert not (target / "x").exists(), "the sandbox wrote a host directory outside every rule"
    assert result.returncode == 125, result.stderr
    said = refused(result, cache)
    assert len(said) == 1, result.stderr
    assert "changed while the sandbox was being set up" in said[0]


def test_binds_are_pinned_after_a_wrapper_that_ends_its_own_options(tmp_path: Path) -> None:
    """prlimit, the cgroup join and strace come before bwrap, each with a ``--`` of its own."""
    argv = ["prlimit", "--nofile=64:64", "--", "/usr/bin/bwrap", "--bind", str(tmp_path), "/k"]

    pinned, fds = bindfds.pin([*argv, "--", "sh"], "/usr/bin/bwrap")
    try:
        assert pinned == [*argv[:4], "--bind-fd", str(fds[0]), "/k", "--", "sh"]
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("target", ["--", "--bind", "--ro-bind-try"])
def test_a_symlinks_target_is_never_read_as_one_of_bwraps_options(
    tmp_path: Path, target: str
) -> None:
    """A home's entry that is a symlink is recreated with its target as bwrap's argument:
    whatever that target spells, the binds after it are pinned and nothing else is."""
    link = str(tmp_path / "link")
    argv = ["bwrap", "--symlink", target, link, "--ro-bind", str(tmp_path), "/k", "--", "sh"]

    pinned, fds = bindfds.pin(argv, "bwrap")
    try:
        assert pinned == [*argv[:4], "--ro-bind-fd", str(fds[0]), "/k", "--", "sh"]
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize(
    "argv",
    [
        ["prlimit", "--", "sh"],  # no bwrap at all
        ["bwrap", "--dev-bind", "/", "/", "--", "sh"],  # a bind by name egg cannot pin
        ["bwrap", "--some-future-option", "/", "--bind", "/", "/", "--", "sh"],
        ["bwrap", "--bind", "/"],  # cut short
    ],
)
def test_a_command_line_bwrap_would_read_otherwise_is_refused(argv: list[str]) -> None:
    before = set(os.listdir("/proc/self/fd"))

    with pytest.raises(bindfds.PinFailed):
        bindfds.pin(argv, "bwrap")

    assert set(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
@pytest.mark.parametrize("egg_home", ["plain", "below a symlink"])
def test_a_launch_with_a_home_layer_is_still_cached(box: Box, egg_home: str) -> None:
    """The home layer is made afresh for every run: its path is no fact of the entry (which
    would then never hold again), and the cached launch binds the new layer, by its real path
    when ``$EGG_HOME`` is below a symlink (as under a linked ``/home``)."""
    fake = box.write(box.root / "bin" / "claude", "#!/bin/sh\necho ran\n", mode=0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "EGG_EXEC_CACHE": "debug"}
    if egg_home != "plain":  # (a symlink as $EGG_HOME itself: the test at the end)
        (box.root / "linked").symlink_to(box.home)
        env["EGG_HOME"] = str(box.root / "linked" / box.egg_home.name)
    box.config({"network": {"agent_domains": "none"}})

    runs = until_cached(lambda: box.exec("claude", options=["--agent", "claude"], env=env))

    assert "egg: exec cache hit" in runs[-1].stderr.splitlines(), [r.stderr for r in runs]
    assert len(runs) > 1  # the full path ran too
    assert all((r.returncode, r.stdout) == (0, "ran\n") for r in runs), [r.stderr for r in runs]


def limited(box: Box, soft: int, hard: int, *args: str, env: dict[str, str]) -> Result:
    """``egg ARGS`` with its descriptor limit at ``soft``/``hard`` (a desktop session's 1024)."""
    argv = ["prlimit", f"--nofile={soft}:{hard}", *box.command(*args)]
    proc = subprocess.run(
        argv, env=box.env(env), cwd=box.workspace, capture_output=True, text=True, timeout=120
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def crowded_home(box: Box) -> dict[str, str]:
    """A home of 1100 entries (more than a desktop session's 1024 descriptors), each a bind of
    the home layer (an agent with home files), and the environment that runs a fake ``claude``
    as that agent."""
    for number in range(1100):
        (box.home / f"d{number:04}").mkdir()
        box.chown(box.home / f"d{number:04}")
    fake = box.write(box.root / "bin" / "claude", "#!/bin/sh\necho ran\n", mode=0o755)
    box.config({"network": {"agent_domains": "none"}})
    return {"PATH": f"{fake.parent}:/usr/bin:/bin", "EGG_EXEC_CACHE": "debug"}


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
def test_a_home_of_many_entries_runs_on_both_paths_under_a_low_soft_limit(
    box: Box, crowded_home: dict[str, str]
) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    runs = until_cached(
        lambda: limited(
            box, 1024, hard, "exec", "--agent", "claude", "--", "claude", env=crowded_home
        )
    )

    assert "egg: exec cache hit" in runs[-1].stderr.splitlines(), [run.stderr for run in runs]
    assert len(runs) > 1  # the full path ran too
    for run in runs:
        assert (run.returncode, run.stdout) == (0, "ran\n"), run.stderr


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
@pytest.mark.parametrize("cache", ["0", "1"])
def test_too_many_binds_for_the_descriptor_limit_is_one_line_and_nothing_left_behind(
    box: Box, crowded_home: dict[str, str], cache: str
) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if cache == "1":  # stored with room to spare, then run where there is none
        for _ in range(2):
            limited(box, 1024, hard, "exec", "--agent", "claude", "--", "claude", env=crowded_home)
    else:
        crowded_home["EGG_EXEC_CACHE"] = "0"

    result = limited(box, 1024, 1024, "exec", "--agent", "claude", "--", "claude", env=crowded_home)

    said = refused(result, cache)
    assert result.returncode == 125, result.stderr
    assert len(said) == 1, result.stderr
    assert "every bind takes a descriptor" in said[0]
    assert [p.name for p in (box.egg_home / "run").iterdir() if p.name.startswith("exec-")] == []


@pytest.mark.parametrize("cache", ["0", "1"])
def test_a_refused_launch_leaves_no_placeholder_behind(box: Box, cache: str) -> None:
    """Placeholders are planted before the binds are pinned (bwrap binds each onto itself):
    a launch refused then removes them as one that ran does."""
    sub = box.mkdir(box.workspace / "sub")
    planted = box.workspace / "next-policy.yaml"
    box.config({"base": "none", "fs": ["ro:/", "rw:.", "rw:./sub", f"deny-write:{planted}"]})
    env = cached_or_not(box, sub, cache, "true")

    result = box.exec("true", env=env)

    assert result.returncode == 125, result.stderr
    assert "changed while the sandbox was being set up" in refused(result, cache)[0]
    assert not planted.exists()


VANISH = """\
import os


def vanish():
    if os.path.exists({armed!r}) and os.path.exists({path!r}):
        os.unlink({path!r})

""" + AT_THE_SPAWN.format(act="vanish")


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
@pytest.mark.parametrize("limits", [{}, {"resources": {"max_fds": 512}}], ids=["plain", "prlimit"])
@pytest.mark.parametrize("cache", ["0", "1"])
def test_a_masked_file_that_vanishes_is_left_out_with_egg_home_below_a_symlink(
    box: Box, cache: str, limits: dict[str, object]
) -> None:
    """A denied file is the empty file bound over it, and one gone by the spawn (a socket of a
    daemon restarting) is not mounted over (linux.vanishing): that holds when the empty file is
    named by its real path in bwrap's options, ``$EGG_HOME`` below a symlink, and when a
    wrapper with a ``--`` of its own runs before bwrap (prlimit, under a resources: limit)."""
    sock = box.write(box.workspace / "daemon.sock", "")
    box.config({"base": "none", "fs": ["ro:/", f"deny:{sock}"], **limits})
    (box.root / "linked").symlink_to(box.home)
    hook = box.mkdir(box.root / "vanisher")
    armed = box.root / "vanisher-armed"
    (hook / "sitecustomize.py").write_text(VANISH.format(path=str(sock), armed=str(armed)))
    env = {
        "EGG_HOME": str(box.root / "linked" / box.egg_home.name),
        "PYTHONPATH": str(hook),
        "EGG_EXEC_CACHE": "debug" if cache == "1" else "0",
    }
    if cache == "1":
        assert box.exec("true", env=env).returncode == 0
    armed.touch()

    result = box.exec("true", env=env)

    refused(result, cache)  # a cache hit, when cached
    assert result.returncode == 0, result.stderr
    assert not sock.exists()


@pytest.mark.parametrize("cache", ["0", "1"])
def test_an_egg_home_that_is_a_symlink_launches_and_is_cached(box: Box, cache: str) -> None:
    """``$EGG_HOME`` (hidden from every sandbox) may be the user's own symlink; its directories
    are bound following their links, a rule's source never is."""
    real = box.mkdir(box.root / "real-egg-home", mode=0o700)
    link = box.root / "linked-egg-home"
    link.symlink_to(real)
    env = {"EGG_HOME": str(link), "EGG_EXEC_CACHE": "debug" if cache == "1" else "0"}

    secret = box.write(box.root / "secret", "s")  # masked with egg's empty file, in $EGG_HOME
    box.config({"fs": ["rw:./", f"deny:{secret}"]})
    runs = [box.exec("sh", "-c", f"cat {secret}; echo ok", env=env) for _ in "12"]

    assert [(r.returncode, r.stdout) for r in runs] == [(0, "ok\n")] * 2, runs[0].stderr
    if cache == "1":  # and the exec cache still answers (it took the link for another's home)
        assert runs[1].stderr == "egg: exec cache hit\n", [r.stderr for r in runs]
