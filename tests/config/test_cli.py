"""``egg config show | validate | init`` as a user runs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_core.config.model import DEFAULT_ENV
from egg_core.config.parsing import load_config_file


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


USER_CONFIG = """\
# my project
base: team
fs:
  - rw:./
  - deny:~/.config/gh   # no GitHub tokens
network:
  - github.com
  - '*.pypi.org'
resources:
  memory: 4GB
"""


def test_show_resolved_json_of_a_user_written_config(egg_cli, project, egg_home):
    (egg_home / "bases").mkdir()
    (egg_home / "bases" / "team.yaml").write_text("env: [TEAM_TOKEN]\nnetwork: [team.example]\n")
    (project / "egg.yaml").write_text(USER_CONFIG)
    data = egg_cli.run("config", "show", "--resolved", "--json").assert_ok().json()
    assert data["base"] is None
    assert data["network"] == {
        "domains": ["team.example", "github.com", "*.pypi.org"],
        "local_ports": [],
        "mode": "enforce",
        "log": None,
        "agent_domains": "merge",
    }
    assert "deny:~/.ssh" in data["fs"] and "deny:~/.config/gh" in data["fs"]
    assert data["env"] == [*DEFAULT_ENV, "TEAM_TOKEN"]
    assert data["resources"]["memory"] == "4GB"


def test_show_without_resolved_is_the_file_itself(egg_cli, project, egg_home):
    (egg_home / "bases").mkdir()
    (egg_home / "bases" / "team.yaml").write_text("env: [TEAM_TOKEN]\n")
    (project / "egg.yaml").write_text(USER_CONFIG)
    out = egg_cli.run("config", "show").assert_ok().stdout
    assert out.startswith("base: team\nfs:\n  - rw:./\n  - deny:~/.config/gh\n")
    assert "TEAM_TOKEN" not in out


def test_show_with_no_config_is_the_builtin_default(egg_cli, project):
    out = egg_cli.run("config", "show", "--json").assert_ok().json()
    assert "deny:~/.ssh" in out["fs"] and out["network"]["domains"] == []


def test_show_with_config_flag(egg_cli, project, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("base: none\nnetwork: '*'\n")
    out = egg_cli.run("config", "show", "--config", str(other), "--resolved").assert_ok().stdout
    assert out == "network: '*'\n"


def test_validate_ok(egg_cli, project):
    (project / "egg.yaml").write_text(USER_CONFIG.replace("base: team\n", ""))
    result = egg_cli.run("config", "validate").assert_ok()
    assert result.stdout == "ok\n"
    assert egg_cli.run("config", "validate", "egg.yaml").stdout == "ok\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fs:\n  - dny:~/.ssh\n", "egg.yaml:2: fs[0]: unknown mode 'dny'"),
        ("resources:\n  memory: lots\n", "egg.yaml:2: resources.memory: expected a size"),
        ("netwrk: none\n", "egg.yaml:1: netwrk: unknown key (did you mean 'network'?)"),
        ("fs: [\n", "egg.yaml:2: YAML syntax error"),
        ("base: missing\n", "base: 'missing' not found"),
    ],
)
def test_validate_bad_files_is_one_line_exit_2(egg_cli, project, text, expected):
    (project / "egg.yaml").write_text(text)
    result = egg_cli.run_subprocess("config", "validate", cwd=project)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("egg: error: ")
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_config_stops_show_too(egg_cli, project):
    (project / "egg.yaml").write_bytes(b"\xff\xfe\x00")
    result = egg_cli.run_subprocess("config", "show", "--resolved", "--json", cwd=project)
    assert result.exit_code == 2 and "not valid UTF-8" in result.stderr
    assert result.stdout == ""


def test_validate_missing_path(egg_cli, project):
    result = egg_cli.run("config", "validate", "nope.yaml")
    assert result.exit_code == 2 and "nope.yaml: no such config file" in result.stderr


def test_init_writes_a_commented_starter_that_validates(egg_cli, project):
    result = egg_cli.run("config", "init").assert_ok()
    assert "wrote egg.yaml" in result.stdout
    text = (project / "egg.yaml").read_text()
    assert text.startswith("# egg.yaml")
    load_config_file(project / "egg.yaml")
    assert egg_cli.run("config", "validate").stdout == "ok\n"


def test_init_refuses_to_overwrite(egg_cli, project):
    (project / "egg.yaml").write_text("audit: true\n")
    result = egg_cli.run("config", "init")
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert (project / "egg.yaml").read_text() == "audit: true\n"


def test_init_to_a_path(egg_cli, project):
    egg_cli.run("config", "init", "sub.yaml").assert_ok()
    assert os.path.exists(project / "sub.yaml")


def test_config_without_action_is_a_usage_error(egg_cli):
    result = egg_cli.run("config")
    assert result.exit_code == 2 and "ACTION" in result.stderr
