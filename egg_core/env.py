"""The environment a sandboxed process gets.

Rules, in order:
- only the names the policy allows (the egg.yaml allowlist or ``*`` — the built-in default lists
  HOME, PATH, TERM, COLORTERM, USER, TZ and the locale's LANG, LANGUAGE and LC_* names
  (:data:`egg_core.config.model.DEFAULT_ENV`), and a config with no env base lists exactly its own —
  and the agent's key variables) pass from the host;
- a parent agent's own session variables (``CLAUDECODE``, ``CLAUDE_CODE_ENTRYPOINT``, ...) never
  pass: a nested agent would think it runs inside its parent's session;
- other ``CLAUDE_CODE_*`` variables pass only when egg.yaml or the agent's profile names them
  exactly (``env: '*'`` is not enough);
- ``SSH_AUTH_SOCK`` is dropped when ``~/.ssh`` is denied, unless egg.yaml lists it by name (a
  deliberate opt-in to agent-backed ssh without the key files); and since an agent could find the
  socket without the variable, its live paths are masked too (:mod:`egg_core.sshagent`);
- the agent's set-env defaults fill in what the host did not set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from egg_core.sshagent import SSH_AUTH_SOCK

if TYPE_CHECKING:
    from egg_core.policy import EffectivePolicy

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
