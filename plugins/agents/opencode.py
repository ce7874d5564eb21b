"""opencode (``opencode``), the open-source terminal agent (sst/opencode, now anomalyco/opencode).

Sources checked (stored copies, 2026):
- anomalyco/opencode packages/web/src/content/docs/cli.mdx: flags (--session, --continue), the
  environment table (OPENCODE_CONFIG, OPENCODE_CONFIG_CONTENT, OPENCODE_PERMISSION,
  OPENCODE_DISABLE_AUTOUPDATE), credentials in ~/.local/share/opencode/auth.json.
- troubleshooting.mdx: data in ~/.local/share/opencode (one SQLite database since v1.2),
  TUI state in ~/.local/state/opencode, provider packages in ~/.cache/opencode.
- models-dev.ts: the model catalog; 1.18 fetches it from models.opencode.ai (the binary: the
  URL, OPENCODE_MODELS_URL, OPENCODE_DISABLE_MODELS_FETCH), models.dev in older releases.
- 1.18 on first start (the real CLI from npm, in a fresh home, and its binary): writes
  ~/.config/opencode/opencode.jsonc (only ``$schema``; not when OPENCODE_CONFIG* is set),
  .gitignore, package.json and package-lock.json, and installs ``@opencode-ai/plugin`` into
  node_modules there — in every config directory, OPENCODE_CONFIG_DIR's too — on every start,
  with npm's Arborist (no lifecycle scripts; a failure is tolerated); its data in
  ~/.local/share/opencode (opencode.db), locks in ~/.local/state/opencode, binaries in
  ~/.cache/opencode/bin, npm's cache in ~/.npm (a ``cache:`` rule). Config files may have
  comments (JSONC). It imports ``{plugin,plugins}/*.{ts,js}`` of every config directory.
- the interactive TUI has no skip-permissions flag (``--auto`` exists only on ``opencode run``);
  OPENCODE_PERMISSION='{"*":"allow"}' works for every mode (webcoyote/sandvault PR #111).
- providers: opencode talks to whichever provider is configured; the three common APIs are drilled,
  anything else is the user's to allow in egg.yaml.
- ~/.config/opencode is writable (it must be, from the first start), but what runs from it is
  guarded: its config files' ``plugin``, ``mcp``, ``formatter`` and ``lsp`` keys (commands and
  in-process plugins: config.ts) and package.json's dependencies and scripts are put back after a
  run, its local plugin directories are read-only, and its node_modules is the sandbox's own copy
  (a ``cache:`` rule), so an install inside never lands where the host's opencode loads it.
- its own permission system and code directories, from the 1.18.33 binary (threat R): the
  Config schema's ``permission`` (``"bash": "allow"`` and the rest), ``tools`` (which tools
  exist), ``agent`` and ``mode`` (each with its own permission, tools, model and prompt),
  ``command`` (templates whose ``!`...` `` lines run shell commands), ``skills`` (extra skill
  paths and URLs it fetches), ``provider`` (a provider's ``api``/``baseURL`` receives the
  prompts), ``enabled_providers``/``disabled_providers``, ``share``/``autoshare`` (sessions
  published on opencode.ai), ``enterprise`` (its URL), ``server`` (its CORS domains),
  ``instructions`` (extra instruction files and URLs), ``references`` (repositories it clones
  and reads), ``experimental.policies`` and ``experimental.continue_loop_on_deny``. Every
  config directory (ConfigPaths.directories: ~/.config/opencode, each ``.opencode`` from the
  project up to the worktree, ~/.opencode, OPENCODE_CONFIG_DIR) is scanned for
  ``{agent,agents}/**/*.md``, ``{command,commands}/**/*.md``, ``{mode,modes}/*.md``,
  ``{plugin,plugins}/*.{ts,js}``, ``{skill,skills}/**/SKILL.md`` and ``{tool,tools}/*.{js,ts}``
  — the tools are imported and run in its own process, on the host — and a ``.opencode``
  directory's ``opencode.json``/``opencode.jsonc`` is a config file too; skills also come
  from ~/.claude/skills, ~/.agents/skills and a project's ``.claude/skills`` and
  ``.agents/skills``. Its instructions: ~/.config/opencode/AGENTS.md (and ~/.claude/CLAUDE.md);
  its credentials: ~/.local/share/opencode/auth.json (``Credentials`` in ``opencode auth``).
"""

from __future__ import annotations

from egg_core.api import AgentProfile, EnvDefault, Grant, RegisterAgent, hookimpl

#: config keys that start programs or load code on the host (1.18's Config schema): plugins, MCP
#: servers, formatter and LSP commands, the shell its bash tool uses, providers (their SDK
#: packages and endpoints), and every key that loosens its permissions (see the docstring)
_CONFIG_COMMANDS = (
    "plugin",
    "mcp",
    "formatter",
    "lsp",
    "shell",
    "provider",
    "experimental.hook",
    "permission",
    "tools",
    "agent",
    "mode",
    "command",
    "skills",
    "enabled_providers",
    "disabled_providers",
    "share",
    "autoshare",
    "enterprise",
    "server",
    "instructions",
    "references",
    "reference",
    "experimental.policies",
    "experimental.continue_loop_on_deny",
)
#: the directories each config directory is scanned for (1.18's globs), and why
_CONFIG_DIR_CODE = (
    ("plugin", "plugins it loads in-process"),
    ("plugins", "plugins it loads in-process"),
    ("tool", "tools it imports and runs in-process"),
    ("tools", "tools it imports and runs in-process"),
    ("agent", "agents, with their own permissions and tools"),
    ("agents", "agents, with their own permissions and tools"),
    ("mode", "modes, with their own permissions and tools"),
    ("modes", "modes, with their own permissions and tools"),
    ("command", "commands; their !`...` lines run shell commands"),
    ("commands", "commands; their !`...` lines run shell commands"),
    ("skill", "skills it loads by itself"),
    ("skills", "skills it loads by itself"),
)
#: package.json keys that make an install run code
_PACKAGE_COMMANDS = (
    "scripts",
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "overrides",
)

