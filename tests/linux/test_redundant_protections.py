"""egg's own read-only protections are left out of bwrap's command line where the sandbox
already sees the host's path read-only (each mount costs bwrap a read of the mount table) — and
only there: under a writable mount, a tmpfs, or with a writable mount beneath, they stay."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from egg_plugins.platforms.linux.mountplan import already_read_only, decisions_of, read_args
from tests.linux.conftest import Box

EMPTY = "/run/egg/empty"


def mount_decisions(mounts: list[str], empty: str) -> list[tuple[str, str]]:
    return decisions_of(read_args(mounts), empty)


def decided(*mounts: str) -> list[tuple[str, str]]:
    return mount_decisions(list(mounts), EMPTY)


def test_a_path_under_the_read_only_root_needs_no_mount_of_its_own() -> None:
    assert already_read_only(decided("--ro-bind", "/", "/"), "/opt/venv")


def test_a_path_in_a_writable_mount_keeps_its_protection() -> None:
    plan = decided("--ro-bind", "/", "/", "--bind", "/work", "/work")
    assert not already_read_only(plan, "/work/venv")
    assert not already_read_only(plan, "/work")


def test_a_writable_mount_beneath_the_path_keeps_its_protection() -> None:
    """The protection's bind covers the writable one below it (bwrap binds the host's tree)."""
    plan = decided("--ro-bind", "/", "/", "--bind", "/opt/venv/lib", "/opt/venv/lib")
    assert not already_read_only(plan, "/opt/venv")
    assert not already_read_only(plan, "/opt")


def test_a_writable_mount_covered_by_a_later_read_only_one_is_covered() -> None:
    plan = decided("--bind", "/opt/venv/lib", "/opt/venv/lib", "--ro-bind", "/opt", "/opt")
    assert already_read_only(plan, "/opt/venv")


def test_a_path_under_a_tmpfs_or_another_source_keeps_its_protection() -> None:
    """There the protection's bind is what shows the host's path at all."""
    assert not already_read_only(decided("--ro-bind", "/", "/", "--tmpfs", "/tmp"), "/tmp/v")
    assert not already_read_only(
        decided("--ro-bind", "/", "/", "--ro-bind", "/srv/other", "/opt"), "/opt/venv"
    )
    assert not already_read_only(decided("--ro-bind", EMPTY, "/opt/f"), "/opt/f")


def test_without_a_covering_mount_the_protection_stays() -> None:
    assert not already_read_only(decided("--ro-bind-try", "/usr", "/usr"), "/opt/venv")


def test_the_prefix_of_a_name_is_not_its_parent() -> None:
    plan = decided("--ro-bind", "/", "/", "--bind", "/opt/venv-data", "/opt/venv-data")
    assert already_read_only(plan, "/opt/venv")


def test_a_writable_mount_of_the_same_directory_under_another_name_keeps_the_protection(
    tmp_path: Path,
) -> None:
    """Names do not settle which directory a mount is: on a case-insensitive directory
    ``rw:/mnt/x/Tools`` is the one ``/mnt/x/tools/egg.yaml`` is in (this kernel has no casefold
    to try it on), and a host bind mount shows one directory under two names. A writable mount
    at, above or below the protected path is found by device and inode; the protection stays. Run in a mount namespace of its
    own (``unshare``), so that nothing is mounted on the host."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "egg.yaml").write_text(CONFIG)
    (conf / "sub").mkdir()
    alias = tmp_path / "alias"
    alias.mkdir()
    check = (
        "from egg_plugins.platforms.linux.mountplan import already_read_only, decisions_of\n"
        "from egg_plugins.platforms.linux.mountplan import read_args\n"
        "def mount_decisions(mounts, empty, _):\n"
        "    return decisions_of(read_args(mounts), empty)\n"
        f"conf, config, alias = {str(conf)!r}, {str(conf / 'egg.yaml')!r}, {str(alias)!r}\n"
        f"plan = mount_decisions(['--ro-bind', '/', '/', '--bind', alias, alias], {EMPTY!r}, [])\n"
        "below = alias + '/sub'\n"
        f"under = mount_decisions(['--ro-bind', '/', '/', '--bind', below, below], {EMPTY!r}, [])\n"
        f"bare = mount_decisions(['--ro-bind', '/', '/'], {EMPTY!r}, [])\n"
        "print(already_read_only(plan, config), already_read_only(under, conf),"
        " already_read_only(bare, config))\n"
    )
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         'mount --bind "$1" "$2" && exec "$3" -c "$4"', "sh", str(conf), str(alias),
         sys.executable, check],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # above the protected path, below it (a protected directory), and with no writable mount
    assert result.stdout.split() == ["False", "False", "True"]


