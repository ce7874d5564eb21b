"""The environment a sandboxed process gets, and the ssh-agent sockets a platform must mask.

Rules, in order:
- only the names the policy allows (the egg.yaml allowlist or ``*``, HOME/PATH/TERM/LANG, and the
  agent's key variables) pass from the host;
- a parent agent's own session variables (``CLAUDECODE``, ``CLAUDE_CODE_ENTRYPOINT``, ...) never
  pass: a nested agent would think it runs inside its parent's session;
- other ``CLAUDE_CODE_*`` variables pass only when egg.yaml or the agent's profile names them
  exactly (``env: '*'`` is not enough);
- ``SSH_AUTH_SOCK`` is dropped when ``~/.ssh`` is denied, unless egg.yaml lists it by name (a
  deliberate opt-in to agent-backed ssh without the key files); and since an agent could find the
  socket without the variable, its live paths are masked too;
- the agent's set-env defaults fill in what the host did not set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from egg_core import observe

if TYPE_CHECKING:
    from egg_core.policy import EffectivePolicy

ESSENTIAL_VARIABLES = ("HOME", "PATH", "TERM", "LANG")
#: variables an agent sets for its own children; they must never reach a nested agent
SESSION_MARKERS = frozenset(
    {
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SSE_PORT",
        "CLAUDE_CODE_CHILD_SESSION",
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_PROJECT_DIR",
        "CLAUDE_ENV_FILE",
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "CODEX_THREAD_ID",
        "GEMINI_CLI",
        "OPENCODE_CLIENT",
        "CURSOR_AGENT",
        "CURSOR_INVOKED_AS",
        "CURSOR_TRACE_ID",
    }
)
#: passed only when named exactly (never through ``*``)
GUARDED_PREFIXES = ("CLAUDE_CODE_",)
SSH_AUTH_SOCK = "SSH_AUTH_SOCK"


def is_session_marker(name: str) -> bool:
    return name in SESSION_MARKERS


def build_env(policy: EffectivePolicy, environ: Mapping[str, str]) -> dict[str, str]:
    """The sandboxed process's environment: filtered host variables plus the agent's defaults."""
    explicit = set(policy.env_explicit)
    candidates = list(environ) if policy.env_all else [n for n in policy.env_names if n in environ]
    env: dict[str, str] = {}
    for name in candidates:
        if name in SESSION_MARKERS:
            continue
        if name.startswith(GUARDED_PREFIXES) and name not in explicit:
            continue
        if name == SSH_AUTH_SOCK and policy.ssh_denied and name not in policy.config_env_names:
            continue
        env[name] = environ[name]
    for default in policy.set_env:
        env.setdefault(default.name, environ.get(default.name, default.value))
    return env


def ssh_agent_socket_paths(environ: Mapping[str, str], home: Path) -> list[str]:
    """Live ssh-agent endpoints on this host: the one in SSH_AUTH_SOCK and the usual places.

    Only paths that exist are returned (a platform masks each one); the list is sorted so that
    the same host state always yields the same sandbox.
    """
    found: set[str] = set()
    sock = environ.get(SSH_AUTH_SOCK)
    if sock:
        found.add(os.path.abspath(sock))
    for pattern in ssh_agent_socket_patterns(environ, home):
        found.update(observe.glob(pattern))
    return sorted(p for p in found if observe.lexists(p))


def ssh_agent_socket_patterns(environ: Mapping[str, str], home: Path) -> list[str]:
    """Where ssh agents usually put their socket (glob patterns)."""
    runtime = environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return [
        "/tmp/ssh-*/agent.*",
        f"{runtime}/ssh-agent*",
        f"{runtime}/openssh_agent",
        f"{runtime}/keyring/ssh",
        f"{runtime}/gcr/ssh",
        f"{runtime}/gnupg/S.gpg-agent.ssh",
        f"{home}/.ssh/agent*",
    ]
