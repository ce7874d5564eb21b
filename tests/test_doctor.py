"""``egg doctor``: every platform with its availability, the host checks, what would fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write_dist


def test_doctor_json_lists_every_platform(egg_cli):
    data = egg_cli.run("doctor", "--json").assert_ok().json()
    by_name = {p["name"]: p for p in data["platforms"]}
    assert {"linux-ns", "macos-seatbelt", "unsandboxed"} <= set(by_name)
    linux = by_name["linux-ns"]
    assert linux["available"] is True
    checks = {c["name"]: c for c in linux["checks"]}
    for name in (
        "bubblewrap",
        "user namespaces",
        "AppArmor userns restriction",
        "seccomp",
        "cgroups",
        "Landlock",
    ):
        assert name in checks
    assert checks["bubblewrap"]["ok"] and "bubblewrap" in checks["bubblewrap"]["detail"]
    assert "cgroup v" in checks["cgroups"]["detail"]
    assert by_name["macos-seatbelt"]["available"] is False
    assert "macOS" in by_name["macos-seatbelt"]["reason"]


def test_doctor_as_root_can_enforce_everything(egg_cli):
    if os.getuid() != 0:
        return
    data = egg_cli.run("doctor", "--json").assert_ok().json()
    assert data["failing_features"] == {}
    assert "every policy feature can be enforced here" in egg_cli.run("doctor").stdout


def test_doctor_as_an_unprivileged_user_names_the_cgroup_limits(tmp_path):
    home = tmp_path / "nobody"
    home.mkdir()
    os.chown(home, 65534, 65534)
    os.chmod(tmp_path, 0o755)
    out = subprocess.run(
        [
            "setpriv",
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "egg_core.cli",
            "doctor",
            "--json",
        ],
        env={"HOME": str(home), "EGG_HOME": str(home / ".egg"), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    import json

    data = json.loads(out.stdout)
    linux = next(p for p in data["platforms"] if p["name"] == "linux-ns")
    assert linux["available"] is True
    assert set(data["failing_features"]) == {
        "resources.cpu",
        "resources.memory",
        "resources.max_pids",
    }
    cgroups = next(c for c in linux["checks"] if c["name"] == "cgroups")
    # not a failure of the platform: a note in its block, with how to get them
    assert cgroups["note"] is True and cgroups["ok"] is True
    assert cgroups["detail"].startswith("cpu, memory, pids: not available to this user (uid 65534")
    assert "Delegate=memory pids" in cgroups["fix"] or "run egg as root" in cgroups["fix"]


#: two unavailable third-party platforms: one whose checks explain what is missing here, one
#: that is simply not for this host
UNAVAILABLE = """
from egg_core.api import Availability, Check, Platform, hookimpl


class Unavailable(Platform):
    def __init__(self, name, explains):
        self.name = name
        self.description = "a test platform, unavailable here"
        self.diagnoses_when_unavailable = explains

    def available(self):
        return Availability(False, "not here")

    def diagnose(self):
        return [Check("what is missing", False, f"{self.name}: a part", "install the part")]

    def command(self, launch):
        return []

    def prepare(self, launch):
        raise NotImplementedError


@hookimpl
def egg_register_platforms(register):
    register(Unavailable("explains", True))
    register(Unavailable("elsewhere", False))
"""


def test_doctor_runs_an_unavailable_platforms_checks_when_it_says_they_explain(tmp_path):
    """Which platforms' checks egg doctor runs where they cannot run is each platform's own
    say (``diagnoses_when_unavailable``, linux-ns's), not a name the core knows."""
    site = write_dist(
        tmp_path / "site",
        "egg-unavailable",
        "1",
        {"unavailable": "eggtest_unavailable"},
        {"eggtest_unavailable": UNAVAILABLE},
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "EGG_HOME": str(tmp_path / ".egg"),
        "PYTHONPATH": str(site),
    }
    result = subprocess.run(
        [sys.executable, "-P", "-m", "egg_core.cli", "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    by_name = {p["name"]: p for p in json.loads(result.stdout)["platforms"]}

    assert [c["name"] for c in by_name["explains"]["checks"]] == ["what is missing"]
    assert by_name["elsewhere"]["checks"] == []
    assert by_name["linux-ns"]["checks"]  # (available here: run either way)


#: the console script pip before 25.2 writes, and the one it writes since (egg ships its own:
#: launcher/egg; an older egg's install may still have either)
OLD_LAUNCHER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from egg_core.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
NEW_LAUNCHER = """#!{python}
import sys
from egg_core.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


#: egg's own, as installed
EGG_LAUNCHER = "#!{python}\n" + (
    Path(__file__).resolve().parent.parent / "launcher" / "egg"
).read_text().partition("\n")[2].replace("{", "{{").replace("}", "}}")


@pytest.mark.parametrize(
    ("template", "slow"), [(OLD_LAUNCHER, True), (NEW_LAUNCHER, False), (EGG_LAUNCHER, False)]
)
def test_doctor_says_when_the_egg_script_slows_every_command_down(
    tmp_path, template: str, slow: bool
) -> None:
    """A launcher from pip < 25.2 imports ``re`` before egg's first line: 3-6 ms of every call,
    which egg cannot win back once it runs. doctor says so, and what to do."""
    launcher = tmp_path / "egg"
    launcher.write_text(template.format(python=sys.executable))
    launcher.chmod(0o755)
    env = {**os.environ, "EGG_HOME": str(tmp_path / "home")}

    data = json.loads(
        subprocess.run(
            [str(launcher), "doctor", "--json"], env=env, capture_output=True, text=True, check=True
        ).stdout
    )
    text = subprocess.run([str(launcher), "doctor"], env=env, capture_output=True, text=True)

    if slow:
        assert data["launcher"].startswith(f"{launcher} imports re before egg starts")
        assert "reinstall egg to replace it" in data["launcher"]
        assert f"note {launcher} imports re" in text.stdout
    else:
        assert data["launcher"] is None
        assert "imports re" not in text.stdout
