"""Helpers for policy tests: profiles straight from the built-in plugin modules."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from egg_core.config.model import EggConfig, default_config, merge_configs
from egg_core.config.parsing import load_config_string
from egg_core.policy import EffectivePolicy
from egg_core.profiles import AgentProfile
from egg_core.resolution import resolve_policy

HOME = Path("/home/dev")
CWD = Path("/home/dev/proj")


def profile(name: str) -> AgentProfile:
    return importlib.import_module(f"egg_plugins.agents.{name}").PROFILE


def config(text: str = "", *, on_default: bool = True) -> EggConfig:
    loaded = load_config_string(text, "egg.yaml")
    return merge_configs(default_config(), loaded, HOME) if on_default else loaded


def resolve(
    agent: str = "shell", text: str = "", environ: dict[str, str] | None = None, **kw: object
) -> EffectivePolicy:
    return resolve_policy(
        config(text), profile(agent), home=HOME, cwd=CWD, environ=environ or {}, **kw
    )


@pytest.fixture
def holes():
    def _holes(policy: EffectivePolicy, which: str = "drilled") -> set[tuple[str, str]]:
        return {(h.kind, h.value) for h in getattr(policy, which)}

    return _holes
