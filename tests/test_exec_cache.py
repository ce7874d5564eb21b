"""egg exec's cache of prepared launches: used when nothing changed, never when anything did."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]
ROOT = Path(__file__).resolve().parent.parent
#: calls a test makes to see a hit before it gives up: on a shared host other processes change
#: what a sandbox could see (a socket in the kernel's table, an ssh agent in /tmp) at any time,
#: and each such change is a miss that no test controls
HIT_ATTEMPTS = 5


def egg_exec(
    work: Path, env: dict[str, str], *command: str, options: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EGG, "exec", *options, "--", *command],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def hit(result: subprocess.CompletedProcess[str]) -> bool:
    return "egg: exec cache hit" in result.stderr


def miss_reason(result: subprocess.CompletedProcess[str]) -> str:
    """Why the call missed, as ``EGG_EXEC_CACHE=debug`` said it ("" when it did not miss)."""
    for line in result.stderr.splitlines():
        if line.startswith("egg: exec cache miss: "):
            return line.removeprefix("egg: exec cache miss: ")
    return ""


def own_miss(reason: str, work: Path, env: dict[str, str]) -> bool:
    """A miss this test caused: the environment it gave, or a path of its own workspace, home
    or ``$EGG_HOME`` (not the platform's host-wide facts, whose arguments name them too)."""
    if reason.startswith("the environment it read changed"):
        return True
    if "the platform's fact" in reason:
        return False
    roots = (str(work.parent), env.get("HOME", "\0"), env.get("EGG_HOME", "\0"))
    return any(root in reason for root in roots)


def cached_call(
    work: Path, env: dict[str, str], *command: str, options: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """A call that came from the cache. A miss for a reason of the test's own (see
    :func:`own_miss`) fails at once; any other is the shared host changing under the test, and
    the call is made again (each miss stores a fresh entry)."""
    reasons = []
    for _ in range(HIT_ATTEMPTS):
        result = egg_exec(work, env, *command, options=options)
        if hit(result):
            return result
        reasons.append(miss_reason(result) or result.stderr[-300:])
        if own_miss(reasons[-1], work, env):
            break
    raise AssertionError(f"no exec cache hit: {[reason[:300] for reason in reasons]}")


def test_second_identical_call_uses_the_cache_and_behaves_the_same(cache_workspace):
    work, env = cache_workspace
    first = egg_exec(work, env, "sh", "-c", "echo out; echo err >&2; exit 7")
    second = cached_call(work, env, "sh", "-c", "echo out; echo err >&2; exit 7")
    assert not hit(first)
    assert (first.returncode, first.stdout) == (second.returncode, second.stdout) == (7, "out\n")
    assert "err" in second.stderr


def test_signal_exit_code_through_the_cache(cache_workspace):
    work, env = cache_workspace
    egg_exec(work, env, "sh", "-c", "kill -TERM $$")
    result = cached_call(work, env, "sh", "-c", "kill -TERM $$")
    assert result.returncode == 128 + 15


@pytest.mark.fact_check
def test_changing_the_config_invalidates(cache_workspace):
    work, env = cache_workspace
    secret = work / "secret.txt"
    secret.write_text("top secret")
    assert egg_exec(work, env, "cat", "secret.txt").stdout == "top secret"
    cached_call(work, env, "cat", "secret.txt")
    (work / "egg.yaml").write_text("fs: ['deny:./secret.txt']\n")
    result = egg_exec(work, env, "cat", "secret.txt")
    assert not hit(result) and "top secret" not in result.stdout


@pytest.mark.fact_check
def test_a_newly_created_credentials_dir_is_denied_on_the_next_call(cache_workspace):
    work, env = cache_workspace
    home = Path(env["HOME"])
    credentials = home / ".aws" / "credentials"
    egg_exec(work, env, "cat", str(credentials))
    cached_call(work, env, "cat", str(credentials))
    credentials.parent.mkdir()
    credentials.write_text("AKIA-SECRET")
    result = egg_exec(work, env, "cat", str(credentials))
    assert not hit(result) and "AKIA-SECRET" not in result.stdout
    again = cached_call(work, env, "cat", str(credentials))
    assert "AKIA-SECRET" not in again.stdout


def test_a_new_socket_in_the_workspace_is_refused_on_the_next_call_a_hit(cache_workspace):
    work, env = cache_workspace
    probe = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect('ctl.sock'); print('CONNECTED')\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    egg_exec(work, env, sys.executable, "-c", probe)
    cached_call(work, env, sys.executable, "-c", probe)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(work / "ctl.sock"))
    server.listen()
    server.settimeout(0.5)
    try:
        result = egg_exec(work, env, sys.executable, "-c", probe)
        assert hit(result)  # nothing the decision rests on changed: the gate judges connects
        assert "CONNECTED" not in result.stdout
        with pytest.raises(TimeoutError):
            server.accept()  # the host side: nobody came
    finally:
        server.close()


def test_changing_the_environment_invalidates_and_values_are_never_cached(
    cache_workspace, egg_home
):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("env: [MY_TOKEN]\n")
    first = egg_exec(work, {**env, "MY_TOKEN": "tok-one-SECRET"}, "sh", "-c", 'echo "$MY_TOKEN"')
    second = egg_exec(work, {**env, "MY_TOKEN": "tok-two-SECRET"}, "sh", "-c", 'echo "$MY_TOKEN"')
    assert first.stdout == "tok-one-SECRET\n" and second.stdout == "tok-two-SECRET\n"
    assert not hit(second)
    for entry in (egg_home / "cache" / "exec").iterdir():
        assert b"SECRET" not in entry.read_bytes()


@pytest.mark.fact_check
def test_retargeting_a_denied_symlink_invalidates(cache_workspace):
    work, env = cache_workspace
    (work / "a").write_text("A-CONTENT")
    (work / "b").write_text("B-CONTENT")
    (work / "link").symlink_to(work / "a")
    (work / "egg.yaml").write_text("fs: ['deny:./link']\n")
    assert "A-CONTENT" not in egg_exec(work, env, "cat", "a", "b").stdout
    cached = cached_call(work, env, "cat", "a", "b")
    assert "B-CONTENT" in cached.stdout
    (work / "link").unlink()
    (work / "link").symlink_to(work / "b")
    result = egg_exec(work, env, "cat", "a", "b")
    assert not hit(result) and "B-CONTENT" not in result.stdout and "A-CONTENT" in result.stdout


def test_cache_can_be_turned_off(cache_workspace):
    work, env = cache_workspace
    egg_exec(work, env, "true")
    result = egg_exec(work, {**env, "EGG_EXEC_CACHE": "0"}, "true")
    assert "exec cache" not in result.stderr and result.returncode == 0


@pytest.mark.fact_check
def test_a_stale_entry_found_while_its_sandbox_is_set_up_runs_nothing(cache_workspace):
    """A fact the spawn does not rest on (here: that ~/.aws is absent, which the decision looked
    at and had nothing to mount for) is checked while bubblewrap sets the sandbox up. When it
    no longer holds, that sandbox is killed before its command starts, its first process too
    (its command's process is held at bwrap's last step, and fails there once egg lets go of
    the gate): the full path decides again and runs the command, once."""
    work, env = cache_workspace
    command = ("sh", "-c", "echo ran >> ran.log")
    egg_exec(work, env, *command)
    cached_call(work, env, *command)
    (work / "ran.log").unlink()
    (Path(env["HOME"]) / ".aws").mkdir()

    result = egg_exec(work, env, *command)
    time.sleep(0.2)  # what a sandbox left running would have written by now

    assert result.returncode == 0, result.stderr
    assert not hit(result)
    assert miss_reason(result).endswith(f"{env['HOME']}/.aws"), result.stderr
    assert (work / "ran.log").read_text() == "ran\n"
    assert not processes_in(work)  # nor a sandbox's first process, stuck before its set-up


@pytest.mark.fact_check
def test_a_directory_the_user_made_since_caching_is_no_sandboxs_code(cache_workspace):
    """The user makes ``.claude/commands`` on the host after a launch was cached: a fact of the
    entry changed, found as its sandbox was being set up, so nothing ran from the cache — and
    what nothing ran is not audited (it would have been taken for the sandbox's new code and
    moved to the quarantine). The full path then runs, with the directory there before it."""
    work, env = cache_workspace
    options = ("--agent", "claude")
    egg_exec(work, env, "true", options=options)
    cached_call(work, env, "true", options=options)
    mine = work / ".claude" / "commands" / "mine.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's own command\n")

    result = egg_exec(work, env, "true", options=options)

    assert result.returncode == 0, result.stderr
    assert not hit(result)
    assert "quarantine" not in result.stderr, result.stderr
    assert mine.read_text() == "the user's own command\n"


