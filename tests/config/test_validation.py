"""Strict validation: every bad input is one ConfigError line naming file, line, key, value."""

from __future__ import annotations

import pytest

from egg_core.config.parsing import load_config_bytes, load_config_file, load_config_string
from egg_core.errors import ConfigError


def error(text: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load_config_string(text, "proj/egg.yaml")
    message = str(exc.value)
    assert "\n" not in message
    assert exc.value.exit_code == 2
    return message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a typo in a mode must never silently become rw:
        ("fs:\n  - dny:~/.ssh\n", "proj/egg.yaml:2: fs[0]: unknown mode 'dny' in 'dny:~/.ssh'"),
        ("fs:\n  - ./src\n", "fs[0]: expected mode:path, got './src'"),
        ("fs:\n  - 'rw:'\n", "fs[0]: empty path in 'rw:'"),
        ("fs:\n  - 'deny:   '\n", "fs[0]: empty path"),
        ("fs: rw:./\n", "fs: expected a list, got 'rw:./'"),
        ("fs:\n  - 42\n", None),
        ("fs:\n  - [a]\n", "fs[0]: expected a string, got a list"),
        ("resources:\n  memory: 2 gigs\n", "resources.memory: expected a size such as 512MB"),
        ("resources:\n  memory: 0\n", "resources.memory: 0 is out of range"),
        ("resources:\n  memory: -5MB\n", "resources.memory: expected a size"),
        ("resources:\n  cpu: 5 minutes\n", "resources.cpu: expected a duration"),
        ("resources:\n  cpu: 0s\n", "resources.cpu: a duration must be greater than zero"),
        ("resources:\n  cpu_per_process: 2 hours\n", "resources.cpu_per_process: expected a"),
        ("resources:\n  max_fds: -1\n", "resources.max_fds: -1 is out of range"),
        ("resources:\n  max_fds: 0\n", "resources.max_fds: 0 is out of range"),
        ("resources:\n  max_pids: 1.5\n", "resources.max_pids: expected an integer, got 1.5"),
        ("resources:\n  max_pids: '100'\n", "resources.max_pids: expected an integer, got '100'"),
        ("resources:\n  max_pids: true\n", "resources.max_pids: expected an integer, got true"),
        ("resources:\n  maxpids: 5\n", "resources.maxpids: unknown key (did you mean 'max_pids'?)"),
        ("network:\n  local_ports: [0]\n", "network.local_ports[0]: 0 is out of range 1-65535"),
        ("network:\n  local_ports: [65536]\n", "65536 is out of range 1-65535"),
        ("network:\n  local_ports: [http]\n", "network.local_ports[0]: expected an integer"),
        ("network:\n  mode: block\n", "network.mode: 'block' is not one of enforce, observe"),
        ("network:\n  agent_domains: some\n", "network.agent_domains: 'some' is not one of"),
        ("network:\n  log: sometimes\n", "network.log: expected true or false"),
        ("network:\n  domain: [a.com]\n", "network.domain: unknown key (did you mean 'domains'?)"),
        ("network: github.com\n", "network: expected none, '*', a list of domains or a mapping"),
        ("network: [https://github.com/x]\n", "network[0]: not a domain: 'https://github.com/x'"),
        ("network: ['a.com:99999']\n", "not a domain: 'a.com:99999'"),
        ("env: HOME\n", "env: expected '*' or a list of variable names, got 'HOME'"),
        ("env: [MY-VAR]\n", "env[0]: not a variable name: 'MY-VAR'"),
        ("env: ['A=1']\n", "env[0]: not a variable name: 'A=1'"),
        ("netwrok: none\n", "proj/egg.yaml:1: netwrok: unknown key (did you mean 'network'?)"),
        ("frobnicate: 1\n", "frobnicate: unknown key (known keys: base, fs, network"),
        ("audit: maybe\n", "audit: expected true or false, got 'maybe'"),
        ("audit: 1\n", "audit: expected true or false, got 1"),
        ("shell: ''\n", "shell: must not be empty"),
        ("shell: [bash]\n", "shell: expected a string, got a list"),
        ("agent_settings: [claude]\n", "agent_settings: expected a mapping, got a list"),
        ("agent_settings:\n  claude: [x]\n", "agent_settings.claude: expected a string"),
        ("base: ''\n", "base: must not be empty"),
        ("base: [a]\n", "base: expected a mapping, got a list"),
        ("base: {name: x, fs: y, net: z}\n", "base.net: unknown key (did you mean 'network'?)"),
        ("base: {name: none, fs: strict}\n", "section masks need a base to mask"),
        ("base: 'my base'\n", "base: 'my base' is neither a base name nor a ./, ../ or / path"),
        ("base: sub/dir\n", "is neither a base name nor"),
        ("- a\n- b\n", "(top level): expected a mapping of keys, got a list"),
        ("just text\n", "(top level): expected a mapping of keys, got 'just text'"),
        ("fs: [rw:./]\nfs: []\n", "proj/egg.yaml:2: fs: duplicate key"),
        ("fs: [\n", "proj/egg.yaml:2: YAML syntax error"),
        ("a: b: c\n", "proj/egg.yaml:1: YAML syntax error: mapping values are not allowed"),
        ("---\nfs: []\n---\nfs: []\n", "YAML syntax error"),
        ("fs: !!python/object:os.system x\n", "fs: expected a list, got a value tagged"),
        ("? [a, b]\n: c\n", "keys must be names"),
        ("fs: &a [*a]\n", "fs[0]: expected a string"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(text, expected):
    message = error(text)
    assert message.startswith("proj/egg.yaml")
    if expected:
        assert expected in message, message


def test_an_integer_fs_rule_is_a_missing_mode():
    assert "expected mode:path, got '42'" in error("fs:\n  - 42\n")


def test_undecodable_file():
    with pytest.raises(ConfigError, match=r"^x.yaml: not valid UTF-8 \(byte 0xff at offset 4\)"):
        load_config_bytes(b"fs: \xff\xfe", "x.yaml")


def test_utf8_bom_is_accepted():
    assert load_config_bytes(b"\xef\xbb\xbfaudit: true\n").audit


def test_control_characters_are_a_yaml_error():
    with pytest.raises(ConfigError, match="YAML"):
        load_config_bytes(b"shell: a\x00b\n")


def test_billion_laughs_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("fs: *a11")
    message = error("\n".join(lines) + "\n")
    assert "unknown key" in message or "too large" in message


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config_file(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_config_file(tmp_path)


def test_oversized_file(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (2 << 20))
    with pytest.raises(ConfigError, match="larger than"):
        load_config_file(big)


def test_a_network_value_with_a_newline_is_still_one_line():
    """Found by the property tests: the hint quoted the value raw."""
    with pytest.raises(ConfigError) as caught:
        load_config_string('network: "0\\n0"\n')
    assert "\n" not in str(caught.value) and "for one domain write" in str(caught.value)
