"""Ordinary work still works inside the default policy, and ``egg exec`` exit codes are exact."""

from __future__ import annotations

import os

import pytest

from .conftest import Box


def test_workspace_is_writable_and_the_file_lands_on_the_host(box: Box) -> None:
    result = box.exec("sh", "-c", "echo built > out.txt && mkdir -p build/x && echo ok")

    assert result.returncode == 0, result.stderr
    assert (box.workspace / "out.txt").read_text() == "built\n"
    assert (box.workspace / "build" / "x").is_dir()
    assert os.stat(box.workspace / "out.txt").st_uid == box.identity.uid


def test_cache_dir_is_writable_and_kept_for_the_next_run(box: Box) -> None:
    """The sandbox's own cache (``cache:~/.cache``): written in one run, found by the next, never
    in the host's ~/.cache."""
    result = box.exec("sh", "-c", "mkdir -p ~/.cache/tool && echo cached > ~/.cache/tool/entry")
    again = box.exec("cat", f"{box.home}/.cache/tool/entry")

    assert result.returncode == 0, result.stderr
    assert again.stdout == "cached\n"
    assert not (box.home / ".cache" / "tool").exists()


def test_system_files_and_gitconfig_are_readable(box: Box) -> None:
    result = box.exec("sh", "-c", "head -n1 /etc/passwd && git config --global user.name")

    assert result.returncode == 0, result.stderr
    passwd, name = result.stdout.splitlines()
    assert passwd.startswith("root:")
    assert name == "Egg Test"


def test_subprocesses_and_pipelines_run(box: Box) -> None:
    result = box.exec("sh", "-c", "echo egg | tr e E | sed s/g/G/g; sh -c 'exit 3'; echo $?")

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["EGG", "3"]


def test_git_works_in_the_workspace(box: Box) -> None:
    script = (
        "git init -q . && echo hi > f && git add f && "
        "git -c commit.gpgsign=false commit -qm first && git log --format=%s"
    )
    result = box.exec("sh", "-c", script)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "first"


def test_tmp_is_writable_and_private_to_the_sandbox(box: Box) -> None:
    name = f"egg-private-{box.secret}"
    result = box.exec("sh", "-c", f"echo scratch > /tmp/{name} && cat /tmp/{name}")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "scratch\n"
    assert not os.path.exists(f"/tmp/{name}")


def test_stdin_and_stdout_pass_through(box: Box) -> None:
    result = box.exec("tr", "a-z", "A-Z", stdin="hello sandbox\n")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "HELLO SANDBOX\n"


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_code_of_the_command_is_eggs(box: Box, code: int) -> None:
    assert box.exec("sh", "-c", f"exit {code}").returncode == code


@pytest.mark.parametrize(("signal_name", "expected"), [("TERM", 143), ("KILL", 137), ("SEGV", 139)])
def test_death_by_signal_n_is_128_plus_n(box: Box, signal_name: str, expected: int) -> None:
    assert box.exec("sh", "-c", f"kill -{signal_name} $$").returncode == expected


def test_command_not_found_is_127(box: Box) -> None:
    result = box.exec("egg-no-such-command-xyz")

    assert result.returncode == 127
    assert "not found" in result.stderr


def test_command_not_found_inside_the_sandbox_is_127(box: Box) -> None:
    assert box.exec("sh", "-c", "egg-no-such-command-xyz").returncode == 127


def test_non_executable_file_is_126(box: Box) -> None:
    box.write(box.workspace / "script.sh", "#!/bin/sh\necho ran\n", mode=0o644)

    result = box.exec("./script.sh")

    assert result.returncode == 126
    assert "ran" not in result.stdout


def test_directory_as_command_is_126(box: Box) -> None:
    box.mkdir(box.workspace / "adir")

    assert box.exec("./adir").returncode == 126


def test_invalid_config_is_125_and_starts_nothing(box: Box) -> None:
    box.config("network: [unterminated\n")

    result = box.exec("sh", "-c", "touch started")

    assert result.returncode == 125
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (box.workspace / "started").exists()


def test_unknown_platform_is_125_and_starts_nothing(box: Box) -> None:
    result = box.exec("sh", "-c", "touch started", options=["--platform", "no-such-platform"])

    assert result.returncode == 125
    assert not (box.workspace / "started").exists()


def test_sandbox_failing_before_the_command_starts_is_125(box: Box) -> None:
    # with three file descriptors bwrap itself cannot start, so the command never runs
    box.config({"resources": {"max_fds": 3}})

    result = box.exec("sh", "-c", "touch started")

    assert result.returncode == 125
    assert "before the command started" in result.stderr
    assert not (box.workspace / "started").exists()
