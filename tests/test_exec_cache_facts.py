"""Each kind of fact the exec cache re-checks: a change it stands for is a miss that names it, and
a change it does not stand for leaves the entry in use (``EGG_EXEC_CACHE=debug`` says which).

The ``fact_check`` tests are the misses only a re-checked fact can cause: test_cache_mutation runs
them with fact checking taken out and requires every one of them to fail.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_exec_cache import cached_call, egg_exec


def miss(result: subprocess.CompletedProcess[str], because: str) -> bool:
    """The call missed, and the cache said why: ``because`` is in its reason."""
    reasons = [line for line in result.stderr.splitlines() if "exec cache miss" in line]
    return bool(reasons) and because in reasons[0]


def cached(work: Path, env: dict[str, str], *command: str) -> None:
    """Run until a call comes from the cache (see :func:`cached_call`)."""
    egg_exec(work, env, *command)
    cached_call(work, env, *command)


# -- "i": what a path is ---------------------------------------------------------------------------


@pytest.mark.fact_check
def test_identity_a_path_the_policy_resolved_changing_type_is_a_miss(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("fs: ['deny:./vault']\n")
    (work / "vault").write_text("a file for now")
    cached(work, env, "true")
    (work / "vault").unlink()
    (work / "vault").mkdir()
    assert miss(egg_exec(work, env, "true"), "what this path is: " + str(work / "vault"))


def test_identity_writing_into_a_resolved_file_is_a_hit(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("fs: ['deny:./vault']\n")
    (work / "vault").write_text("a file for now")
    cached(work, env, "true")
    (work / "vault").write_text("other words, same file")
    cached_call(work, env, "true")


@pytest.mark.fact_check
def test_identity_a_program_planted_earlier_on_path_is_a_miss(cache_workspace):
    work, env = cache_workspace
    early = work / "bin"  # inside the workspace: the sandbox sees it too
    early.mkdir()
    env = {**env, "PATH": f"{early}:{env['PATH']}"}
    cached(work, env, "true")
    fake = early / "true"
    fake.write_text("#!/bin/sh\necho planted\n")
    fake.chmod(0o755)
    result = egg_exec(work, env, "true")
    assert miss(result, str(early)) and result.stdout == "planted\n"


# -- "c": what a file holds --------------------------------------------------------------------------


@pytest.mark.fact_check
def test_contents_a_config_file_rewritten_is_a_miss(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("fs: []\n")
    cached(work, env, "true")
    (work / "egg.yaml").write_text("fs: ['deny:./x']\n")
    assert miss(egg_exec(work, env, "true"), "the contents of " + str(work / "egg.yaml"))


def test_contents_a_file_egg_never_read_rewritten_is_a_hit(cache_workspace):
    work, env = cache_workspace
    (work / "notes.txt").write_text("one")
    cached(work, env, "true")
    (work / "notes.txt").write_text("two, longer")
    cached_call(work, env, "true")


# -- "l": what a directory lists ---------------------------------------------------------------------


def test_a_new_entry_in_the_workspace_is_a_hit(cache_workspace):
    # the decision lists no directory it only exposes (sockets are judged at connect, not
    # found by scanning): what the workspace holds is not part of it
    work, env = cache_workspace
    cached(work, env, "true")
    (work / "new-dir").mkdir()
    (work / "new-file").write_text("x")
    cached_call(work, env, "true")


def test_listing_an_entry_replaced_by_one_of_the_same_name_and_kind_is_a_hit(cache_workspace):
    work, env = cache_workspace
    (work / "data.txt").write_text("one")
    cached(work, env, "true")
    (work / "data.txt").unlink()
    (work / "data.txt").write_text("again")  # the directory changed; its names and kinds did not
    cached_call(work, env, "true")


# -- "s": a placeholder ------------------------------------------------------------------------------


def test_seed_a_placeholder_left_by_a_crashed_run_is_a_hit(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("fs: ['deny-write:./later.txt']\n")
    cached(work, env, "true")
    # what the placeholder holds: the same launch (and the workspace's listing leaves it out)
    (work / "later.txt").write_text("")
    cached_call(work, env, "true")


@pytest.mark.fact_check
def test_seed_real_content_at_a_placeholder_path_is_a_miss(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("fs: ['deny-write:./later.txt']\n")
    cached(work, env, "true")
    (work / "later.txt").write_text("the user's own file now")
    assert miss(egg_exec(work, env, "true"), "the placeholder at " + str(work / "later.txt"))


# -- "x": the platform's own facts (Linux: the kernel's table of bound sockets) -------------------


def test_a_socket_bound_deep_in_a_visible_tree_is_a_hit_and_unreachable(cache_workspace):
    # the host's socket table is no part of the decision: a socket bound anywhere after the
    # entry was made changes nothing cached, and the gate refuses it at connect
    work, env = cache_workspace
    deep = work / "a" / "b" / "c"
    deep.mkdir(parents=True)
    probe = (
        "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect('a/b/c/api.sock'); print('CONNECTED')\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    cached(work, env, sys.executable, "-c", probe)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(deep / "api.sock"))
        server.listen()
        server.setblocking(False)
        os.chmod(deep / "api.sock", 0o777)
        result = cached_call(work, env, sys.executable, "-c", probe)
        assert result.stdout.strip() == f"refused {errno.EACCES}"
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_platform_a_socket_bound_where_the_sandbox_cannot_see_is_a_hit(cache_workspace, egg_home):
    work, env = cache_workspace
    cached(work, env, "true")
    hidden = egg_home / "elsewhere"
    hidden.mkdir()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(hidden / "api.sock"))  # $EGG_HOME: no sandbox sees it
        assert stat.S_ISSOCK(os.lstat(hidden / "api.sock").st_mode)
        cached_call(work, env, "true")
    finally:
        server.close()


# -- the environment: the key holds the variables the decision read -------------------------------


def test_environment_a_variable_the_policy_read_changing_is_a_miss(cache_workspace):
    work, env = cache_workspace
    (work / "egg.yaml").write_text("env: [MY_SETTING]\n")
    cached(work, {**env, "MY_SETTING": "one"}, "true")
    result = egg_exec(work, {**env, "MY_SETTING": "two"}, "true")
    assert miss(result, "the environment it read changed: MY_SETTING")


def test_environment_variables_nothing_read_changing_is_a_hit(cache_workspace):
    work, env = cache_workspace
    cached(work, {**env, "SHLVL": "1", "_": "/bin/one", "UNRELATED_1": "x"}, "true")
    cached_call(work, {**env, "SHLVL": "2", "_": "/bin/two", "UNRELATED_2": "y"}, "true")


# -- the sandbox's filters: what a cached launch loads is what the decision read -----------------


@pytest.mark.fact_check
@pytest.mark.parametrize("kind", ["seccomp-", "gate-native-"])
def test_contents_a_filter_in_the_cache_replaced_is_a_miss(cache_workspace, egg_home, kind):
    work, env = cache_workspace
    cached(work, env, "true")
    (program,) = (egg_home / "cache").glob(f"{kind}*.bpf")
    # a one-instruction program, "allow everything": no cached launch may load it unseen
    program.write_bytes(bytes.fromhex("060000000000ff7f"))
    assert miss(egg_exec(work, env, "true"), "the contents of " + str(program))


@pytest.mark.fact_check
def test_identity_a_socket_rule_retargeted_is_a_miss(cache_workspace):
    # a socket an rw: rule names exactly is granted by the path the decision resolved
    work, env = cache_workspace
    (work / "one").mkdir()
    (work / "two").mkdir()
    (work / "ctl").symlink_to("one")
    (work / "egg.yaml").write_text("fs: ['rw:./ctl/agent.sock']\n")
    cached(work, env, "true")
    (work / "ctl").unlink()
    (work / "ctl").symlink_to("two")
    assert miss(egg_exec(work, env, "true"), str(work / "ctl"))


@pytest.mark.fact_check
def test_identity_a_symlink_on_the_way_to_the_git_directory_retargeted_is_a_miss(
    cache_workspace,
):
    """A ``.git`` file names its git directory through a symlink the host retargets to another
    repository in the workspace: the git guard protected the first one's hooks and config, and
    a cached launch must not run with that decision (the sandbox could then write the second's,
    which the host's git runs). The layout search records every path it resolved through."""
    work, env = cache_workspace
    for name in ("a", "b"):
        subprocess.run(["git", "init", "-q", "--bare", str(work / "gits" / name)], check=True)
    (work / "link").symlink_to("gits/a")
    (work / ".git").write_text("gitdir: link\n")
    cached(work, env, "true")

    (work / "link").unlink()
    (work / "link").symlink_to("gits/b")
    result = egg_exec(work, env, "sh", "-c", "echo planted > gits/b/hooks/post-commit; true")
    again = egg_exec(work, env, "true")

    assert miss(again, "what this path is: " + str(work / "link"))
    assert result.returncode == 0
    assert not (work / "gits" / "b" / "hooks" / "post-commit").exists()  # b's guarded now
