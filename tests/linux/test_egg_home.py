"""An ``$EGG_HOME`` egg cannot use is one line naming it and what to do, from every command,
before anything is read or written there (not "internal error ... PermissionError", exit 70)."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import Box

#: a command of each kind that keeps its state in $EGG_HOME, and the exit code of egg's own
#: errors for it (egg exec keeps the others for the command it runs)
COMMANDS = [
    (("run", "--detach", "--", "true"), 2),
    (("ls",), 2),
    (("history",), 2),
    (("exec", "--", "true"), 125),
    (("explain",), 2),
]


def assert_one_line_about(box: Box, result, code: int, *words: str) -> None:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert line.startswith(f"egg: error: $EGG_HOME {box.egg_home} "), line
    assert "set EGG_HOME to" in line
    for word in words:
        assert word in line
    assert "internal error" not in line
    assert result.returncode == code, result


@pytest.mark.parametrize("identity", ["root"], indirect=True)
@pytest.mark.parametrize(("args", "code"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_an_egg_home_of_another_user_is_refused_even_for_root(
    box: Box, args: tuple[str, ...], code: int
) -> None:
    os.chown(box.egg_home, 4321, 4321)

    result = box.run(*args)

    assert_one_line_about(box, result, code, "belongs to uid 4321", "you are root (uid 0)")
    assert os.listdir(box.egg_home) == []  # nothing of root's was left in someone else's home


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
@pytest.mark.parametrize(("args", "code"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_an_egg_home_the_user_cannot_read_is_one_line_saying_what_to_do(
    box: Box, args: tuple[str, ...], code: int
) -> None:
    box.egg_home.chmod(0o300)  # its owner may enter and write, not list

    result = box.run(*args)

    assert_one_line_about(box, result, code, "not readable and writable", "chmod u+rwx")


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
def test_an_egg_home_another_user_keeps_closed_is_one_line(box: Box) -> None:
    os.chown(box.egg_home, 0, 0)  # root's, 0700: uid 65534 can neither read nor enter it

    result = box.run("ls")

    assert_one_line_about(box, result, 2, "belongs to root (uid 0)")


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
def test_help_and_version_need_no_egg_home(box: Box) -> None:
    box.egg_home.chmod(0o000)

    for args in (("--version",), ("--help",), ("ls", "--help")):
        result = box.run(*args)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""


@pytest.mark.parametrize("identity", ["nobody"], indirect=True)
def test_doctor_runs_with_an_unusable_egg_home_and_says_what_to_do(box: Box) -> None:
    box.egg_home.chmod(0o000)

    result = box.run("doctor")
    data = json.loads(box.run("doctor", "--json").stdout)

    assert result.returncode == 0, result.stderr
    assert f"FAIL $EGG_HOME {box.egg_home} is not readable and writable" in result.stdout
    assert data["egg_home"]["path"] == str(box.egg_home)
    assert "chmod u+rwx" in data["egg_home"]["problem"]
