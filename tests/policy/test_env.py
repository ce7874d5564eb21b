"""The sandboxed environment: allowlist or '*', agent variables, defaults, and what never passes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from egg_core.env import build_env
from egg_core.sshagent import ssh_agent_socket_paths
from tests.policy.conftest import resolve

HOST = {
    "HOME": "/home/dev",
    "PATH": "/usr/bin:/bin",
    "TERM": "xterm-256color",
    "LANG": "C.UTF-8",
    "USER": "dev",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "GITHUB_TOKEN": "gh-secret",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "CLAUDECODE": "1",
    "CLAUDE_CODE_ENTRYPOINT": "cli",
    "CLAUDE_CODE_SSE_PORT": "23456",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",
    "MY_VAR": "x",
}


def env_for(agent: str = "shell", text: str = "", environ: dict[str, str] = HOST) -> dict[str, str]:
    return build_env(resolve(agent, text, environ=environ), environ)


def test_allowlist_passes_only_listed_and_essential_names():
    env = env_for(text="env: [MY_VAR]")
    assert env == {
        "HOME": "/home/dev",
        "PATH": "/usr/bin:/bin",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "USER": "dev",
        "MY_VAR": "x",
    }


def test_an_empty_slate_passes_no_variable_at_all():
    """``base: none`` with no env: the sandbox gets none of the host's variables (egg.yaml says
    exactly what passes; the built-in default is what lists HOME, PATH, TERM, LANG, USER...)."""
    from egg_core.config.parsing import load_config_string
    from egg_core.resolution import resolve_policy
    from tests.policy.conftest import CWD, HOME, profile

    policy = resolve_policy(
        load_config_string("base: none\n"), profile("shell"), home=HOME, cwd=CWD, environ=HOST
    )
    assert build_env(policy, HOST) == {}


def test_star_passes_everything_but_session_markers_ssh_and_guarded_names():
    env = env_for(text="env: '*'")
    assert env["AWS_SECRET_ACCESS_KEY"] == "aws-secret"
    assert env["GITHUB_TOKEN"] == "gh-secret"
    for gone in (
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SSE_PORT",
        "CLAUDE_CODE_USE_BEDROCK",
        "SSH_AUTH_SOCK",
    ):
        assert gone not in env, gone


def test_agent_key_variables_are_added():
    env = env_for("claude")
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-secret"
    assert "OPENAI_API_KEY" not in env
    assert "GITHUB_TOKEN" not in env


def test_parent_session_variables_never_pass_even_when_listed():
    env = env_for(text="env: [CLAUDECODE, CLAUDE_CODE_ENTRYPOINT]")
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_ENTRYPOINT" not in env


def test_other_claude_code_variables_pass_only_when_named_exactly():
    assert "CLAUDE_CODE_USE_BEDROCK" not in env_for("claude", "env: '*'")
    assert env_for("claude", "env: [CLAUDE_CODE_USE_BEDROCK]")["CLAUDE_CODE_USE_BEDROCK"] == "1"
    oauth = {**HOST, "CLAUDE_CODE_OAUTH_TOKEN": "tok"}
    assert env_for("claude", environ=oauth)["CLAUDE_CODE_OAUTH_TOKEN"] == "tok"


def test_set_env_defaults_fill_in_but_the_host_wins():
    assert env_for("claude")["DISABLE_AUTOUPDATER"] == "1"
    assert (
        env_for("claude", environ={**HOST, "DISABLE_AUTOUPDATER": "0"})["DISABLE_AUTOUPDATER"]
        == "0"
    )


def test_ssh_auth_sock_is_dropped_when_dot_ssh_is_denied():
    assert "SSH_AUTH_SOCK" not in env_for(text="env: '*'")
    assert "SSH_AUTH_SOCK" not in env_for(text="env: [SSH_AUTH_SOCK_X]")


def test_ssh_auth_sock_passes_when_listed_explicitly_as_a_deliberate_opt_in():
    assert env_for(text="env: [SSH_AUTH_SOCK]")["SSH_AUTH_SOCK"] == "/tmp/ssh-XXXX/agent.1"


def test_ssh_auth_sock_passes_when_dot_ssh_is_readable():
    text = "base: none\nfs: ['rw:./']\nenv: '*'"
    from egg_core.config.parsing import load_config_string
    from egg_core.resolution import resolve_policy
    from tests.policy.conftest import CWD, HOME, profile

    policy = resolve_policy(
        load_config_string(text), profile("shell"), home=HOME, cwd=CWD, environ=HOST
    )
    assert build_env(policy, HOST)["SSH_AUTH_SOCK"] == "/tmp/ssh-XXXX/agent.1"


def _agent_socket(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


def test_live_ssh_agent_sockets_are_found(tmp_path):
    home = tmp_path / "home"
    runtime = tmp_path / "run"
    live = _agent_socket(tmp_path / "custom" / "agent.sock")
    keyring = _agent_socket(runtime / "keyring" / "ssh")
    gpg = _agent_socket(runtime / "gnupg" / "S.gpg-agent.ssh")
    try:
        found = ssh_agent_socket_paths(
            {
                "SSH_AUTH_SOCK": str(tmp_path / "custom" / "agent.sock"),
                "XDG_RUNTIME_DIR": str(runtime),
            },
            home,
        )
        assert str(tmp_path / "custom" / "agent.sock") in found
        assert str(runtime / "keyring" / "ssh") in found
        assert str(runtime / "gnupg" / "S.gpg-agent.ssh") in found
        assert found == sorted(found)
    finally:
        for s in (live, keyring, gpg):
            s.close()


def test_masked_socket_paths_are_in_the_policy_when_dot_ssh_is_denied(tmp_path):
    live = _agent_socket(tmp_path / "agent.sock")
    try:
        environ = {
            **HOST,
            "SSH_AUTH_SOCK": str(tmp_path / "agent.sock"),
            "XDG_RUNTIME_DIR": str(tmp_path / "none"),
        }
        denied = resolve("shell", environ=environ).deny
        assert str(tmp_path / "agent.sock") in denied
        opted_in = resolve("shell", "env: [SSH_AUTH_SOCK]", environ=environ).deny
        assert str(tmp_path / "agent.sock") not in opted_in
    finally:
        live.close()


def test_missing_ssh_socket_is_not_listed(tmp_path):
    assert (
        ssh_agent_socket_paths(
            {"SSH_AUTH_SOCK": str(tmp_path / "gone"), "XDG_RUNTIME_DIR": str(tmp_path)}, tmp_path
        )
        == []
    )


def test_env_values_never_enter_the_policy():
    policy = resolve("claude", "env: '*'", environ=HOST)
    text = repr(policy) + repr([h for h in policy.drilled])
    for value in ("sk-ant-secret", "aws-secret", "gh-secret"):
        assert value not in text
    assert os.environ.get("ANTHROPIC_API_KEY", "") not in ("sk-ant-secret",)


#: the terminal's colour depth, the time zone and the locale of a user in Berlin with English
#: messages (issue 24: Gemini warned "True color not detected" on every start without COLORTERM)
DESK = {
    "COLORTERM": "truecolor",
    "TZ": "Europe/Berlin",
    "LANGUAGE": "en_GB:en",
    "LC_ALL": "de_DE.UTF-8",
    "LC_ADDRESS": "de_DE.UTF-8",
    "LC_COLLATE": "C",
    "LC_CTYPE": "de_DE.UTF-8",
    "LC_IDENTIFICATION": "de_DE.UTF-8",
    "LC_MEASUREMENT": "de_DE.UTF-8",
    "LC_MESSAGES": "en_GB.UTF-8",
    "LC_MONETARY": "de_DE.UTF-8",
    "LC_NAME": "de_DE.UTF-8",
    "LC_NUMERIC": "de_DE.UTF-8",
    "LC_PAPER": "de_DE.UTF-8",
    "LC_TELEPHONE": "de_DE.UTF-8",
    "LC_TIME": "de_DE.UTF-8",
}


def test_the_terminal_time_zone_and_locale_pass_by_default():
    env = env_for(environ={**HOST, **DESK})

    assert {name: env.get(name) for name in DESK} == DESK
    assert "GITHUB_TOKEN" not in env and "MY_VAR" not in env
