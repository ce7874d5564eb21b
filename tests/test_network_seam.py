"""The loopback network seam belongs to the test harness: a plugin (``test-network``,
egg_core.testing.network) supplies it through ``egg_network_transport``; no production module
reads ``EGG_TEST_NETWORK``, and without the plugin the variable does nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from egg_core.netproxy import NetworkTransport
from egg_core.plugins import get_plugin_manager

ROOT = Path(__file__).resolve().parent.parent


def test_the_plugin_supplies_the_seam_only_when_the_variable_is_set(monkeypatch, egg_home):
    environ = {"EGG_HOME": str(egg_home)}
    monkeypatch.delenv("EGG_TEST_NETWORK", raising=False)
    assert get_plugin_manager(environ=environ).hook.egg_network_transport().system
    monkeypatch.setenv("EGG_TEST_NETWORK", "api.example.com=93.184.216.34@127.0.0.1:9")
    found = get_plugin_manager(environ=environ).hook.egg_network_transport()
    assert isinstance(found, NetworkTransport)
    assert asyncio.run(found.resolver("API.example.com", 443)) == ["93.184.216.34"]
    disabled = get_plugin_manager(environ={**environ, "EGG_DISABLE_PLUGINS": "test-network"})
    assert disabled.hook.egg_network_transport().system  # the built-in default answers


def test_targets_that_are_not_loopback_are_ignored():
    from egg_core.testing.network import transport

    seam = transport("a.example=93.184.216.34@10.0.0.1:80,b.example=93.184.216.35@127.0.0.1:81")
    assert asyncio.run(seam.resolver("b.example", 81)) == ["93.184.216.35"]
    try:
        asyncio.run(seam.resolver("a.example", 80))
    except OSError as exc:
        assert "does not know a.example" in str(exc)
    else:
        raise AssertionError("a non-loopback target was accepted")


def test_no_production_module_reads_the_variable():
    production = [*(ROOT / "egg_core").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]
    readers = [
        str(p.relative_to(ROOT))
        for p in production
        if "EGG_TEST_NETWORK" in p.read_text() and "testing" not in p.parts
    ]
    assert readers == []


def test_the_seam_can_shorten_the_proxys_head_deadline(monkeypatch, egg_home):
    from egg_core.netproxy import HEAD_TIMEOUT, DecisionLog, FilteringProxy
    from egg_core.netrules import NetworkRules

    environ = {"EGG_HOME": str(egg_home)}
    monkeypatch.setenv("EGG_TEST_NETWORK", "api.example.com=93.184.216.34@127.0.0.1:9")
    monkeypatch.delenv("EGG_TEST_PROXY_HEAD_TIMEOUT", raising=False)
    assert get_plugin_manager(environ=environ).hook.egg_network_transport().head_timeout is None
    assert FilteringProxy(NetworkRules(), DecisionLog(None)).head_timeout == HEAD_TIMEOUT
    monkeypatch.setenv("EGG_TEST_PROXY_HEAD_TIMEOUT", "1.5")
    found = get_plugin_manager(environ=environ).hook.egg_network_transport()
    assert found.head_timeout == 1.5


def test_without_any_transport_a_filtered_launch_is_refused_in_one_line(cache_workspace):
    """The system's transport is the built-in plugin's answer, not the core's fallback: with it
    (and every other answer) disabled, a launch that needs the proxy is refused, saying why."""
    from tests.test_exec_cache import egg_exec

    work, env = cache_workspace
    (work / "egg.yaml").write_text("network:\n  domains: [example.com]\n")
    env = {**env, "EGG_DISABLE_PLUGINS": "system-network,test-network"}

    result = egg_exec(work, env, "sh", "-c", "touch started")

    assert result.returncode != 0 and not (work / "started").exists()
    lines = [line for line in result.stderr.splitlines() if "exec cache" not in line]
    assert len(lines) == 1 and "system-network" in lines[0], result.stderr


def test_only_the_systems_own_objects_are_the_system_transport():
    """Whether a launch's proxy may be made again by a cached launch is what its transport's
    objects are, not a flag a plugin sets: anything else is never cached."""
    import attrs

    from egg_core.netproxy import system_transport

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    assert system_transport().system
    assert not attrs.evolve(system_transport(), head_timeout=1.0).system
    assert not attrs.evolve(system_transport(), resolver=resolve).system
