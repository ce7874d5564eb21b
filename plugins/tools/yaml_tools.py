"""The built-in tool loader: ``$EGG_HOME/tools/*.yaml``, one tool a file (plugin ``yaml-tools``).

::

    name: gh-pr-create                 # what the agent runs inside the sandbox
    description: open a pull request with the user's token
    run: gh pr create --title "$1" --body "$2"
    env: {GH_TOKEN: ghp_...}           # for the command, never for the sandbox
    timeout: 2m                        # a duration; default 60s; past it: killed, exit 124
    max_concurrent: 1                  # calls beyond it wait for a slot (within their timeout)
    params:                            # in order: "$1", "$2"... (listings and MCP schemas)
      - {name: title, description: the PR title, required: true}
      - {name: body}

Validated as strictly as egg.yaml (file, line and key in every error, a did-you-mean for a
typo). A broken file is reported (``egg tools`` lists it) and skipped: the other tools load, and
only a launch that enables the broken one stops. The file's name, less ``.yaml``, must be the
tool's name, so that a broken file still says which tool it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import yaml

from egg_core.api import DEFAULT_TOOL_TIMEOUT as DEFAULT_TIMEOUT
from egg_core.api import TOOL_NAME as NAME
from egg_core.api import ConfigError, RegisterTool, Tool, ToolParam, hookimpl
from egg_core.api.config import Reader, compose, decode, parse_duration

TOOL_KEYS = ("name", "description", "run", "env", "timeout", "max_concurrent", "params")
PARAM_KEYS = ("name", "description", "required")
MAX_TOOL_BYTES = 64 * 1024
#: at most this many tool files are read (a directory of a million files is not a tool list)
MAX_TOOLS = 500


def tools_dir(egg_home: Path) -> Path:
    return egg_home / "tools"


def load_tool_file(path: Path) -> Tool:
    """One tool file, validated; a ConfigError naming file, line and key otherwise."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TOOL_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror}") from exc
    if len(data) > MAX_TOOL_BYTES:
        raise ConfigError(f"{source}: larger than {MAX_TOOL_BYTES} bytes")
    node = compose(decode(data, source), source)
    if node is None:
        raise ConfigError(f"{source}: empty (a tool needs at least name and run)")
    r = Reader(source)
    keys = r.mapping(node, "", TOOL_KEYS)
    for needed in ("name", "run"):
        if needed not in keys:
            raise r.fail(node, needed, "missing (a tool needs a name and a run command)")
    name = r.string(keys["name"], "name")
    if not NAME.fullmatch(name):
        raise r.fail(
            keys["name"], "name", f"bad tool name {name!r} (lowercase letters, digits, . _ -)"
        )
    if name != path.stem:
        raise r.fail(keys["name"], "name", f"{name!r} is not the file's name ({path.stem!r})")
    run = r.string(keys["run"], "run")
    env = {}
    if "env" in keys and not r.is_null(keys["env"]):
        pairs = keys["env"]
        if not isinstance(pairs, yaml.MappingNode):
            raise r.fail(
                pairs, "env", f"expected a mapping of NAME: value, got {r.describe(pairs)}"
            )
        for key_node, value_node in pairs.value:
            variable = r.string(key_node, "env")
            if not variable.replace("_", "a").isalnum() or variable[0].isdigit():
                raise r.fail(key_node, f"env.{variable}", "not a variable name")
            env[variable] = r.string(value_node, f"env.{variable}", empty_ok=True)
    timeout = DEFAULT_TIMEOUT
    if "timeout" in keys:
        text = r.string(keys["timeout"], "timeout")
        try:
            timeout = parse_duration(text)
        except ValueError as exc:
            raise r.fail(keys["timeout"], "timeout", str(exc)) from exc
    concurrent = 1
    if "max_concurrent" in keys:
        concurrent = r.integer(keys["max_concurrent"], "max_concurrent", low=1, high=64)
    params = []
    if "params" in keys and not r.is_null(keys["params"]):
        for index, item in enumerate(r.sequence(keys["params"], "params")):
            where = f"params[{index}]"
            fields = r.mapping(item, where, PARAM_KEYS)
            if "name" not in fields:
                raise r.fail(item, f"{where}.name", "missing")
            params.append(
                ToolParam(
                    name=r.string(fields["name"], f"{where}.name"),
                    description=(
                        r.string(fields["description"], f"{where}.description", empty_ok=True)
                        if "description" in fields
                        else ""
                    ),
                    required=(
                        r.boolean(fields["required"], f"{where}.required")
                        if "required" in fields
                        else False
                    ),
                )
            )
    description = (
        r.string(keys["description"], "description", empty_ok=True) if "description" in keys else ""
    )
    return Tool(
        name=name,
        description=description,
        run=run,
        env=env,
        timeout=timeout,
        max_concurrent=concurrent,
        params=params,
        source=source,
    )


def tool_files(egg_home: Path) -> list[Path]:
    """The tool files, sorted (hidden and non-.yaml files are not tools)."""
    try:
        names = sorted(os.listdir(tools_dir(egg_home)))
    except OSError:
        return []
    return [
        tools_dir(egg_home) / n for n in names if n.endswith(".yaml") and not n.startswith(".")
    ][:MAX_TOOLS]


@hookimpl
def egg_register_tools(
    register: RegisterTool, egg_home: Path, report: Callable[[str, str], None]
) -> None:
    for path in tool_files(egg_home):
        try:
            register(load_tool_file(path))
        except ConfigError as exc:
            report(str(path), exc.message)
