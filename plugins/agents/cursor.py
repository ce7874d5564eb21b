"""Cursor's agent CLI (``cursor-agent``; newer installs also call it ``agent``).

Sources checked (stored copies, 2026):
- cursor.com/docs/cli: install, print mode; cursor.com/docs/cli/reference/authentication.md:
  ``CURSOR_API_KEY`` and browser login (NO_OPEN_BROWSER prints the URL instead).
- Cursor's network configuration page (enterprise docs): the CLI talks only to Cursor's backend,
  ``*.cursor.sh`` (API and authentication) and ``*.cursorapi.com``; models are proxied there, so
  no Anthropic or OpenAI host is needed (the wingthing profile lists them; it is wrong there).
- docs.cursor.com/en/cli/reference/configuration: ~/.cursor/cli-config.json (permissions),
  ~/.cursor/mcp.json (MCP server commands); Linux credentials in ~/.config/cursor/auth.json.
- flags: --resume <chat-id>; -f/--force allows commands unless explicitly denied.
- macOS: tokens in the login Keychain (cursor-access-token / cursor-refresh-token).
"""

from __future__ import annotations

from egg_core.api import AgentProfile, EnvDefault, Grant, PlatformGrant, RegisterAgent, hookimpl

_KEYCHAIN = "macOS Keychain access, where Cursor keeps its tokens"

PROFILE = AgentProfile(
    name="cursor",
    description="Cursor's agent CLI",
    binary="cursor-agent",
    domains=[
        Grant("*.cursor.sh", "Cursor's API (models are proxied there) and sign-in"),
        Grant("*.cursorapi.com", "Cursor's API endpoints"),
    ],
    env_vars=[Grant("CURSOR_API_KEY", "API-key authentication")],
    set_env=[EnvDefault("NO_OPEN_BROWSER", "1", "no browser inside; the login URL is printed")],
    platform_env=[
        PlatformGrant("darwin", "XPC_SERVICE_NAME", _KEYCHAIN),
        PlatformGrant("darwin", "XPC_FLAGS", _KEYCHAIN),
        PlatformGrant("darwin", "__CFBundleIdentifier", _KEYCHAIN),
    ],
    write_dirs=[
        Grant(".cursor", "config, chats and transcripts"),
        Grant(".config/cursor", "credentials on Linux"),
        Grant(".cache/cursor-compile-cache", "Node compile cache"),
    ],
    settings_files=[
        Grant(".cursor/cli-config.json", "holds the command allowlist the agent obeys"),
        Grant(".cursor/mcp.json", "defines MCP server commands"),
    ],
    project_settings_files=[
        Grant(".cursor/mcp.json", "project MCP server commands"),
        Grant(".cursor/cli.json", "project command permissions"),
    ],
    session_dir=".cursor/chats",
    resume_flag="--resume",
    history_declined=(
        "cursor-agent's transcript format is not published and its CLI is not open source: "
        "egg cannot pin it down (~/.cursor/chats holds it)"
    ),
    skip_permissions_flag="--force",
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