PROFILE = AgentProfile(
    name="opencode",
    description="opencode, the open-source terminal coding agent",
    binary="opencode",
    domains=[
        Grant("models.opencode.ai", "the model catalog opencode loads at start"),
        Grant("models.dev", "the model catalog (releases before 1.18)"),
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
        Grant("OPENCODE_CONFIG_DIR", "an extra config directory (agents, commands, plugins)"),
        Grant("OPENCODE_DISABLE_MODELS_FETCH", "keeps the model catalog offline"),
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
        Grant(".config/opencode", "its config directory: written on the first start"),
        Grant("$OPENCODE_CONFIG_DIR", "the extra config directory it is given: written too"),
    ],
    cache_dirs=[
        Grant(
            ".config/opencode/node_modules",
            "it installs its plugin SDK there on every start; the host's plugins import from it",
        ),
        Grant("$OPENCODE_CONFIG_DIR/node_modules", "the same, in the extra config directory"),
    ],
    settings_files=[
        Grant(".config/opencode/opencode.json", "MCP commands, plugins, formatters, LSP servers"),
        Grant(".config/opencode/opencode.jsonc", "MCP commands, plugins, formatters, LSP servers"),
        Grant(".config/opencode/config.json", "MCP commands, plugins, formatters, LSP servers"),
        Grant(".config/opencode/package.json", "dependencies its start-up install fetches"),
        Grant(".config/opencode/tui.json", "TUI plugins it loads in-process"),
        Grant(".config/opencode/tui.jsonc", "TUI plugins it loads in-process"),
        Grant("$OPENCODE_CONFIG_DIR/opencode.jsonc", "MCP commands, plugins, formatters"),
        Grant("$OPENCODE_CONFIG_DIR/opencode.json", "MCP commands, plugins, formatters"),
        Grant("$OPENCODE_CONFIG_DIR/package.json", "dependencies its start-up install fetches"),
    ],
    code_dirs=[
        *(Grant(f".config/opencode/{name}", why) for name, why in _CONFIG_DIR_CODE),
        *(Grant(f"$OPENCODE_CONFIG_DIR/{name}", why) for name, why in _CONFIG_DIR_CODE),
        Grant(".claude/skills", "skills it loads by itself (Claude Code's, read too)"),
        Grant(".agents/skills", "skills it loads by itself"),
    ],
    project_code_dirs=[
        *(Grant(f".opencode/{name}", f"project {why}") for name, why in _CONFIG_DIR_CODE),
        Grant(".opencode/node_modules", "what the project's plugins and tools import"),
        Grant(".claude/skills", "project skills it loads by itself (Claude Code's, read too)"),
        Grant(".agents/skills", "project skills it loads by itself"),
    ],
    restored_files=[
        Grant(
            ".local/share/opencode/auth.json",
            "credentials: a sign-in inside cannot be told from a swapped account, so it is "
            "not kept; sign in outside egg, or use the provider's key variable",
        ),
        Grant(".config/opencode/AGENTS.md", "instructions it follows in every project"),
    ],
    command_keys={
        "opencode.json": _CONFIG_COMMANDS,
        ".config/opencode/opencode.json": _CONFIG_COMMANDS,
        ".config/opencode/config.json": _CONFIG_COMMANDS,
        ".config/opencode/package.json": _PACKAGE_COMMANDS,
        ".config/opencode/opencode.jsonc": _CONFIG_COMMANDS,
        ".config/opencode/tui.json": ("plugin",),
        ".config/opencode/tui.jsonc": ("plugin",),
        "opencode.jsonc": _CONFIG_COMMANDS,
        ".opencode/opencode.json": _CONFIG_COMMANDS,
        ".opencode/opencode.jsonc": _CONFIG_COMMANDS,
        ".opencode/package.json": _PACKAGE_COMMANDS,
        "$OPENCODE_CONFIG_DIR/opencode.jsonc": _CONFIG_COMMANDS,
        "$OPENCODE_CONFIG_DIR/opencode.json": _CONFIG_COMMANDS,
        "$OPENCODE_CONFIG_DIR/package.json": _PACKAGE_COMMANDS,
    },
    project_settings_files=[
        Grant("opencode.json", "project config: MCP commands, plugins, formatters"),
        Grant("opencode.jsonc", "project config: MCP commands, plugins, formatters"),
        Grant(".opencode/opencode.json", "project config: MCP commands, plugins, permissions"),
        Grant(".opencode/opencode.jsonc", "project config: MCP commands, plugins, permissions"),
        Grant(".opencode/package.json", "dependencies its start-up install fetches there"),
    ],
    session_dir=".local/share/opencode",
    resume_flag="--session",
    history_declined=(
        "opencode 1.18 keeps every project's conversations in one SQLite database "
        "(~/.local/share/opencode/opencode.db: session, message and part tables); copying one "
        "conversation out of it and back means reading and writing the live database the sandbox "
        "can write, which egg does not do"
    ),
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
