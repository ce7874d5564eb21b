"""The plugin manager: discovery, one-by-one loading, failure reports, ordering, allow/deny."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from egg_core import registry
from egg_core.errors import PluginError
from egg_core.plugins import EntryPointRecord, get_plugin_manager
from egg_core.profiles import AgentProfile
from tests.helpers import write_dist

BUILTINS = {
    "claude",
    "codex",
    "gemini",
    "opencode",
    "cursor",
    "ollama",
    "shell",
    "linux-ns",
    "macos-seatbelt",
    "unsandboxed",
    "yaml-tools",
    "system-network",
    "session-history",
    "session-git-watch",
    "session-browser-open",
}


def _egg(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "egg_core.cli", *args], env=env, capture_output=True, text=True
    )


def test_every_builtin_plugin_loads(egg_cli):
    reports = {r["name"]: r for r in egg_cli.run("plugins", "--json").assert_ok().json()}
    assert set(reports) >= BUILTINS
    for name in BUILTINS:
        assert reports[name]["status"] == "loaded", reports[name]
        assert reports[name]["distribution"] == "egg-sandbox"
        assert reports[name]["builtin"] is True
        assert reports[name]["hooks"], name


def test_plugins_human_output_lists_each_plugin(egg_cli):
    out = egg_cli.run("plugins").assert_ok().stdout
    assert out.splitlines()[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "HOOKS"]
    for name in BUILTINS:
        assert f"\n{name} " in out


def test_broken_third_party_plugin_is_reported_and_egg_still_works(tmp_path, egg_home):
    site = write_dist(
        tmp_path / "site",
        "egg-broken",
        "1.2.3",
        {"broken": "egg_broken_mod"},
        {"egg_broken_mod": 'raise ImportError("libfrobnicate is not installed")\n'},
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = _egg("plugins", "--json", env=env)
    assert result.returncode == 0, result.stderr
    broken = {r["name"]: r for r in __import__("json").loads(result.stdout)}["broken"]
    assert broken["status"] == "error"
    assert broken["distribution"] == "egg-broken"
    assert broken["version"] == "1.2.3"
    assert "libfrobnicate is not installed" in broken["error"]
    assert "ImportError" in broken["error"]
    human = _egg("plugins", env=env)
    assert "broken: ImportError: libfrobnicate is not installed" in human.stdout
    version = _egg("--version", env=env)
    assert version.returncode == 0 and "egg " in version.stdout
    assert "Traceback" not in version.stderr + result.stderr


def test_plugin_failing_at_import_with_other_errors_is_reported(plugin_dir, egg_home):
    (plugin_dir / "raises_value.py").write_text("raise ValueError('bad config\\nsecond line')\n")
    (plugin_dir / "exits.py").write_text("import sys\nsys.exit(3)\n")
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[
            EntryPointRecord("raises", "raises_value", "third", "1"),
            EntryPointRecord("exits", "exits", "third", "1"),
        ],
    )
    reports = {r.name: r for r in pm.reports()}
    assert reports["raises"].error == "ValueError: bad config"
    assert reports["exits"].status == "error"


def test_plugin_implementing_unknown_hook_fails_alone(plugin_dir, egg_home):
    (plugin_dir / "typo_plugin.py").write_text(
        textwrap.dedent(
            """
            from egg_core.hookspecs import hookimpl

            @hookimpl
            def egg_register_agent(register):  # typo: not a hook
                pass
            """
        )
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[
            EntryPointRecord("typo", "typo_plugin", "third", "1"),
            EntryPointRecord("shell", "egg_plugins.agents.shell", "egg-sandbox", "0"),
        ],
    )
    reports = {r.name: r for r in pm.reports()}
    assert reports["typo"].status == "error"
    assert "egg_register_agent" in reports["typo"].error
    assert reports["shell"].status == "loaded"
    assert pm.get_plugin("typo") is None


def test_a_registration_hook_wrapper_is_refused_not_ignored(plugin_dir, egg_home):
    """Registration hooks call each implementation directly: a wrapper would never run, so it
    is a load error naming the plugin and the hook."""
    (plugin_dir / "wrapping.py").write_text(
        textwrap.dedent(
            """
            from egg_core.hookspecs import hookimpl

            @hookimpl(wrapper=True)
            def egg_register_agents(register):
                result = yield
                return result
            """
        )
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[EntryPointRecord("wrapping", "wrapping", "third", "1")],
    )

    with pytest.raises(PluginError) as raised:
        registry.agents(pm)
    assert raised.value.message == (
        "plugin 'wrapping' implements egg_register_agents as a hook wrapper; registration hooks "
        "cannot be wrapped (register directly instead)"
    )


def test_unmarked_functions_are_not_hooks(plugin_dir, egg_home):
    (plugin_dir / "unmarked.py").write_text(
        "def egg_register_agents(register):\n    raise SystemExit\n"
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[EntryPointRecord("unmarked", "unmarked", "third", "1")],
    )
    assert registry.agents(pm) == {}
    assert pm.reports()[0].hooks == ()


def _history_plugin(name: str, marker: str) -> str:
    return textwrap.dedent(
        f"""
        from egg_core.hookspecs import hookimpl

        @hookimpl{marker}
        def egg_history_restore(agent, ctx, captured):
            from pathlib import Path
            from egg_core.history import Transcript
            return Transcript(agent_session_id={name!r}, root=Path("/r"), file="t.jsonl")
        """
    )


def test_third_party_overrides_trylast_builtin_default_in_firstresult_hook(plugin_dir, egg_home):
    (plugin_dir / "builtin_default.py").write_text(_history_plugin("builtin", "(trylast=True)"))
    (plugin_dir / "third_party.py").write_text(_history_plugin("third-party", ""))
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[
            # listed built-in first: the manager must still register third parties first
            EntryPointRecord("default", "builtin_default", "egg-sandbox", "0"),
            EntryPointRecord("override", "third_party", "someone-else", "1"),
        ],
    )
    names = [r.name for r in pm.reports()]
    assert names == ["override", "default"]
    result = pm.hook.egg_history_restore(agent=None, ctx=None, captured=None)
    assert result.agent_session_id == "third-party"


def test_builtin_registered_last_wins_without_trylast(plugin_dir, egg_home):
    """Why built-in defaults must be trylast: registered last, pluggy calls them first."""
    (plugin_dir / "builtin_eager.py").write_text(_history_plugin("builtin", ""))
    (plugin_dir / "third_party2.py").write_text(_history_plugin("third-party", ""))
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[
            EntryPointRecord("eager", "builtin_eager", "egg-sandbox", "0"),
            EntryPointRecord("override", "third_party2", "someone-else", "1"),
        ],
    )
    assert (
        pm.hook.egg_history_restore(agent=None, ctx=None, captured=None).agent_session_id
        == "builtin"
    )


def _agent_plugin(agent: str) -> str:
    return textwrap.dedent(
        f"""
        from egg_core.hookspecs import hookimpl
        from egg_core.profiles import AgentProfile

        @hookimpl
        def egg_register_agents(register):
            register(AgentProfile(name={agent!r}, description="test agent", binary="x"))
        """
    )


def test_duplicate_agent_names_are_an_error_naming_both_plugins(plugin_dir, egg_home):
    (plugin_dir / "dup_one.py").write_text(_agent_plugin("twin"))
    (plugin_dir / "dup_two.py").write_text(_agent_plugin("twin"))
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[
            EntryPointRecord("first-plugin", "dup_one", "a", "1"),
            EntryPointRecord("second-plugin", "dup_two", "b", "1"),
        ],
    )
    with pytest.raises(PluginError) as err:
        registry.agents(pm)
    assert "'twin'" in str(err.value)
    assert "'first-plugin'" in str(err.value) and "'second-plugin'" in str(err.value)


def test_registering_the_wrong_type_names_the_plugin(plugin_dir, egg_home):
    (plugin_dir / "wrong_type.py").write_text(
        "from egg_core.hookspecs import hookimpl\n"
        "@hookimpl\n"
        "def egg_register_agents(register):\n"
        "    register({'name': 'dict-agent'})\n"
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[EntryPointRecord("wrong", "wrong_type", "w", "1")],
    )
    with pytest.raises(PluginError, match="plugin 'wrong' registered a dict as agent"):
        registry.agents(pm)


def test_builtin_agents_are_registered_by_their_own_plugins(egg_plugin_manager):
    agents = registry.agents(egg_plugin_manager)
    for name in ("claude", "codex", "gemini", "opencode", "cursor", "ollama", "shell"):
        assert agents[name].plugin == name
        assert isinstance(agents[name].obj, AgentProfile)
    platforms = registry.platforms(egg_plugin_manager)
    assert {"linux-ns", "macos-seatbelt", "unsandboxed"} <= set(platforms)


@pytest.mark.parametrize(
    ("env", "loaded", "disabled"),
    [
        ({"EGG_LOAD_PLUGINS": "shell,linux-ns"}, {"shell", "linux-ns"}, {"claude", "codex"}),
        ({"EGG_LOAD_PLUGINS": "shell, LINUX_NS "}, {"shell", "linux-ns"}, {"claude"}),
        ({"EGG_LOAD_PLUGINS": ""}, set(), BUILTINS),
        ({"EGG_DISABLE_PLUGINS": "claude,codex"}, {"shell", "gemini"}, {"claude", "codex"}),
        ({"EGG_DISABLE_PLUGINS": "egg-sandbox"}, set(), BUILTINS),
        (
            {"EGG_LOAD_PLUGINS": "shell,claude", "EGG_DISABLE_PLUGINS": "claude"},
            {"shell"},
            {"claude", "codex"},
        ),
    ],
)
def test_allow_and_deny_variables(egg_home, env, loaded, disabled):
    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home), **env})
    status = {r.name: r.status for r in pm.reports()}
    for name in loaded:
        assert status[name] == "loaded", (name, status)
        assert pm.get_plugin(name) is not None
    for name in disabled:
        assert status[name] == "disabled", (name, status)
        assert pm.get_plugin(name) is None


def test_disabled_plugins_are_shown_by_egg_plugins(egg_cli):
    result = egg_cli.run("plugins", "--json", env={"EGG_DISABLE_PLUGINS": "cursor"}).assert_ok()
    cursor = next(r for r in result.json() if r["name"] == "cursor")
    assert cursor["status"] == "disabled"
    assert cursor["hooks"] == []


def test_nothing_loads_at_import_time():
    code = (
        "import sys, egg_core.plugins, egg_core.hookspecs, egg_core.cli;"
        "print(any(m.startswith('egg_plugins') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_each_call_builds_a_fresh_manager(egg_home):
    env = {"EGG_HOME": str(egg_home)}
    first, second = get_plugin_manager(environ=env), get_plugin_manager(environ=env)
    assert first is not second
    assert [r.name for r in first.reports()] == [r.name for r in second.reports()]


def test_entry_point_cache_is_used_and_invalidated(tmp_path, egg_home):
    env = {**os.environ, "EGG_HOME": str(egg_home)}
    assert _egg("plugins", "--json", env=env).returncode == 0
    cache = egg_home / "cache" / "entry-points.json"
    assert cache.exists()
    # A new distribution on sys.path changes the key: the new plugin is found.
    site = write_dist(
        tmp_path / "site2", "egg-late", "0.1", {"late": "egg_late_mod"}, {"egg_late_mod": ""}
    )
    result = _egg("plugins", "--json", env={**env, "PYTHONPATH": str(site)})
    assert "late" in {r["name"] for r in __import__("json").loads(result.stdout)}


def test_corrupt_entry_point_cache_is_ignored(egg_home, egg_cli):
    (egg_home / "cache").mkdir()
    (egg_home / "cache" / "entry-points.json").write_text("{not json")
    names = {r["name"] for r in egg_cli.run("plugins", "--json").assert_ok().json()}
    assert names >= BUILTINS


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_the_core_names_no_builtin_plugin(egg_plugin_manager):
    """The core grants nothing by name: it never imports the built-ins' package (anywhere in a
    module, not only at its first mention), no string of its code names that package, and no
    comparison picks out a built-in platform or agent by its name (a platform says what it
    needs through its attributes, as a third party's would)."""
    builtin_names = set(registry.platforms(egg_plugin_manager)) | set(
        registry.agents(egg_plugin_manager)
    )
    core = Path(__file__).resolve().parents[1] / "egg_core"
    offenders = []
    for path in sorted(core.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        where = str(path.relative_to(core))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value] if id(node) not in docstrings else []
            else:
                names = []
            if any("egg_plugins" in name for name in names):
                offenders.append(f"{where}:{node.lineno} names egg_plugins")
            if isinstance(node, ast.Compare):
                compared = [node.left, *node.comparators]
                for operand in compared:
                    values = (
                        operand.elts
                        if isinstance(operand, (ast.Tuple, ast.List, ast.Set))
                        else [operand]
                    )
                    for value in values:
                        if isinstance(value, ast.Constant) and value.value in builtin_names:
                            offenders.append(f"{where}:{node.lineno} compares with {value.value!r}")
    assert offenders == []


def test_tools_are_registered_with_the_config(plugin_dir, egg_home):
    (plugin_dir / "tool_plugin.py").write_text(
        textwrap.dedent(
            """
            from egg_core.hookspecs import hookimpl
            from egg_core.tools.model import Tool

            @hookimpl
            def egg_register_tools(register, config):
                if config.audit:
                    register(Tool(name="deploy", description="ship it", run="make deploy"))
            """
        )
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[EntryPointRecord("tools", "tool_plugin", "t", "1")],
    )
    from egg_core.config.model import EggConfig
    from egg_core.tools.model import collect

    assert "deploy" not in collect(pm, EggConfig(), egg_home).tools
    found = collect(pm, EggConfig(audit=True), egg_home).tools
    assert found["deploy"].source == "plugin tools" and found["deploy"].run == "make deploy"


def test_history_capture_is_firstresult(plugin_dir, egg_home):
    """egg_history_capture: the first plugin that knows the agent answers; others decline."""
    (plugin_dir / "capture_plugin.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            from egg_core.hookspecs import hookimpl
            from egg_core.history import Transcript

            @hookimpl
            def egg_history_capture(agent, ctx):
                if agent.name != "mine":
                    return None
                return Transcript(agent_session_id="s1", root=ctx.home, file="t.jsonl")
            """
        )
    )
    pm = get_plugin_manager(
        environ={"EGG_HOME": str(egg_home)},
        entry_points=[EntryPointRecord("capture", "capture_plugin", "c", "1")],
    )
    from egg_core.history import HistoryContext

    ctx = HistoryContext(cwd=Path("/w"), home=Path("/h"), session_dir=Path("/s"), started_after=0)
    mine = AgentProfile(name="mine", description="d")
    other = AgentProfile(name="other", description="d")
    assert pm.hook.egg_history_capture(agent=mine, ctx=ctx).agent_session_id == "s1"
    assert pm.hook.egg_history_capture(agent=other, ctx=ctx) is None


def test_egg_register_platforms_collects_platform_objects(egg_plugin_manager):
    from egg_core.sandbox import Platform

    found = registry.platforms(egg_plugin_manager)
    assert all(isinstance(r.obj, Platform) for r in found.values())
    assert found["linux-ns"].plugin == "linux-ns"
