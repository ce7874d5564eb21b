"""Meta-tests on the extension API: every hook documented, typed, and exercised by a test."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

from egg_core import hookspecs
from tests.test_structure import imports_of

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


#: the surfaces a plugin may import egg from: the API and its sub-APIs, and for a plugin's own
#: tests the testing helpers
PLUGIN_SURFACES = ("egg_core.api", "egg_core.testing")
ROOT = Path(__file__).resolve().parent.parent


def _egg_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of egg's in ``path`` (see :func:`imports_of`)."""
    return [(line, name) for line, name in imports_of(path) if name.split(".")[0] == "egg_core"]


def test_the_builtin_and_example_plugins_import_only_the_api() -> None:
    """The built-ins are ordinary plugins: what they need of egg comes through egg_core.api (and
    its sub-APIs), as a third party's must, never from an internal module."""
    files = [*(ROOT / "plugins").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(files)
        if "build" not in path.relative_to(ROOT).parts
        for line, name in _egg_imports(path)
        if not any(name == s or name.startswith(s + ".") for s in PLUGIN_SURFACES)
    ]
    assert offenders == []
    assert _egg_imports(ROOT / "plugins/platforms/linux_ns.py")  # (the scan finds imports)


def test_the_plugin_api_exports_what_it_lists() -> None:
    """Every name egg_core.api and its sub-APIs list exists, and egg_core.api's lazy table and
    the imports type checkers read name the same things from the same modules."""
    import importlib

    from egg_core import api

    for module in (api, *(importlib.import_module(f"egg_core.api.{n}") for n in SUBAPIS)):
        assert sorted(module.__all__) == sorted(set(module.__all__)), module.__name__
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
    assert set(api.__all__) == set(api._EXPORTS)
    checked: dict[str, str] = {}
    for node in ast.walk(ast.parse((ROOT / "egg_core/api/__init__.py").read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("egg_core"):
            for alias in node.names:
                same = (alias.asname or alias.name) == alias.name
                checked[alias.asname or alias.name] = node.module + (
                    "" if same else f":{alias.name}"
                )
    assert checked == api._EXPORTS


#: egg_core.api's sub-APIs
SUBAPIS = ("config", "fast", "platform", "session")


def test_the_fast_api_imports_the_standard_library_alone() -> None:
    """A platform's cached-launch runner imports egg_core.api.fast before the sandbox starts:
    loading it (and the API's package) must not load attrs, pluggy, PyYAML or the policy."""
    import subprocess
    import sys

    code = "import sys, egg_core.api.fast; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-I", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.split()
    )
    heavy = sorted(m for m in loaded if m.split(".")[0] in {"attr", "attrs", "pluggy", "yaml"})
    assert not heavy and "egg_core.policy" not in loaded, heavy
