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


def host_which(name: str, search_path: str | None = None) -> str | None:
    """Find a program egg itself runs on the host, on absolute PATH entries only.

    An empty or relative entry means "the current directory", which a sandboxed agent can write:
    a planted ``./bwrap`` must never run as the user on the host.
    """
    import shutil

    entries = search_path if search_path is not None else os.environ.get("PATH", os.defpath)
    absolute = os.pathsep.join(p for p in entries.split(os.pathsep) if os.path.isabs(p))
    return shutil.which(name, path=absolute) if absolute else None