def test_egg_s_installation_stays_read_only_under_a_writable_rule_reached_by_a_symlink(
    box: Box,
) -> None:
    """``rw:`` a symlink to egg's own virtualenv: the rule binds the real directory writable,
    so the protection is not redundant there and must be mounted after it."""
    venv = Path(sys.prefix).resolve()
    link = box.root / "l1" / "venv-link"
    box.mkdir(link.parent)
    link.symlink_to(venv)
    probe = venv / f"sandbox_probe_{box.secret}"
    box.config({"fs": [f"rw:{link}"]})
    try:
        found = box.probe(f"report(write=attempt(write, {str(link / probe.name)!r}))")
        assert found["write"] in ("EROFS", "EACCES")
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)


# -- a config of the session, outside the workspace: a protection the identity itself could
# write on the host, so each attempt means something for root and for uid 65534 alike (egg's
# own installation is root's: uid 65534 gets EACCES there whatever is mounted)

CONFIG = "fs: []\n"
#: every way a sandbox could change the config: in place, by replacing it, by removing it, by
#: moving its directory away
ATTEMPTS = """
import os
def attempts(path):
    def replace():
        with open(path + '.new', 'w') as handle:
            handle.write('fs: ["rw:/"]\\n')
        os.replace(path + '.new', path)
    folder = os.path.dirname(path)
    return {
        'append': attempt(write, path),
        'replace': attempt(replace),
        'unlink': attempt(os.unlink, path),
        'move_dir': attempt(os.rename, folder, folder + '.moved'),
    }
"""


def session_config(box: Box, text: str) -> Path:
    """``box.root/conf/egg.yaml``, the config passed with --config: egg protects it."""
    return box.write(box.root / "conf" / "egg.yaml", text)


def attempt_config(
    box: Box, config: Path, spelled: str, options_extra: Sequence[str] = ()
) -> dict[str, str]:
    """Run the attempts on ``spelled`` (the config, however the sandbox reaches it) and check
    the host: the config holds what it held, its directory is where it was."""
    before = config.read_text()
    found: dict[str, str] = box.probe(
        ATTEMPTS + f"report(**attempts({spelled!r}))",
        options=["--config", str(config), *options_extra],
    )
    assert config.read_text() == before, found
    assert not Path(f"{config.parent}.moved").exists(), found
    return found


@pytest.mark.parametrize(
    "spelling", ["{conf}", "{conf}/", "{root}//conf", "{root}/x/../conf", "{root}", "{alias}"]
)
def test_a_config_stays_read_only_under_a_writable_rule_however_it_is_spelled(
    box: Box, spelling: str
) -> None:
    """``rw:`` the config's directory, an ancestor, or a host symlink to it, spelled with a
    trailing slash, a doubled slash or ``..``: the rule's bind covers the config, so its
    protection is not redundant and is mounted after it — whichever path the sandbox uses."""
    box.mkdir(box.root / "x")
    alias = box.root / "alias"
    alias.symlink_to(box.root / "conf")
    names = {"conf": box.root / "conf", "root": box.root, "alias": alias}
    config = session_config(box, f"fs:\n  - rw:{spelling.format(**names)}\n")
    for spelled in (config, alias / config.name):
        found = attempt_config(box, config, str(spelled))
        assert "ok" not in (found["append"], found["replace"], found["unlink"])


def test_a_config_in_an_agent_s_prefix_hole_stays_read_only(box: Box) -> None:
    """``~/.claude-conf`` is one of the neighbours Claude's ``~/.claude`` hole binds writable
    (``.claude.json`` and the like): a config there is not covered by the read-only root."""
    box.mkdir(box.home / ".claude")
    config = box.write(box.home / ".claude-conf" / "egg.yaml", CONFIG)
    found = attempt_config(box, config, str(config), options_extra=["--agent", "claude"])
    assert "ok" not in found.values()


def test_a_cached_launch_misses_when_a_rule_s_directory_becomes_a_symlink_to_a_config(
    box: Box,
) -> None:
    """The decision to leave a protection out rests on what each rule's path is: when the
    host turns ``rw:ROOT/x`` (a directory when the launch was cached) into a symlink to the
    config's directory, the cached command line (which binds ROOT/x writable and no longer
    mounts the config) must not run."""
    x = box.mkdir(box.root / "x")
    config = session_config(box, f"fs:\n  - rw:{x}\n")
    code = ATTEMPTS + f"report(**attempts({str(x / config.name)!r}))"
    options = ["--config", str(config)]
    env = {"EGG_EXEC_CACHE": "debug"}
    box.py(code, options=options, env=env)
    assert "exec cache hit" in box.py(code, options=options, env=env).stderr
    x.rmdir()
    x.symlink_to("conf")  # relative: bwrap follows it to the config (an absolute one it cannot)

    result = box.py(code, options=options, env=env)

    assert "exec cache miss" in result.stderr
    assert "ok" not in [result.json()[k] for k in ("append", "replace", "unlink")]
    assert config.read_text() == f"fs:\n  - rw:{x}\n"
