"""What an exec cache hit costs in imports: exactly the modules below, nothing new.

A hit exists to skip the full path's imports (attrs, pluggy, PyYAML, the policy); one module that
imports something heavy makes every ``egg exec`` pay for it again (a platform's fact checker
importing the policy once cost 50 ms of a 70 ms hit). So the modules a hit imports are pinned
here, for a plain ``egg exec`` and for an agent's with its network proxy, and the modules a
platform's facts are checked by (``egg_core.observe.custom``) must import the standard library
alone. A module added on purpose is added to the list here, with the reason it is needed.
"""

from __future__ import annotations

import importlib.util
import marshal
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_exec_cache import cached_call, egg_exec, hit, miss_reason, own_miss

ROOT = Path(__file__).resolve().parent.parent
#: says which modules were loaded when the process ends: ``-X importtime`` does not see those
#: ``importlib.import_module`` imports (only the imports they make)
AT_EXIT = (
    "import atexit, sys; atexit.register(lambda: sys.stderr.write("
    "'loaded at exit: ' + ' '.join(sorted(sys.modules)) + '\\n')); "
)
#: the ``egg`` command (installed as it is, its first line aside: see the file)
LAUNCHER = ROOT / "launcher" / "egg"
#: what ``egg ARGS`` runs: the launcher's code, as ``__main__``
ENTRY = AT_EXIT + f"exec(compile(open({str(LAUNCHER)!r}).read(), {str(LAUNCHER)!r}, 'exec'))"

#: a hit of ``egg exec -- CMD``, beyond what the interpreter imports to start
PLAIN_HIT = {
    "__future__",  # the modules' ``from __future__ import annotations``
    "gc",  # a hit collects no garbage until its command is admitted
    "egg_core",
    "egg_core.cli",  # main(): offers exec to the cache
    "egg_core.execcache",  # the key, the entry
    "egg_core.cachedrun",  # the run: admission, launch directory, window
    "egg_core.hitcode",  # the rest of a hit's code, from one file of the cache
    "egg_core.facts",  # the entry's facts checked again
    "egg_core.seeds",  # placeholder facts
    "egg_core.rundirs",  # $EGG_HOME, the launch directory, crashed launches
    "egg_core.agentsockets",  # the ssh agents fact's checker
    "egg_core.windows",  # the write window around the run
    "egg_core.snapshot",  # the settings snapshot (./.envrc in every run)
    "egg_core.spawn",  # signals, the exit code
    "egg_core.api",  # the plugin API's package: its names load when first used (PEP 562)
    "egg_core.api.fast",  # what a platform's runner may import (the standard library's alone)
    "egg_plugins",
    "egg_plugins.platforms",
    "egg_plugins.platforms.linux",
    "egg_plugins.platforms.linux.fastrun",  # the runner
    "egg_plugins.platforms.linux.placeholders",
    "egg_plugins.platforms.linux.status",  # bwrap's --json-status-fd
    "egg_plugins.platforms.linux.bindfds",  # binds from descriptors opened right before it
    "egg_plugins.platforms.linux.vanishing",  # masked files gone since (a home's secrets)
    "atexit",  # what was registered runs before the hit's quick exit (egg_core.cli._exit_now)
    "fcntl",  # placeholders' locks
    # the socket gate: every connect() of the sandbox judged by egg (C modules, and ctypes' own
    # C module for the system calls os lacks: seccomp, pidfd_getfd, openat2)
    "egg_plugins.platforms.linux.socketgate",
    "egg_plugins.platforms.linux.gate_abi",
    "egg_plugins.platforms.linux.gate_filter",  # the cached filters, read
    "_socket",  # its socket operations (and a forked child's channel back, on the full path)
    "_queue",  # its workers' jobs
    "select",  # it waits for calls
    "resource",  # its descriptor limit
    "errno",
    "struct",
    "_struct",
    "_ctypes",
}
#: either of these: sha256 in C (3.12 renamed the module)
SHA256 = {"_sha256", "_sha2"}
#: ``EGG_EXEC_CACHE=debug`` saying "hit" (what these tests need to know it was one)
DEBUG = {"egg_core.sanitize", "unicodedata"}
#: and of ``egg exec --agent claude -- CMD``: a home layer, and the allowlist's proxy
AGENT_HIT = PLAIN_HIT | {
    "egg_core.hostfs",  # the settings files copied and put back: safe file operations
    "egg_core.safeio",
    "egg_core.homefiles",  # ~/.claude.json staged in a fresh home layer
    "egg_core.netchild",  # the proxy's sockets, its child process
    "egg_plugins.platforms.linux.fastnet",  # the runner with a network
}


