"""OpenAI Codex CLI (``codex``).

Sources checked (stored copies, 2026):
- endpoints: openai/codex codex-rs/core/src/model_provider_info.rs (api.openai.com/v1 for API keys,
  chatgpt.com/backend-api/codex for ChatGPT sign-in, OPENAI_BASE_URL, CODEX_OSS_BASE_URL);
  codex-rs/login/src/server.rs (issuer auth.openai.com, token refresh).
- credentials: developers.openai.com/codex/config-file/environment-variables (OPENAI_API_KEY,
  CODEX_API_KEY, CODEX_ACCESS_TOKEN, CODEX_HOME).
- state: ~/.codex (config.toml, auth.json, sessions/, log/, sqlite state); hooks in
  ~/.codex/hooks.json are on by default since 0.124 (developers.openai.com/codex/hooks); notify
  programs and MCP commands in ~/.codex/config.toml. Transcripts:
  ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl.
- flags: ``codex resume <id>`` is a subcommand; --dangerously-bypass-approvals-and-sandbox
  (codex-rs/exec/src/cli.rs) disables Codex's own sandbox, which cannot nest inside egg's
  namespaces. --full-auto (wingthing's choice) was deprecated in 0.128 and removed in 0.147.
- the wingthing profile names .codex/settings.json, a file Codex does not have.
- 0.171 (the real CLI from npm, run against a loopback stand-in): OPENAI_BASE_URL is ignored
  (the binary reads it only in its network-proxy code); the endpoint comes from config.toml —
  ``openai_base_url`` or a ``model_providers`` entry with ``model_provider``. So no variable
  routes Codex's API, and egg derives no provider hole from one. CODEX_HOME is honoured.
"""

from __future__ import annotations

from egg_core.hookspecs import RegisterAgent, hookimpl
from egg_core.profiles import AgentProfile, ArgvRequest, Grant, PlatformGrant, Relocation

#: config.toml keys that make Codex start a program on the host later (notify, MCP servers and
#: their header helpers, hooks and their trust, plugins, provider auth commands, the JS REPL's
#: node), choose a profile, set the environment of what it runs, or let it run things without
#: asking or without its own sandbox (approval_policy, sandbox_mode). Project trust and the model
#: are Codex's to keep. The same for each profile file ($CODEX_HOME/<name>.config.toml, 0.171;
#: the legacy [profiles.x] tables are refused by 0.171 but still covered).
_CONFIG_COMMANDS = (
    "notify",
    "mcp_servers",
    "hooks",
    "plugins",
    "js_repl_node_path",
    "js_repl_node_module_dirs",
    "agents.*.config_file",
    "permissions",
    "default_permissions",
    "approvals_reviewer",
    "auto_review",
    "allow_login_shell",
    "profile",
    "shell_environment_policy",
    "approval_policy",
    "sandbox_mode",
    "model_providers.*.auth",
    "model_providers.*.aws",
    "model_providers.*.gateway_oauth",
    "profiles.*.notify",
    "profiles.*.mcp_servers",
    "profiles.*.shell_environment_policy",
    "profiles.*.approval_policy",
    "profiles.*.sandbox_mode",
)


def build_argv(profile: AgentProfile, request: ArgvRequest) -> list[str]:
    """``codex [resume ID] [--dangerously-bypass-approvals-and-sandbox] args…``."""
    argv = ["codex"]
    if request.resume_id:
        argv += ["resume", request.resume_id]
    if request.skip_permissions:
        argv.append("--dangerously-bypass-approvals-and-sandbox")
    return argv + list(request.args)


PROFILE = AgentProfile(
    name="codex",
    description="OpenAI Codex CLI",
    binary="codex",
    domains=[
        Grant("api.openai.com", "the OpenAI API when signed in with an API key"),
        Grant("chatgpt.com", "the Codex backend when signed in with ChatGPT"),
        Grant("auth.openai.com", "sign-in and token refresh"),
    ],
    env_vars=[
        Grant("OPENAI_API_KEY", "API-key authentication"),
        Grant("CODEX_API_KEY", "API-key authentication for non-interactive runs"),
        Grant("CODEX_ACCESS_TOKEN", "ChatGPT access-token authentication"),
        Grant(
            "OPENAI_BASE_URL",
            "read by tools and SDKs the agent runs (Codex itself takes its endpoint from "
            "config.toml: openai_base_url or model_providers)",
        ),
        Grant("OPENAI_ORGANIZATION", "selects the OpenAI organization"),
        Grant("OPENAI_PROJECT", "selects the OpenAI project"),
        Grant("CODEX_HOME", "relocates Codex's state directory (then that one is writable)"),
    ],
    platform_env=[
        PlatformGrant("darwin", "XPC_SERVICE_NAME", "macOS Keychain access (keyring credentials)"),
        PlatformGrant("darwin", "XPC_FLAGS", "macOS Keychain access (keyring credentials)"),
    ],
    write_dirs=[
        Grant(".codex", "config, credentials refresh, transcripts, logs and state database"),
        Grant(".cache/codex", "Codex's cache"),
    ],
    settings_files=[
        Grant(".codex/config.toml", "defines notify programs and MCP server commands"),
        Grant(".codex/*.config.toml", "profiles: each may define notify programs and MCP servers"),
        Grant(".codex/hooks.json", "defines hooks that run outside a session"),
    ],
    project_settings_files=[
        Grant(".codex/config.toml", "project config with notify programs and MCP commands"),
        Grant(".codex/hooks.json", "project hooks run outside a session too"),
    ],
    relocations=[Relocation(".codex", "CODEX_HOME")],
    command_keys={
        ".codex/config.toml": _CONFIG_COMMANDS,
        ".codex/*.config.toml": _CONFIG_COMMANDS,
    },
    session_dir=".codex/sessions",
    resume_flag="resume",
    skip_permissions_flag="--dangerously-bypass-approvals-and-sandbox",
    argv_builder=build_argv,
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
