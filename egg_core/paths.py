"""Where egg keeps its own files, derived from the environment (never from import-time state)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def user_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$HOME``, falling back to the password database when it is unset."""
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    if home:
        return Path(home)
    return Path(os.path.expanduser("~"))


def egg_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$EGG_HOME``, default ``~/.egg``: bases, tools, sessions and caches live here."""
    env = os.environ if environ is None else environ
    configured = env.get("EGG_HOME")
    if configured:
        return Path(os.path.expanduser(configured)).absolute()
    return user_home(env) / ".egg"


def expand_user(path: str, home: Path) -> str:
    """Expand a leading ``~`` against ``home`` (not the process's own idea of home)."""
    if path == "~":
        return str(home)
    if path.startswith("~/"):
        return str(home / path[2:])
    return path
