"""Meta-tests on the extension API: every hook documented, typed, and exercised by a test."""

from __future__ import annotations

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
def test_hook_is_typed(name, fn):
    annotations = fn.__annotations__
    for param in inspect.signature(fn).parameters:
        assert param in annotations, f"{name}: {param} has no type"
    assert "return" in annotations, f"{name}: no return type"


@pytest.mark.parametrize(("name", "fn"), HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_is_exercised_by_a_test(name, fn):
    tests = Path(__file__).parent
    sources = "".join(
        p.read_text() for p in tests.rglob("test_*.py") if p.name != Path(__file__).name
    )
    assert name in sources, f"no test mentions {name}"


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
