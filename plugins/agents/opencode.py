"""opencode (``opencode``), the open-source terminal agent (sst/opencode, now anomalyco/opencode).

Sources checked (stored copies, 2026):
- anomalyco/opencode packages/web/src/content/docs/cli.mdx: flags (--session, --continue), the
  environment table (OPENCODE_CONFIG, OPENCODE_CONFIG_CONTENT, OPENCODE_PERMISSION,
  OPENCODE_DISABLE_AUTOUPDATE), credentials in ~/.local/share/opencode/auth.json.
- troubleshooting.mdx: data in ~/.local/share/opencode (one SQLite database since v1.2),
  TUI state in ~/.local/state/opencode, provider packages in ~/.cache/opencode.
- models-dev.ts: the model catalog at models.dev.
- the interactive TUI has no skip-permissions flag (``--auto`` exists only on ``opencode run``);
  OPENCODE_PERMISSION='{"*":"allow"}' works for every mode (webcoyote/sandvault PR #111).
- providers: opencode talks to whichever provider is configured; the three common APIs are drilled,
  anything else is the user's to allow in egg.yaml. ~/.config/opencode stays read-only (it holds
  plugins that run in-process), so nothing there needs a snapshot.
"""

from __future__ import annotations

from egg_core.hookspecs import RegisterAgent, hookimpl
from egg_core.profiles import AgentProfile, EnvDefault, Grant

PROFILE = AgentProfile(
    name="opencode",
    description="opencode, the open-source terminal coding agent",
    binary="opencode",
    domains=[
        Grant("models.dev", "the model catalog opencode loads at start"),
        Grant("opencode.ai", "OpenCode Zen models and session sharing"),
        Grant("api.anthropic.com", "the Anthropic provider"),
        Grant("api.openai.com", "the OpenAI provider"),
        Grant("generativelanguage.googleapis.com", "the Google provider"),
    ],
    env_vars=[
        Grant("ANTHROPIC_API_KEY", "the Anthropic provider's key"),
        Grant("OPENAI_API_KEY", "the OpenAI provider's key"),
        Grant("GEMINI_API_KEY", "the Google provider's key"),
        Grant("GOOGLE_GENERATIVE_AI_API_KEY", "the Google provider's key (AI SDK name)"),
        Grant("OPENROUTER_API_KEY", "the OpenRouter provider's key"),
        Grant("OPENCODE_CONFIG", "points at an alternative config file"),
        Grant("OPENCODE_CONFIG_CONTENT", "inline config"),
    ],
    set_env=[
        EnvDefault("OPENCODE_DISABLE_AUTOUPDATE", "1", "the installation is read-only inside"),
    ],
    skip_permissions_env=[
        EnvDefault(
            "OPENCODE_PERMISSION",
            '{"*":"allow"}',
            "the TUI has no flag for skipping permission prompts; this variable is it",
        )
    ],
    write_dirs=[
        Grant(".local/share/opencode", "sessions database, credentials and logs"),
        Grant(".local/state/opencode", "TUI state"),
        Grant(".cache/opencode", "model catalog and provider packages"),
    ],
    project_settings_files=[
        Grant("opencode.json", "project config: MCP commands, plugins, formatters"),
        Grant("opencode.jsonc", "project config: MCP commands, plugins, formatters"),
    ],
    session_dir=".local/share/opencode",
    resume_flag="--session",
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
