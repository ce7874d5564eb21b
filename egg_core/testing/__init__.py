"""Test harness for egg plugins: fixtures and contract suites (pytest plugin ``egg``).

A plugin author subclasses a contract with one line naming their plugin's entry point::

    from egg_core.testing import AgentProfileContract

    class TestMyAgent(AgentProfileContract):
        plugin = "my-agent"

The fixtures (``egg_home``, ``egg_user_home``, ``egg_plugin_manager``, ``egg_cli``) are available
in any test suite once egg is installed: the ``pytest11`` entry point ``egg`` registers them.

The contract classes are imported lazily: pytest must register the contract module for assertion
rewriting (in :mod:`egg_core.testing.plugin`) before anything imports it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentProfileContract",
    "CliResult",
    "CliRunner",
    "HistoryContract",
    "HistorySample",
    "PlatformContract",
]


def __getattr__(name: str) -> Any:
    if name in ("AgentProfileContract", "HistoryContract", "HistorySample", "PlatformContract"):
        from egg_core.testing import contracts

        return getattr(contracts, name)
    if name in ("CliResult", "CliRunner"):
        from egg_core.testing import runner

        return getattr(runner, name)
    raise AttributeError(name)
