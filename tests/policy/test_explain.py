"""``egg explain``: the human table, the JSON contract, and no secret values anywhere."""

from __future__ import annotations

import json
import os

import pytest

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-VERYSECRET-1",
    "OPENAI_API_KEY": "sk-openai-VERYSECRET-2",
    "GITHUB_TOKEN": "ghp_VERYSECRET-3",
    "ANTHROPIC_BASE_URL": "https://gw.corp.example/v1?key=VERYSECRET-4",
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    path = tmp_path / "proj"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def test_explain_claude_prints_a_table(egg_cli, project):
    out = egg_cli.run("explain", "claude").assert_ok().stdout
    assert out.startswith("agent      claude (Claude Code")
    for heading in (
        "config",
        "platform",
        "network",
        "env",
        "filesystem",
        "drilled for claude",
        "derived",
        "suppressed",
        "command:",
    ):
        assert heading in out
    assert "api.anthropic.com" in out and "the Claude API: every model request" in out
    assert "rw-prefix" in out and "agent:claude" in out


def test_explain_json_keys(egg_cli, project):
    data = egg_cli.run("explain", "claude", "--json").assert_ok().json()
    for key in (
        "agent",
        "platform",
        "command",
        "fs",
        "network",
        "env",
        "drilled",
        "derived",
        "suppressed",
    ):
        assert key in data
    assert data["agent"] == "claude"
    assert isinstance(data["command"], list) and all(isinstance(a, str) for a in data["command"])
    assert set(data["network"]) >= {"mode", "need", "domains", "local_ports"}
    assert data["network"]["need"] == "https-filtered"
    assert all(set(e) == {"mode", "path", "source"} for e in data["fs"])
    for hole in data["drilled"] + data["derived"] + data["suppressed"]:
        assert set(hole) == {"kind", "value", "agent", "reason"}
        assert hole["kind"] in (
            "domain",
            "write_dir",
            "home_file",
            "cache_dir",
            "env",
            "local_port",
        )
    assert data["platform"] == "linux-ns"
    assert data["command"][-1] == "claude"


def test_explain_default_agent_is_shell(egg_cli, project):
    data = egg_cli.run("explain", "--json").assert_ok().json()
    assert data["agent"] == "shell" and data["drilled"] == []


@pytest.mark.parametrize("form", [(), ("--json",)])
def test_secret_values_never_appear(egg_cli, project, form):
    (project / "egg.yaml").write_text("env: '*'\n")
    result = egg_cli.run("explain", "claude", *form, env=SECRETS).assert_ok()
    for value in SECRETS.values():
        assert value not in result.stdout + result.stderr
    if form:
        data = result.json()
        assert "ANTHROPIC_API_KEY" in data["env"] and "GITHUB_TOKEN" in data["env"]


def test_provider_url_shows_as_derived(egg_cli, project):
    data = (
        egg_cli.run(
            "explain", "claude", "--json", env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"}
        )
        .assert_ok()
        .json()
    )
    assert data["derived"][0]["kind"] == "local_port" and data["derived"][0]["value"] == "4000"
    assert {h["value"] for h in data["suppressed"]} >= {"api.anthropic.com"}


def test_a_command_that_is_no_agent_is_explained_as_the_command(egg_cli, project):
    """egg run runs it with no agent holes; egg explain shows that policy."""
    tool = project / "mystery-agent"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    path = {"PATH": f"{project}:{os.environ['PATH']}"}
    result = egg_cli.run("explain", "mystery-agent", env=path).assert_ok()
    assert "unknown agent" in result.stdout
    data = egg_cli.run("explain", "mystery-agent", "--json", env=path).json()
    assert data["known_agent"] is False and data["drilled"] == []
    assert data["argv"] == ["mystery-agent"]


@pytest.mark.parametrize(
    ("name", "hint"), [("claud", "did you mean 'claude'?"), ("mystery-agent", "agents: claude, ")]
)
@pytest.mark.parametrize("form", [(), ("--json",)])
def test_no_agent_and_no_command_is_the_error_egg_run_gives(egg_cli, project, name, hint, form):
    explained = egg_cli.run("explain", name, *form)
    ran = egg_cli.run("run", name)
    said = f"egg: error: unknown agent {name!r}, and no command of that name ({hint}"
    for result in (explained, ran):
        assert result.exit_code == 2 and result.stdout == "", result
        (line,) = result.stderr.splitlines()
        assert line.startswith(said), line
    assert explained.stderr == ran.stderr


def test_explain_for_unsandboxed_records_the_outer_boundary(egg_cli, project):
    data = egg_cli.run("explain", "--platform", "unsandboxed", "--json").assert_ok().json()
    assert data["platform"] == "unsandboxed" and data["outer_boundary"] == "declared by user"


def test_wide_open_config_is_declared_by_config(egg_cli, project):
    (project / "egg.yaml").write_text("base: none\nnetwork: '*'\nenv: '*'\n")
    data = egg_cli.run("explain", "--json").assert_ok().json()
    assert data["platform"] == "unsandboxed" and data["outer_boundary"] == "declared by config"
    assert data["requires_sandbox"] is False


def test_explain_bad_config_is_one_line(egg_cli, project):
    (project / "egg.yaml").write_text("fs: [dny:/x]\n")
    result = egg_cli.run("explain")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1


def test_explain_json_is_valid_json_for_every_agent(egg_cli, project):
    for agent in ("claude", "codex", "gemini", "opencode", "cursor", "ollama", "shell"):
        json.loads(egg_cli.run("explain", agent, "--json").assert_ok().stdout)