def processes_in(directory: Path) -> list[int]:
    """The processes whose working directory is ``directory`` or below it."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cwd = os.readlink(f"/proc/{name}/cwd")
            except OSError:
                continue
            if cwd == str(directory) or cwd.startswith(f"{directory}/"):
                found.append(int(name))
    return found


def test_a_removed_command_is_not_found_even_after_caching(cache_workspace):
    work, env = cache_workspace
    tool = work / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    egg_exec(work, env, "./tool.sh")
    cached_call(work, env, "./tool.sh")
    tool.unlink()
    result = egg_exec(work, env, "./tool.sh")
    assert result.returncode == 127 and "tool-ran" not in result.stdout


@pytest.mark.parametrize(
    ("shebang", "code", "why"),
    [
        ("#!/nonexistent/interp\n", 127, "bad interpreter /nonexistent/interp: no such file"),
        ("#!/bin/sh\r\n", 127, "bad interpreter /bin/sh\\r: no such file"),  # saved with CRLF
        ("#!WORK/interp\n", 126, "bad interpreter WORK/interp: permission denied"),
    ],
    ids=["missing", "crlf", "not-executable"],
)
def test_a_script_whose_interpreter_cannot_run_is_refused_before_the_sandbox(
    cache_workspace, shebang: str, code: int, why: str
) -> None:
    """A cached launch's command is run by bwrap itself (no shell in between to say "not
    found"): a script the kernel cannot start is refused by egg before any sandbox, as a shell
    would have refused it (127, 126), on every call; nothing is cached for it."""
    work, env = cache_workspace
    (work / "interp").write_text("not a program\n")  # (mode 644)
    shebang, why = shebang.replace("WORK", str(work)), why.replace("WORK", str(work))
    script = work / "s.sh"
    script.write_text(shebang + "echo ran\n")
    script.chmod(0o755)

    runs = [egg_exec(work, env, "./s.sh") for _ in range(2)]

    for result in runs:
        assert result.returncode == code, result.stderr
        assert f"egg: error: ./s.sh: {why}" in result.stderr.splitlines(), result.stderr
        assert "ran" not in result.stdout
        assert not hit(result)


def test_a_hit_runs_when_egg_sees_the_proc_of_another_pid_namespace(cache_workspace) -> None:
    """egg in a pid namespace of its own whose /proc is still its parent's (``unshare --pid
    --fork`` without ``--mount-proc``): /proc/PID names other processes than egg's pids do. The
    hold finds the sandbox's pid 1 by bwrap's own report, not through /proc, so a hit runs its
    command (it hung, waiting on a pid 1 it never recognised); a network's listeners, which
    need /proc, are a miss there (the full path's bridge serves), never another namespace's.
    (bwrap itself reads /proc/PID for the namespaces it reports, and fails now and then there:
    a run may end with its reason and 125 — but none may hang.)"""
    work, env = cache_workspace
    inside = ["unshare", "--pid", "--fork", "--kill-child", *EGG, "exec"]

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        argv = [*inside, *options, "--", "sh", "-c", "echo ran"]
        return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=30)

    plain = [run() for _ in range(6)]
    network = [run("--agent", "claude") for _ in range(6)]

    for result in (*plain, *network):
        bwraps_own = result.returncode == 125 and "bwrap: open /proc/" in result.stderr
        assert (result.returncode, result.stdout) == (0, "ran\n") or bwraps_own, result.stderr
    assert any(hit(r) and r.stdout == "ran\n" for r in plain), [r.stderr for r in plain]
    said = "cannot listen in the sandbox's network: /proc is another pid namespace's"
    assert any(miss_reason(r) == said for r in network), [r.stderr for r in network]


@pytest.mark.fact_check
def test_egg_code_a_hit_loaded_is_checked_before_the_sandbox_starts(cache_workspace) -> None:
    """The contents of egg's code are facts of every entry. The modules a hit loads run before
    its command is admitted (the runner's own imports: the gate, the spawn): a change to one is
    a miss before anything of it starts a sandbox — here the changed socket gate would write a
    mark as it started one. (Run from a copy of egg, which the test changes.)"""
    work, env = cache_workspace
    copy = work.parent / "egg"
    for name in ("egg_core", "plugins"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "egg_plugins").symlink_to("plugins")
    # (first on the path: the mutation tier's own, test_cache_mutation, after it)
    env = {**env, "PYTHONPATH": ":".join(filter(None, [str(copy), env.get("PYTHONPATH")]))}
    command = ("sh", "-c", "echo ran")
    egg_exec(work, env, *command)
    cached_call(work, env, *command)
    mark = work.parent / "spawned"
    gate = copy / "egg_plugins" / "platforms" / "linux" / "socketgate.py"  # (as it is imported)
    with gate.open("a") as handle:
        handle.write(
            "\n_spawn = Gate.spawn_filtered\n"
            f"Gate.spawn_filtered = lambda self, s: (open({str(mark)!r}, 'w'), _spawn(self, s))[1]\n"
        )

    result = egg_exec(work, env, *command)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "ran\n"
    assert miss_reason(result) == f"changed since it was cached: the contents of {gate}"
    assert not mark.exists()


@pytest.mark.parametrize("umask", [0o002, 0o000])
def test_a_permissive_umask_still_caches(cache_workspace, umask: int) -> None:
    """Ubuntu gives users a umask of 002: the cache's files are still written this user's
    alone (a file another could write is one egg refuses to run), so the next call is a hit."""
    work, env = cache_workspace

    def call() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*EGG, "exec", "--", "true"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=lambda: os.umask(umask),
        )

    first = call()
    runs = [call() for _ in range(HIT_ATTEMPTS)]

    assert first.returncode == 0, first.stderr
    assert any(hit(run) for run in runs), [run.stderr for run in runs]
    cache = Path(env["EGG_HOME"]) / "cache" / "exec"
    assert all(path.stat().st_mode & 0o077 == 0 for path in cache.iterdir())
