"""Every YAML shape of DESIGN.md §4 parses, and re-emits in the shape it was written."""

from __future__ import annotations

import textwrap

import pytest

from egg_core.config.model import BaseRef, EggConfig, FsRule
from egg_core.config.parsing import dump_json, dump_yaml, load_config_string, to_json_data


def load(text: str) -> EggConfig:
    return load_config_string(textwrap.dedent(text), "egg.yaml")


def test_empty_file_is_an_empty_config():
    assert load("") == EggConfig()
    assert load("# only a comment\n") == EggConfig()


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("base: none", BaseRef(name="none")),
        ("base: strict", BaseRef(name="strict")),
        ("base: ./team.yaml", BaseRef(name="./team.yaml")),
        ("base: ../up.yaml", BaseRef(name="../up.yaml")),
        ("base: /etc/egg/base.yaml", BaseRef(name="/etc/egg/base.yaml")),
        ("base: {name: strict}", BaseRef(name="strict", mapping=True)),
        (
            "base: {name: strict, fs: none, network: ./net.yaml, env: other}",
            BaseRef(name="strict", fs="none", network="./net.yaml", env="other", mapping=True),
        ),
        ("base: {fs: none}", BaseRef(fs="none", mapping=True)),
    ],
)
def test_base_shapes(text, base):
    assert load(text).base == base


def test_fs_rules_keep_mode_and_path_as_written():
    config = load(
        """
        fs:
          - rw:./
          - ro:~/src
          - deny:~/.ssh
          - deny-write:./egg.yaml
          - "rw:/path with spaces/x"
        """
    )
    assert [(r.mode, r.path) for r in config.fs] == [
        ("rw", "./"),
        ("ro", "~/src"),
        ("deny", "~/.ssh"),
        ("deny-write", "./egg.yaml"),
        ("rw", "/path with spaces/x"),
    ]
    assert all(r.source == "egg.yaml" for r in config.fs)
    assert str(config.fs[3]) == "deny-write:./egg.yaml"


@pytest.mark.parametrize("text", ["network: none", "network: ''", "network:", "network: []"])
def test_network_none_shapes(text):
    net = load(text).network
    assert net.domains == () and not net.unrestricted
    assert net.summary() == "none"


def test_network_star():
    net = load("network: '*'").network
    assert net.unrestricted and net.shape == "star" and net.summary() == "*"


def test_network_list_with_wildcards():
    net = load(
        "network: [github.com, '*.pypi.org', localhost, 127.0.0.1, 'localhost:8080']"
    ).network
    assert net.domains == ("github.com", "*.pypi.org", "localhost", "127.0.0.1", "localhost:8080")
    assert net.shape == "list"


def test_star_inside_a_list_is_unrestricted():
    assert load("network: [github.com, '*']").network.domains == ("*",)


def test_network_mapping_with_every_option():
    net = load(
        """
        network:
          domains: [api.example.com]
          local_ports: [11434, 8080]
          mode: observe
          log: true
          agent_domains: none
        """
    ).network
    assert net.domains == ("api.example.com",)
    assert net.local_ports == (11434, 8080)
    assert (net.mode, net.log, net.agent_domains) == ("observe", True, "none")
    assert net.summary() == "api.example.com,localhost:11434,localhost:8080"


def test_network_mapping_domains_star():
    assert load("network: {domains: '*', mode: enforce}").network.unrestricted


@pytest.mark.parametrize(
    ("text", "names", "everything"),
    [
        ("env: '*'", ("*",), True),
        ("env: [HOME, PATH, MY_VAR]", ("HOME", "PATH", "MY_VAR"), False),
        ("env: [A, '*']", ("*",), True),
    ],
)
def test_env_shapes(text, names, everything):
    env = load(text).env
    assert env.names == names and env.everything is everything


def test_resources_and_units():
    res = load(
        """
        resources:
          cpu: 1h30m
          memory: 512MB
          max_fds: 1024
          max_pids: 256
        """
    ).resources
    assert res.cpu_seconds == 5400
    assert res.memory_bytes == 512 * 1024**2
    assert (res.max_fds, res.max_pids) == (1024, 256)


