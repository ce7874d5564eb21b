"""Threat H: egg runs its host helpers (bwrap, prlimit, strace, git) only from places no sandbox
can write; a helper planted on the user's PATH never runs on the host."""

from __future__ import annotations

import os

from tests.linux.conftest import Box

HELPERS = ("bwrap", "prlimit", "strace", "git")


def plant(box: Box, directory: str) -> list[str]:
    """Fake helpers in ``directory`` (relative to home), each touching a marker when run."""
    markers = []
    for name in HELPERS:
        marker = box.witness(f"{name}-ran")
        box.write(f"{directory}/{name}", f"#!/bin/sh\ntouch {marker}\nexit 1\n", mode=0o755)
        markers.append(str(marker))
    return markers


def test_helpers_planted_in_a_workspace_directory_on_path_never_run(box: Box) -> None:
    planted = plant(box, "project/tools")
    env = {"PATH": f"{box.workspace}/tools:/usr/local/bin:/usr/bin:/bin"}
    # limits (prlimit), a new repository (git's audit), a session with --trace (strace)
    config = {"resources": {"max_fds": 256}}

    ran = box.exec("sh", "-c", "/usr/bin/git init -q && echo ok", config=config, env=env)
    session = box.run("run", "--trace", "--", "true", env=env)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "ok"
    assert session.returncode == 0, session.stderr
    assert not [m for m in planted if os.path.exists(m)]


def test_helpers_in_a_home_directory_are_not_trusted_and_doctor_says_so(box: Box) -> None:
    plant(box, ".local/bin")
    env = {"PATH": f"{box.home}/.local/bin:/usr/bin:/bin"}

    ran = box.exec("true", env=env)
    doctor = box.run("doctor", env=env)

    assert ran.returncode == 0, ran.stderr
    assert not list(box.witness("").glob("*-ran"))
    assert "host helpers" in doctor.stdout
    assert "bwrap=/usr/bin/bwrap" in doctor.stdout
    assert f"{box.home}/.local/bin/bwrap" in doctor.stdout  # named as ignored
