"""Property: whatever bytes or YAML document the loader is fed, only ConfigError escapes."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egg_core.config.parsing import (
    TOP_LEVEL_KEYS,
    dump_yaml,
    load_config_bytes,
    load_config_string,
)
from egg_core.errors import ConfigError

KEYS = st.sampled_from(
    [
        *TOP_LEVEL_KEYS,
        "domains",
        "local_ports",
        "mode",
        "log",
        "agent_domains",
        "cpu",
        "memory",
        "max_fds",
        "max_pids",
        "cpu_per_process",
        "name",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "*",
            "none",
            "rw:./",
            "dny:~/.ssh",
            "deny:",
            "2GB",
            "5m",
            "merge",
            "observe",
            "./base.yaml",
            "../x.yaml",
            "/abs.yaml",
            "strict",
        ]
    )
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=6),
    max_leaves=25,
)
EXAMPLES = settings(suppress_health_check=list(HealthCheck))


def _only_config_errors(load, data) -> None:
    try:
        config = load(data)
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    # What loads must re-emit and load back to the same config.
    assert load_config_string(dump_yaml(config)) == config


@EXAMPLES
@given(st.dictionaries(KEYS, DOCUMENTS, max_size=8))
def test_random_yaml_mappings(document):
    text = yaml.safe_dump(document, allow_unicode=True)
    _only_config_errors(load_config_string, text)


@EXAMPLES
@given(DOCUMENTS)
def test_random_yaml_documents(document):
    _only_config_errors(load_config_string, yaml.safe_dump(document))


@EXAMPLES
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _only_config_errors(load_config_bytes, data)


@EXAMPLES
@given(st.text(max_size=200))
def test_random_text(text):
    _only_config_errors(load_config_string, text)


YAMLISH = st.lists(
    st.sampled_from(
        [
            "fs:",
            "  - ",
            "rw:./",
            "network:",
            " - ",
            "*",
            "&a ",
            "*a",
            "[",
            "]",
            "{",
            "}",
            ": ",
            "\n",
            "'",
            '"',
            "!!str ",
            "!!python/object ",
            "---",
            "? ",
            "#",
            "\t",
            "base:",
            "env:",
            "resources:",
            "cpu: ",
            "memory: ",
            "-1",
            "0x1F",
            "1e9",
            ".inf",
            "~",
            "null",
            "yes",
            "\x00",
            "\ufeff",
            "é",
        ]
    ),
    max_size=40,
).map("".join)


@EXAMPLES
@given(YAMLISH)
def test_yaml_shaped_noise(text):
    _only_config_errors(load_config_string, text)