def imported(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-P", "-c", ENTRY, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def import_lines(stderr: str) -> list[tuple[int, str]]:
    """(depth, module) of each line ``-X importtime`` wrote (each process's: a forked child's
    too), in its order: a module's own imports come right before it, one level deeper."""
    found = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and not line.endswith("imported package"):
            field = line.split("|", 2)[2]
            found.append(((len(field) - len(field.lstrip()) - 1) // 2, field.strip()))
    return found


def modules(stderr: str) -> set[str]:
    """What the process (and a forked child) imported, by both accounts."""
    found = {name for _, name in import_lines(stderr)}
    for line in stderr.splitlines():
        if line.startswith("loaded at exit: "):
            found.update(line.removeprefix("loaded at exit: ").split())
    return found


def imported_by(stderr: str, roots: tuple[str, ...]) -> set[str]:
    """``roots`` and every module imported while one of them was (its subtree), with the
    submodules those registered themselves (``importlib`` adds ``importlib._bootstrap``)."""
    lines = import_lines(stderr)
    found = set()
    for index, (depth, name) in enumerate(lines):
        if name not in roots:
            continue
        found.add(name)
        below = index - 1
        while below >= 0 and lines[below][0] > depth:
            found.add(lines[below][1])
            below -= 1
    reported = {name for _, name in lines}
    for name in modules(stderr) - reported:
        parts = name.split(".")
        if any(".".join(parts[:n]) in found for n in range(1, len(parts))):
            found.add(name)
    return found


def startup(work: Path, env: dict[str, str], code: str = "pass") -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-P", "-c", AT_EXIT + code],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return modules(result.stderr)


@pytest.mark.parametrize(
    ("options", "allowed"),
    [((), PLAIN_HIT), (("--agent", "claude"), AGENT_HIT)],
    ids=["plain", "agent"],
)
def test_a_hit_imports_only_the_modules_it_needs(cache_workspace, options, allowed) -> None:
    work, env = cache_workspace
    egg_exec(work, env, "true", options=options)
    cached_call(work, env, "true", options=options)
    args = ["exec", *options, "--", "true"]
    reasons = []
    for _ in range(5):  # as cached_call: a miss the shared host caused is tried again
        result = imported(work, env, *args)
        if hit(result):
            break
        reasons.append(miss_reason(result))
        assert not own_miss(reasons[-1], work, env), reasons
    else:
        raise AssertionError(f"no hit: {reasons}")
    # beyond the interpreter's own start
    new = modules(result.stderr) - startup(work, env)
    unexpected = sorted(new - allowed - SHA256 - DEBUG)
    assert not unexpected, f"a hit imports modules it did not before: {unexpected}"
    assert len(new & SHA256) == 1


def test_the_pinned_modules_are_what_a_hit_needs() -> None:
    """Each pinned module of egg's exists (a renamed one would leave a stale entry)."""
    for name in sorted(AGENT_HIT):
        if name.startswith(("egg_core", "egg_plugins")):
            assert importlib.util.find_spec(name) is not None, name


def checkers_recorded(egg_home: Path) -> set[str]:
    """The modules of every platform fact the cache's entries hold."""
    found = set()
    for path in (egg_home / "cache" / "exec").iterdir():
        if path.name.endswith(".env") or path.name.startswith("."):
            continue
        with path.open("rb") as handle:
            entry = marshal.load(handle)
        for kind, subject, _ in [*entry["spawn_facts"], *entry["facts"]]:
            if kind == "x":
                found.add(str(subject[0]).partition(":")[0])
    return found


def checkers_named() -> set[str]:
    """The modules the ``*CHECKER`` constants of egg's source name."""
    pattern = re.compile(r'^\w*CHECKER\w* = "((?:egg_core|egg_plugins)\.[\w.]+):\w+"', re.M)
    found = set()
    for tree in ("egg_core", "plugins"):
        for path in (ROOT / tree).rglob("*.py"):
            found.update(pattern.findall(path.read_text()))
    return found


def test_fact_checkers_import_the_standard_library_alone(cache_workspace, egg_home) -> None:
    work, env = cache_workspace
    for options in ((), ("--agent", "claude"), ("--agent", "codex")):
        egg_exec(work, env, "true", options=options)
    recorded = checkers_recorded(egg_home)
    assert "egg_core.agentsockets" in recorded  # the ssh agents: every launch records it
    stdlib = set(sys.stdlib_module_names)
    for name in sorted(recorded | checkers_named()):
        new = startup(work, env, f"import {name}") - startup(work, env)
        ours = {name, *(name.rsplit(".", n)[0] for n in range(1, name.count(".") + 1))}
        beyond = sorted(m for m in new - ours if m.split(".")[0] not in stdlib)
        assert not beyond, f"{name} (a fact checker) imports {beyond}"
        heavy = sorted(m for m in new & {"typing", "re", "pathlib", "glob", "enum", "attrs"})
        assert not heavy, f"{name} (a fact checker) imports {heavy}: the hit path pays for it"
