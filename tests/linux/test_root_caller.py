"""A root caller's sandbox is not root on the host: it cannot mount, make namespaces, write /etc
or change the kernel's settings (uid 0 inside is the host's uid 0, so only the sandbox stops it).
Each test also runs as uid 65534, where the same attempts must fail as well."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Box
from .test_filesystem import fingerprint


def test_sandbox_runs_as_the_callers_uid(box: Box) -> None:
    result = box.exec("id", "-u")

    assert result.stdout.strip() == str(box.identity.uid)


def test_etc_cannot_be_written(box: Box) -> None:
    before = fingerprint(Path("/etc/passwd"))

    found = box.probe(
        "report(create=attempt(write, '/etc/egg-probe'),"
        " append=attempt(write, '/etc/passwd', b''),"
        " unlink=attempt(os.unlink, '/etc/hostname'))"
    )

    assert found["create"] in ("EROFS", "EACCES")
    assert found["append"] in ("EROFS", "EACCES")
    assert found["unlink"] in ("EROFS", "EACCES", "ENOENT")
    assert not os.path.exists("/etc/egg-probe")
    assert fingerprint(Path("/etc/passwd")) == before


def test_mount_command_fails(box: Box) -> None:
    result = box.exec("sh", "-c", "mount -t tmpfs none /mnt && echo MOUNTED")

    assert result.returncode != 0
    assert "MOUNTED" not in result.stdout


def test_unshare_command_fails(box: Box) -> None:
    result = box.exec("sh", "-c", "unshare --mount --pid --fork true && echo UNSHARED")

    assert result.returncode != 0
    assert "UNSHARED" not in result.stdout


@pytest.mark.parametrize(
    "setting",
    [
        "kernel/core_pattern",
        "kernel/printk_ratelimit",
        "fs/protected_symlinks",
        "vm/overcommit_memory",
    ],
)
def test_kernel_settings_cannot_be_written(box: Box, setting: str) -> None:
    path = f"/proc/sys/{setting}"
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist on this kernel")
    value = Path(path).read_bytes()

    # writing back the current value: harmless if the sandbox failed, and still a write
    found = box.probe(f"report(write=attempt(write, {path!r}, {value!r}))")

    assert found["write"] in ("EROFS", "EACCES", "EPERM")
    assert Path(path).read_bytes() == value


def test_no_proc_or_sys_file_of_the_host_kernel_is_writable(box: Box) -> None:
    found = box.probe(
        "hits = [p for p in ('/proc/sysrq-trigger',) if os.access(p, os.W_OK)]\n"
        "for top in ('/proc/sys', '/sys'):\n"
        "    for base, dirs, files in os.walk(top):\n"
        "        hits += [os.path.join(base, n) for n in files"
        " if os.access(os.path.join(base, n), os.W_OK)]\n"
        "report(writable=hits[:20])"
    )

    # access(W_OK) fails with EROFS on a read-only mount, so a hit is really writable
    assert found["writable"] == []
