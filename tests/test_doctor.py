"""``egg doctor``: every platform with its availability, the host checks, what would fail."""

from __future__ import annotations

import os
import subprocess
import sys


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
