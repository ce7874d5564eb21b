"""egg.yaml text <-> :class:`~egg_core.config.model.EggConfig`, with strict validation.

Parsing walks PyYAML's node tree rather than the constructed objects so that every error can name
the line, and so that duplicate keys (which PyYAML silently collapses, losing rules) are errors.
Every problem raises :class:`~egg_core.errors.ConfigError` with one line naming the file, the key
and the bad value; nothing else escapes (a property test holds this for random input).

Emission keeps the shape a key was written in: ``network: none``, ``network: '*'`` and a domain
list re-emit as scalar/list unless a mapping-only option (``local_ports``, ``mode``, ``log``,
``agent_domains``) is set, so a file in canonical form round-trips byte for byte.

Why one module of this size: one validator per egg.yaml section sharing one error machinery
(file, line, key, a did-you-mean), so every section's messages read the same.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from egg_core.config.model import (
    AGENT_DOMAINS,
    FS_MODES,
    NETWORK_MODES,
    BaseRef,
    EggConfig,
    EnvConfig,
    FsRule,
    NetworkConfig,
    Resources,
)
from egg_core.errors import ConfigError
from egg_core.units import parse_duration, parse_size

if TYPE_CHECKING:
    from egg_core.pathrules import Mode

TOP_LEVEL_KEYS = (
    "base",
    "fs",
    "network",
    "env",
    "resources",
    "shell",
    "dangerously_skip_permissions",
    "audit",
    "trace",
    "agent_settings",
    "persistence_guards",
    "clipboard",
    "tools",
)
BASE_KEYS = ("name", "fs", "network", "env")
NETWORK_KEYS = ("domains", "local_ports", "mode", "log", "agent_domains")
RESOURCE_KEYS = ("cpu", "memory", "max_fds", "max_pids", "cpu_per_process")
MAX_NODES = 20_000
MAX_FILE_BYTES = 1 << 20

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DOMAIN = re.compile(
    r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*\.?(:\d{1,5})?$"
)
_IPV6 = re.compile(r"^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")
_BASE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")

STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"
FLOAT = "tag:yaml.org,2002:float"
_STANDARD_TAGS = {
    STR,
    INT,
    BOOL,
    NULL,
    FLOAT,
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:binary",
    "tag:yaml.org,2002:set",
    "tag:yaml.org,2002:omap",
    "tag:yaml.org,2002:pairs",
}


class _Reader:
    """Turns nodes into values, raising ConfigError naming file, line, key and value."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.nodes = 0

    def fail(self, node: yaml.Node | None, key: str, problem: str) -> ConfigError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return ConfigError(f"{self.source}{line}: {key}: {problem}")

    def count(self, node: yaml.Node, key: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, key, f"document too large (more than {MAX_NODES} values)")

    def describe(self, node: yaml.Node) -> str:
        if node.tag not in _STANDARD_TAGS:
            return f"a value tagged {node.tag}"
        if isinstance(node, yaml.ScalarNode):
            return repr(node.value) if node.tag == STR else str(node.value)
        return "a mapping" if isinstance(node, yaml.MappingNode) else "a list"

    # -- scalars

    def is_null(self, node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and node.tag == NULL

    def string(self, node: yaml.Node, key: str, *, empty_ok: bool = False) -> str:
        self.count(node, key)
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (STR, INT, FLOAT):
            raise self.fail(node, key, f"expected a string, got {self.describe(node)}")
        value = str(node.value)
        if not value.strip() and not empty_ok:
            raise self.fail(node, key, "must not be empty")
        if "\0" in value:
            raise self.fail(node, key, f"contains a NUL character: {value!r}")
        return value

    def boolean(self, node: yaml.Node, key: str) -> bool:
        self.count(node, key)
        if isinstance(node, yaml.ScalarNode) and node.tag == BOOL:
            return bool(yaml.SafeLoader.bool_values[node.value.lower()])
        raise self.fail(node, key, f"expected true or false, got {self.describe(node)}")

    def integer(self, node: yaml.Node, key: str, *, low: int, high: int) -> int:
        self.count(node, key)
        if isinstance(node, yaml.ScalarNode) and node.tag == INT:
            try:
                value = int(yaml.SafeLoader.construct_yaml_int(_CONSTRUCTOR, node))
            except (ValueError, TypeError) as exc:
                raise self.fail(node, key, f"not an integer: {node.value!r}") from exc
            if not low <= value <= high:
                raise self.fail(node, key, f"{value} is out of range {low}-{high}")
            return value
        raise self.fail(node, key, f"expected an integer, got {self.describe(node)}")

    # -- collections

    def mapping(self, node: yaml.Node, key: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        self.count(node, key)
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, f"expected a mapping, got {self.describe(node)}")
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != STR:
                raise self.fail(key_node, key, f"keys must be names, got {self.describe(key_node)}")
            name = key_node.value
            where = f"{key}.{_key_text(name)}" if key else _key_text(name)
            if name in result:
                raise self.fail(key_node, where, "duplicate key (the earlier value would be lost)")
            if name not in allowed:
                raise self.fail(key_node, where, f"unknown key{_suggest(name, allowed)}")
            result[name] = value_node
        return result

    def sequence(self, node: yaml.Node, key: str) -> list[yaml.Node]:
        self.count(node, key)
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, f"expected a list, got {self.describe(node)}")
        return list(node.value)