def test_a_per_process_cpu_limit_is_its_own_key_beside_the_sandboxs_budget():
    res = load("resources: {cpu: 10m, cpu_per_process: 90s}").resources
    assert res.cpu_seconds == 600 and res.cpu_per_process_seconds == 90
    assert load("resources: {cpu_per_process: 30}").resources.cpu_seconds is None


def test_integer_cpu_is_seconds_and_integer_memory_is_bytes():
    res = load("resources: {cpu: 300, memory: 1048576}").resources
    assert res.cpu_seconds == 300 and res.memory_bytes == 1 << 20


def test_scalars_booleans_and_agent_settings():
    config = load(
        """
        shell: /bin/zsh
        dangerously_skip_permissions: true
        audit: true
        trace: false
        agent_settings:
          claude: ~/.claude/settings.json
          codex: ~/.codex/config.toml
        """
    )
    assert config.shell == "/bin/zsh"
    assert config.dangerously_skip_permissions and config.audit and not config.trace
    assert config.agent_settings_map == {
        "claude": "~/.claude/settings.json",
        "codex": "~/.codex/config.toml",
    }


CANONICAL = [
    "network: none\n",
    "network: '*'\n",
    "network:\n  - github.com\n  - '*.pypi.org'\n",
    "network:\n  domains:\n    - github.com\n  local_ports:\n    - 11434\n  mode: observe\n",
    "network:\n  domains: '*'\n  agent_domains: none\n",
    "env: '*'\n",
    "base: strict\nfs:\n  - rw:./\n  - deny:~/.ssh\n",
    "base:\n  name: strict\n  fs: none\n  env: ./env.yaml\n",
    "base: ./team.yaml\nfs: []\nnetwork: none\nenv:\n  - HOME\n  - PATH\n"
    "resources:\n  cpu: 300s\n  memory: 2GB\n  max_fds: 1024\n  max_pids: 100\n"
    "  cpu_per_process: 60s\n"
    "shell: /bin/bash\ndangerously_skip_permissions: true\naudit: true\ntrace: true\n"
    "agent_settings:\n  claude: ~/.claude/settings.json\n",
    "fs:\n  - rw:/path with spaces\n  - 'deny:~/a: b'\n",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_files_round_trip_byte_for_byte(text):
    assert dump_yaml(load_config_string(text)) == text


@pytest.mark.parametrize("text", CANONICAL)
def test_emission_is_a_fixpoint(text):
    once = dump_yaml(load_config_string(text))
    assert dump_yaml(load_config_string(once)) == once
    assert load_config_string(once) == load_config_string(text)


def test_legacy_shapes_stay_legacy_when_no_mapping_option_is_set():
    assert dump_yaml(load("network: [a.com]")) == "network:\n  - a.com\n"
    assert dump_yaml(load("network: '*'")) == "network: '*'\n"
    assert dump_yaml(load("network: none")) == "network: none\n"


def test_mapping_only_option_forces_the_mapping_shape():
    config = load("network: {domains: [a.com], local_ports: [8080]}")
    assert dump_yaml(config) == "network:\n  domains:\n    - a.com\n  local_ports:\n    - 8080\n"


def test_json_uses_egg_yaml_keys_and_network_is_always_a_mapping():
    data = to_json_data(load("network: [a.com]\nenv: '*'\nfs: [rw:./]"))
    assert list(data) == [
        "base", "fs", "network", "env", "resources", "shell",
        "dangerously_skip_permissions", "audit", "trace", "agent_settings", "persistence_guards",
        "clipboard", "tools",
    ]  # fmt: skip
    assert data["network"]["domains"] == ["a.com"]
    assert data["network"]["local_ports"] == []
    assert data["env"] == ["*"]
    assert data["fs"] == ["rw:./"]
    assert dump_json(load("network: '*'")).count('"*"') == 1


def test_fs_rule_normalization():
    from pathlib import Path

    home = Path("/home/u")
    assert FsRule("deny", "~/.ssh/").normalized(home) == "/home/u/.ssh"
    assert FsRule("deny", "./a/../b").normalized(home) == "b"
    assert FsRule("rw", "./").normalized(home) == "."
