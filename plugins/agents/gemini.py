"""Google Gemini CLI (``gemini``).

Sources checked (stored copies, 2026):
- endpoints: google-gemini/gemini-cli packages/core/src/code_assist/server.ts
  (cloudcode-pa.googleapis.com for "Login with Google"); geminicli.com/docs/get-started/
  authentication (generativelanguage.googleapis.com with GEMINI_API_KEY, Vertex variables);
  OAuth token refresh at oauth2.googleapis.com.
- GOOGLE_GEMINI_BASE_URL and GOOGLE_GENAI_API_VERSION route the API (gemini-cli PR #25357).
- state: ~/.gemini (settings.json, oauth_creds.json, tmp/<project>/chats/ transcripts,
  geminicli.com/docs/cli/session-management); hooks and MCP commands live in
  ~/.gemini/settings.json, and ~/.gemini/.env is loaded at start (docs/reference/configuration.md).
- extensions: loaded from <workspace>/.gemini/extensions and ~/.gemini/extensions at start; each
  can define MCP servers and hooks (geminicli.com/docs/extensions).
- flags: --resume; --approval-mode=yolo (--yolo is deprecated), which by default starts Gemini's
  own Docker/seatbelt sandbox.
- SANDBOX (0.61 bundle: getSandboxCommand, Storage.isSandbox, /about): set, it means "already
  inside a sandbox of this name" — Gemini starts none of its own whatever the flags or settings
  say, and shows the name where it would say "no sandbox" (GEMINI_SANDBOX=false, which egg set
  before, only turned its own off and left it claiming to run unsandboxed). It also keeps GUI
  editors and the browser agent's own Chrome off, which cannot work inside anyway.
- settings.json may have comments (every load strips them) and ``$VAR`` values; project hooks
  run after a warning (~/.gemini/trusted_hooks.json only silences it).
- GEMINI_FORCE_FILE_STORAGE keeps tokens in files rather than a keychain (gemini-cli PR #6347).
"""

from __future__ import annotations

from egg_core.hookspecs import RegisterAgent, hookimpl
from egg_core.profiles import AgentProfile, EnvDefault, Grant

#: settings.json keys that make Gemini start a program on the host later, or run tools without
#: asking (the 0.61 settings schema, SETTINGS_SCHEMA in the bundle): hooks, MCP servers, the
#: tool discovery and call commands, its own sandbox command, the shell pager, auto-approved
#: tools. Sign-in, theme and the rest are Gemini's to keep.
_SETTINGS_COMMANDS = (
    "hooks",
    "hooksConfig",
    "mcpServers",
    "mcp.serverCommand",
    "tools.discoveryCommand",
    "tools.callCommand",
    "tools.sandbox",
    "tools.shell.pager",
    "tools.allowed",
    "general.defaultApprovalMode",
)

PROFILE = AgentProfile(
    name="gemini",
    description="Google Gemini CLI",
    binary="gemini",
    domains=[
        Grant("generativelanguage.googleapis.com", "the Gemini API with an API key"),
        Grant("cloudcode-pa.googleapis.com", "the Gemini API with Login with Google"),
        Grant("oauth2.googleapis.com", "refreshing the Google sign-in token"),
    ],
    env_vars=[
        Grant("GEMINI_API_KEY", "API-key authentication"),
        Grant("GOOGLE_API_KEY", "API-key authentication (Vertex AI)"),
        Grant("GOOGLE_CLOUD_PROJECT", "the Google Cloud project for Vertex or Workspace accounts"),
        Grant("GOOGLE_CLOUD_LOCATION", "the Vertex AI region"),
        Grant("GOOGLE_GENAI_USE_VERTEXAI", "selects Vertex AI"),
        Grant("GOOGLE_GEMINI_BASE_URL", "routes the API to a gateway or local server"),
        Grant("GOOGLE_GENAI_API_VERSION", "selects the API version"),
        Grant("GEMINI_MODEL", "the model to use"),
    ],
    set_env=[
        EnvDefault(
            "SANDBOX",
            "egg",
            "it runs inside egg's sandbox: Gemini starts none of its own and says so",
        ),
        EnvDefault("GEMINI_FORCE_FILE_STORAGE", "true", "no keychain is reachable inside"),
    ],
    write_dirs=[
        Grant(".gemini", "settings, sign-in tokens and transcripts"),
        Grant(".cache/gemini", "Gemini CLI's cache"),
    ],
    settings_files=[
        Grant(".gemini/settings.json", "defines hooks and MCP server commands"),
        Grant(".gemini/.env", "loaded into Gemini's environment on every start"),
    ],
    project_settings_files=[
        Grant(".gemini/settings.json", "project hooks and MCP server commands"),
        Grant(".gemini/.env", "loaded into Gemini's environment in this project"),
    ],
    command_keys={".gemini/settings.json": _SETTINGS_COMMANDS},
    code_dirs=[
        Grant(".gemini/extensions", "extensions bring MCP servers, hooks and commands it runs"),
    ],
    project_code_dirs=[
        Grant(".gemini/extensions", "project extensions, loaded by gemini in this project"),
    ],
    provider_url_vars=["GOOGLE_GEMINI_BASE_URL"],
    session_dir=".gemini/tmp",
    resume_flag="--resume",
    skip_permissions_flag="--approval-mode=yolo",
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