_CONSTRUCTOR = yaml.SafeLoader("")
#: libyaml's parser when PyYAML was built with it (same nodes and marks, several times faster)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_.~/-]+$")


def _key_text(name: str) -> str:
    """A key as it appears in a message: bare when plain, quoted (escaped) otherwise."""
    return name if _PLAIN_KEY.fullmatch(name) else repr(name)


def _suggest(name: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    options = ", ".join(allowed)
    return f" (did you mean {close[0]!r}?)" if close else f" (known keys: {options})"


def load_config_file(path: str | Path) -> EggConfig:
    """Read and validate one egg.yaml (its base chain is not resolved here)."""
    from egg_core import observe

    source = str(path)
    observe.realpath(source)
    observe.content(source)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError as exc:
        raise ConfigError(f"{source}: no such config file") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{source}: is a directory, not a config file") from exc
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{source}: larger than {MAX_FILE_BYTES} bytes; not a config file")
    return load_config_bytes(data, source)


def load_config_bytes(data: bytes, source: str = "<string>") -> EggConfig:
    """Decode (UTF-8, optional BOM) and parse; undecodable input is a ConfigError."""
    return load_config_string(decode(data, source), source)


def decode(data: bytes, source: str) -> str:
    """UTF-8 (a BOM allowed); anything else is a ConfigError naming the offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc


def compose(text: str, source: str) -> yaml.Node | None:
    """The YAML document's node tree (None for an empty document); a syntax error is a
    ConfigError naming the line. For egg.yaml and the other files egg reads the same way (tool
    definitions, through :mod:`egg_core.api.config`), with :class:`Reader`."""
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{source}{line}: YAML syntax error: {problem}") from exc
    except yaml.YAMLError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid YAML"
        raise ConfigError(f"{source}: YAML error: {message}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{source}: YAML nested too deeply") from exc
    except UnicodeEncodeError as exc:  # a lone surrogate: text that never came from UTF-8
        raise ConfigError(f"{source}: not valid UTF-8 text (at character {exc.start})") from exc


def load_config_string(text: str, source: str = "<string>") -> EggConfig:
    """Parse egg.yaml text. ``source`` names the file in error messages."""
    node = compose(text, source)
    if node is None:
        return EggConfig(source=source)
    try:
        return _build(_Reader(source), node, source)
    except RecursionError as exc:
        raise ConfigError(f"{source}: YAML nested too deeply") from exc


#: the node reader egg.yaml is parsed with (file, line, key in every error; did-you-mean)
Reader = _Reader


def _build(r: _Reader, node: yaml.Node, source: str) -> EggConfig:
    if not isinstance(node, yaml.MappingNode):
        raise r.fail(node, "(top level)", f"expected a mapping of keys, got {r.describe(node)}")
    keys = r.mapping(node, "", TOP_LEVEL_KEYS)
    parsers: dict[str, Callable[[yaml.Node], Any]] = {
        "base": lambda n: _base(r, n),
        "fs": lambda n: _fs(r, n, source),
        "network": lambda n: _network(r, n),
        "env": lambda n: _env(r, n),
        "resources": lambda n: _resources(r, n),
        "shell": lambda n: None if r.is_null(n) else r.string(n, "shell"),
        "dangerously_skip_permissions": lambda n: r.boolean(n, "dangerously_skip_permissions"),
        "audit": lambda n: r.boolean(n, "audit"),
        "trace": lambda n: r.boolean(n, "trace"),
        "agent_settings": lambda n: _agent_settings(r, n),
        "persistence_guards": lambda n: r.boolean(n, "persistence_guards"),
        "clipboard": lambda n: r.boolean(n, "clipboard"),
        "tools": lambda n: _tools(r, n),
    }
    values = {name: parsers[name](value) for name, value in keys.items()}
    return EggConfig(**values, present=frozenset(keys), source=source)


#: a tool's name: what the agent runs inside (a shim of that name on PATH) and MCP lists
TOOL_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def _tools(r: _Reader, node: yaml.Node) -> tuple[str, ...]:
    """``tools: [name, ...]``: the host tools this sandbox may call."""
    if r.is_null(node):
        return ()
    names = []
    for item in r.sequence(node, "tools"):
        name = r.string(item, "tools")
        if not TOOL_NAME.fullmatch(name):
            raise r.fail(
                item,
                "tools",
                f"bad tool name {name!r} (lowercase letters, digits, '.', '_', '-'; at most 64)",
            )
        names.append(name)
    return tuple(dict.fromkeys(names))


def _base(r: _Reader, node: yaml.Node) -> BaseRef | None:
    if r.is_null(node):
        return None
    if isinstance(node, yaml.ScalarNode):
        return BaseRef(name=_base_ref(r, node, "base"))
    keys = r.mapping(node, "base", BASE_KEYS)
    refs = {k: _base_ref(r, v, f"base.{k}") for k, v in keys.items() if not r.is_null(v)}
    if refs.get("name") == "none" and len(refs) > 1:
        raise r.fail(node, "base", "section masks need a base to mask, but base name is 'none'")
    return BaseRef(mapping=True, **refs)


def _base_ref(r: _Reader, node: yaml.Node, key: str) -> str:
    value = r.string(node, key).strip()
    is_path = value.startswith(("./", "../", "/", "~/"))
    if not is_path and not _BASE_NAME.fullmatch(value):
        raise r.fail(
            node, key, f"{value!r} is neither a base name nor a ./, ../ or / path to a file"
        )
    return value


def _fs(r: _Reader, node: yaml.Node, source: str) -> tuple[FsRule, ...]:
    if r.is_null(node):
        return ()
    rules = []
    for index, item in enumerate(r.sequence(node, "fs")):
        key = f"fs[{index}]"
        text = r.string(item, key)
        mode, sep, path = text.partition(":")
        if not sep:
            raise r.fail(
                item, key, f"expected mode:path, got {text!r} (modes: {', '.join(FS_MODES)})"
            )
        mode = mode.strip()
        if mode not in FS_MODES:
            hint = difflib.get_close_matches(mode, FS_MODES, n=1, cutoff=0.5)
            did = f"; did you mean {hint[0]!r}?" if hint else ""
            raise r.fail(
                item,
                key,
                f"unknown mode {mode!r} in {text!r} (expected {', '.join(FS_MODES)}{did})",
            )
        if not path.strip():
            raise r.fail(item, key, f"empty path in {text!r}")
        rules.append(FsRule(cast("Mode", mode), path.strip(), source))  # checked just above
    return tuple(rules)


def _domain(r: _Reader, node: yaml.Node, key: str) -> str:
    value = r.string(node, key).strip()
    if value == "*" or _IPV6.fullmatch(value):
        return value
    if not _DOMAIN.fullmatch(value) or (
        ":" in value and not 1 <= int(value.rsplit(":", 1)[1]) <= 65535
    ):
        raise r.fail(node, key, f"not a domain: {value!r} (expected host.name, *.host.name or '*')")
    return value


def _domains(r: _Reader, node: yaml.Node, key: str) -> tuple[str, ...]:
    if r.is_null(node):
        return ()
    if isinstance(node, yaml.ScalarNode) and node.value.strip() == "*":
        return ("*",)
    items = r.sequence(node, key)
    domains = [_domain(r, item, f"{key}[{i}]") for i, item in enumerate(items)]
    return ("*",) if "*" in domains else tuple(dict.fromkeys(domains))


def _network(r: _Reader, node: yaml.Node) -> NetworkConfig:
    if r.is_null(node):
        return NetworkConfig(shape="none")
    if isinstance(node, yaml.ScalarNode):
        value = r.string(node, "network", empty_ok=True).strip()
        if value in ("", "none"):
            return NetworkConfig(shape="none")
        if value == "*":
            return NetworkConfig(domains=("*",), shape="star")
        raise r.fail(
            node,
            "network",
            f"expected none, '*', a list of domains or a mapping, got {value!r} "
            f"(for one domain write [{value if value.isprintable() else repr(value)}])",
        )
    if isinstance(node, yaml.SequenceNode):
        domains = _domains(r, node, "network")
        shape = "star" if domains == ("*",) else ("list" if domains else "none")
        return NetworkConfig(domains=domains, shape=shape)
    keys = r.mapping(node, "network", NETWORK_KEYS)
    values: dict[str, Any] = {}
    if "domains" in keys:
        values["domains"] = _domains(r, keys["domains"], "network.domains")
    if "local_ports" in keys and not r.is_null(keys["local_ports"]):
        ports = [
            r.integer(item, f"network.local_ports[{i}]", low=1, high=65535)
            for i, item in enumerate(r.sequence(keys["local_ports"], "network.local_ports"))
        ]
        values["local_ports"] = tuple(dict.fromkeys(ports))
    for name, allowed in (("mode", NETWORK_MODES), ("agent_domains", AGENT_DOMAINS)):
        if name in keys and not r.is_null(keys[name]):
            value = r.string(keys[name], f"network.{name}")
            if value not in allowed:
                raise r.fail(
                    keys[name], f"network.{name}", f"{value!r} is not one of {', '.join(allowed)}"
                )
            values[name] = value
    if "log" in keys and not r.is_null(keys["log"]):
        values["log"] = r.boolean(keys["log"], "network.log")
    return NetworkConfig(shape="mapping", **values)


def _env(r: _Reader, node: yaml.Node) -> EnvConfig:
    if r.is_null(node):
        return EnvConfig(shape="list")
    if isinstance(node, yaml.ScalarNode):
        value = r.string(node, "env").strip()
        if value == "*":
            return EnvConfig(names=("*",), shape="star")
        raise r.fail(node, "env", f"expected '*' or a list of variable names, got {value!r}")
    names = []
    for index, item in enumerate(r.sequence(node, "env")):
        name = r.string(item, f"env[{index}]").strip()
        if name != "*" and not _ENV_NAME.fullmatch(name):
            raise r.fail(item, f"env[{index}]", f"not a variable name: {name!r}")
        names.append(name)
    if "*" in names:
        return EnvConfig(names=("*",), shape="star")
    return EnvConfig(names=tuple(dict.fromkeys(names)), shape="list")


def _resources(r: _Reader, node: yaml.Node) -> Resources:
    if r.is_null(node):
        return Resources()
    keys = r.mapping(node, "resources", RESOURCE_KEYS)
    values: dict[str, Any] = {}
    for name, parse in (
        ("cpu", parse_duration),
        ("memory", parse_size),
        ("cpu_per_process", parse_duration),
    ):
        if name in keys and not r.is_null(keys[name]):
            item = keys[name]
            raw: str | int = (
                r.integer(item, f"resources.{name}", low=1, high=2**62)
                if isinstance(item, yaml.ScalarNode) and item.tag == INT
                else r.string(item, f"resources.{name}")
            )
            try:
                parse(raw)
            except ValueError as exc:
                raise r.fail(item, f"resources.{name}", f"{exc} (got {raw!r})") from exc
            values[name] = raw
    for name in ("max_fds", "max_pids"):
        if name in keys and not r.is_null(keys[name]):
            values[name] = r.integer(keys[name], f"resources.{name}", low=1, high=2**31 - 1)
    return Resources(**values)


def _agent_settings(r: _Reader, node: yaml.Node) -> tuple[tuple[str, str], ...]:
    if r.is_null(node):
        return ()
    r.count(node, "agent_settings")
    if not isinstance(node, yaml.MappingNode):
        raise r.fail(node, "agent_settings", f"expected a mapping, got {r.describe(node)}")
    result: dict[str, str] = {}
    for key_node, value_node in node.value:
        agent = r.string(key_node, "agent_settings")
        where = f"agent_settings.{_key_text(agent)}"
        if agent in result:
            raise r.fail(key_node, where, "duplicate key")
        result[agent] = r.string(value_node, where)
    return tuple(result.items())


# --- emission ----------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Indents list items under their key (``fs:\\n  - rw:./``), as people write egg.yaml."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _base_value(base: BaseRef) -> Any:
    if not base.mapping:
        return base.name
    return {k: v for k, v in (("name", base.name), *base.masks.items()) if v is not None}


def _network_value(net: NetworkConfig) -> Any:
    if net.shape == "mapping" or net.needs_mapping:
        value: dict[str, Any] = {}
        if net.domains:
            value["domains"] = "*" if net.unrestricted else list(net.domains)
        if net.local_ports:
            value["local_ports"] = list(net.local_ports)
        for name in ("mode", "log", "agent_domains"):
            if getattr(net, name) is not None:
                value[name] = getattr(net, name)
        return value
    if net.unrestricted:
        return "*"
    return list(net.domains) if net.domains else "none"


def to_data(config: EggConfig, *, everything: bool = False) -> dict[str, Any]:
    """The config as plain data in egg.yaml shapes, keys in canonical order.

    Keys are emitted when they were present in the source or hold a non-default value (or all of
    them with ``everything``).
    """
    defaults = EggConfig()
    data: dict[str, Any] = {}
    for key in TOP_LEVEL_KEYS:
        value = getattr(config, key)
        if not (everything or key in config.present or value != getattr(defaults, key)):
            continue
        if key == "base":
            if value is not None:
                data[key] = _base_value(value)
        elif key == "fs":
            data[key] = [str(rule) for rule in value]
        elif key == "network":
            data[key] = _network_value(value)
        elif key == "env":
            data[key] = "*" if value.everything else list(value.names)
        elif key == "resources":
            data[key] = {
                name: getattr(value, name)
                for name in RESOURCE_KEYS
                if getattr(value, name) is not None or everything
            }
        elif key == "agent_settings":
            data[key] = dict(value)
        elif key == "tools":
            data[key] = list(value)
        else:
            data[key] = value
    return data


def dump_yaml(config: EggConfig) -> str:
    """egg.yaml text for ``config``: canonical key order, legacy shapes preserved."""
    data = to_data(config)
    if not data:
        return "{}\n"
    return str(
        yaml.dump(
            data,
            Dumper=_Dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            width=1000,
        )
    )


def to_json_data(config: EggConfig) -> dict[str, Any]:
    """JSON shape for ``egg config show --json``: egg.yaml keys, network always a mapping."""
    net = config.network
    return {
        "base": _base_value(config.base) if config.base is not None else None,
        "fs": [str(rule) for rule in config.fs],
        "network": {
            "domains": list(net.domains),
            "local_ports": list(net.local_ports),
            "mode": net.mode or "enforce",
            "log": net.log,
            "agent_domains": net.agent_domains or "merge",
        },
        "env": list(config.env.names),
        "resources": {name: getattr(config.resources, name) for name in RESOURCE_KEYS},
        "shell": config.shell,
        "dangerously_skip_permissions": config.dangerously_skip_permissions,
        "audit": config.audit,
        "trace": config.trace,
        "agent_settings": dict(config.agent_settings),
        "persistence_guards": config.persistence_guards,
        "clipboard": config.clipboard,
        "tools": list(config.tools),
    }


def dump_json(config: EggConfig) -> str:
    from egg_core.sanitize import json_text

    return json_text(to_json_data(config))
