"""Meta-tests on the extension API: every hook documented, typed, and exercised by a test."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

from egg_core import hookspecs

HOOKS = [
    (name, fn) for name, fn in vars(hookspecs).items() if name.startswith("egg_") and callable(fn)
]


def test_there_are_hooks():
    assert {n for n, _ in HOOKS} >= {
        "egg_register_agents",
        "egg_register_platforms",
        "egg_register_tools",
        "egg_history_capture",
        "egg_history_restore",
        "egg_history_render",
        "egg_history_turns",
        "egg_session_started",
        "egg_session_ended",
        "egg_cli_commands",
    }


@pytest.mark.parametrize(("name", "fn"), HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_is_documented(name, fn):
    doc = inspect.getdoc(fn) or ""
    assert len(doc.splitlines()[0]) > 10, f"{name}: no summary line"
    for param in inspect.signature(fn).parameters:
        assert f":param {param}:" in doc, f"{name}: parameter {param!r} undocumented"
    assert ":return:" in doc, f"{name}: return value undocumented"
    opts = fn.egg_spec  # set by the HookspecMarker
    if opts.get("firstresult"):
        assert "firstresult" in doc and "None to decline" in doc, name


@pytest.mark.parametrize(("name", "fn"), HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_says_the_version_it_appeared_in(name, fn):
    """Hooks carry their history: a plugin author reads which egg a hook needs. The version is
    one egg has had (not above this one), so a new hook must say the version it ships in."""
    import re

    from egg_core import __version__

    def parts(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in version.split("."))

    found = re.findall(r"^\s*\.\. versionadded:: (\d+\.\d+\.\d+)\s*$", fn.__doc__, re.M)
    assert len(found) == 1, f"{name}: its docstring needs one '.. versionadded:: X.Y.Z' line"
    assert parts(found[0]) <= parts(__version__), f"{name}: {found[0]} is after {__version__}"


@pytest.mark.parametrize(("name", "fn"), HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_is_typed(name, fn):
    annotations = fn.__annotations__
    for param in inspect.signature(fn).parameters:
        assert param in annotations, f"{name}: {param} has no type"
    assert "return" in annotations, f"{name}: no return type"


@functools.cache
def hook_tests(tests: Path) -> dict[str, list[ast.FunctionDef]]:
    """Every ``test_hook_<...>`` function under ``tests``, by name."""
    found: dict[str, list[ast.FunctionDef]] = {}
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_hook_"):
                found.setdefault(node.name, []).append(node)
    return found


def calls_through_the_plugin_manager(function: ast.FunctionDef, hook: str) -> bool:
    """Whether ``function`` calls ``<anything>.hook.<hook>(...)``: a call, not a mention of the
    name in a string, a comment or a plugin's source."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == hook
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "hook"
        for node in ast.walk(function)
    )


@pytest.mark.parametrize(("name", "fn"), HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_is_exercised_by_a_test(name, fn):
    """datasette's rule: a ``test_hook_<name>`` that calls the hook through the plugin manager.
    Any mention of the name anywhere (a comment, a plugin written as a string) once passed, so
    taking away the one test that called a hook left this green."""
    functions = hook_tests(Path(__file__).parent).get(f"test_hook_{name}", [])
    assert functions, f"no test_hook_{name}"
    assert any(calls_through_the_plugin_manager(f, name) for f in functions), (
        f"test_hook_{name} does not call pm.hook.{name}(...)"
    )


def test_the_plugin_api_exports_what_it_lists() -> None:
    """egg_core.api is the one import surface for plugin authors: every name it lists exists,
    and the example third-party plugin imports only from it."""
    from pathlib import Path

    from egg_core import api

    assert sorted(api.__all__) == sorted(set(api.__all__))
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    example = Path(__file__).parent.parent / "examples/egg-agent-example/egg_agent_example"
    imports = [
        line
        for line in (example / "__init__.py").read_text().splitlines()
        if line.startswith(("from egg_core", "import egg_core"))
    ]
    assert imports and all(line.startswith("from egg_core.api import") for line in imports)
