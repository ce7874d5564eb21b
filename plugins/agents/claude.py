"""Claude Code (``claude``), Anthropic's coding agent.

Sources checked (stored copies, 2026):
- network: code.claude.com/docs/en/network-config ("Network access requirements"): api.anthropic.com
  for the API, claude.ai and platform.claude.com for login; telemetry and error reporting are
  turned off with DISABLE_TELEMETRY / DISABLE_ERROR_REPORTING (docs .../data-usage), the
  auto-updater with DISABLE_AUTOUPDATER (docs .../env-vars).
- credentials and routing: code.claude.com/docs/en/env-vars (ANTHROPIC_API_KEY,
  ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, model variables); CLAUDE_CODE_OAUTH_TOKEN from
  ``claude setup-token``.
- state: ~/.claude/ and ~/.claude.json (docs .../settings, .../authentication; Linux credentials in
  ~/.claude/.credentials.json); hooks and MCP commands live in ~/.claude/settings.json and
  ~/.claude.json; transcripts in ~/.claude/projects/<cwd slug>/<session>.jsonl
  (anthropics/claude-code#24067).
- plugins: ~/.claude/plugins holds installed plugins and marketplaces; a plugin bundles hooks,
  MCP servers and executables that run when the plugin is enabled (code.claude.com/docs/en/
  plugins/overview).
- 2.1.332 (its binary, and strace of a run in a fresh home): ~/.claude.json is saved under a
  lock directory ``~/.claude.json.lock``, through ``~/.claude.json.tmp.<pid>.<hex>`` created
  with O_EXCL and linked (first save) or renamed over it; backups go to ~/.claude/backups;
  a symlinked ~/.claude.json is written through, with the temporary beside the target.
  CLAUDE_CONFIG_DIR moves all of it, .claude.json included, into that directory.
- flags: --resume, --session-id, --dangerously-skip-permissions (cli-reference); as root the last
  one is refused unless IS_SANDBOX=1 (anthropics/claude-code#3490).
- history, verified with 2.1.332 against a stand-in model (tests/history/fixtures/claude.jsonl is
  such a run): ``--session-id ID`` writes ``projects/<slug>/<ID>.jsonl`` under the config dir, the
  slug being the working directory with every character but letters and digits made ``-``
  (``/var/tmp/proj.x`` -> ``-var-tmp-proj-x``); ``--resume ID`` appends to that same file. Lines
  are JSON records: ``user`` / ``assistant`` carry ``message.content`` (a string, or text,
  ``tool_use`` and ``tool_result`` blocks); ``isMeta`` records are injected context. What was
  done at its prompt is written as markup (tests/history/fixtures/claude-markup.jsonl, an
  interactive run: ``!ls``, then a project's ``/hello world``): see :func:`_text_turn`.
- macOS: credentials in the login Keychain via /usr/bin/security (anthropics/claude-code#29783);
  the XPC variables follow the wingthing egg profile (ehrlich-b/wingthing internal/egg/agents.go).
- the wingthing profile also lists *.claude.com, sentry.io and statsigapi.net; egg drills only what
  the agent needs with telemetry off.
- its own permission system, checked in the 2.1.332 binary (threat R): the settings keys come
  from its table of security-relevant settings (``d1``: each key with its restrictive value)
  and its list of policy keys (``fc``: allowed/denied MCP servers, HTTP hook URLs,
  marketplaces); the config-home entries from the paths its own sandbox keeps its commands
  from writing: ``hooks``, ``skills``, ``workflows``, ``commands``, ``agents``, ``routines``,
  ``rules``, ``output-styles``, ``cowork_plugins``, ``scheduled_tasks.json``, ``launch.json``,
  ``daemon.json``, ``policy-limits.json``, ``CLAUDE.md``, ``loop.md``, ``remote-settings.json``
  and its consent files, and in a project ``.claude/{skills,commands,agents,hooks,workflows,
  routines,output-styles}``, ``.claude/launch.json``, ``.claude/scheduled_tasks.json``. A skill
  or command brings its own ``allowed-tools`` and shell lines, a subagent its tools and hooks,
  and claude loads them by itself (code.claude.com/docs/en/skills, .../slash-commands,
  .../sub-agents). ``.credentials.json`` holds the subscription sign-in (refresh tokens are
  single-use: anthropics/claude-code#80585, #88947).
- the account in ~/.claude.json, from the 2.1.332 binary: ``primaryApiKey`` is the key a Console
  sign-in saves there (the "/login managed key" its key lookup returns when no variable sets
  one), ``customApiKeyResponses`` the ``approved``/``rejected`` lists of truncated
  ANTHROPIC_API_KEY values it has asked about (its "use this API key?" answer), and
  ``oauthAccount`` the subscription account (``accountUuid``, ``organizationUuid``, roles)
  whose organization its cloud-session and remote-control requests name. Trust: ``projects.<path>.
  hasTrustDialogAccepted``, looked up for the folder and every folder above it (its trust walk:
  a folder above that is trusted needs no dialog), so ``/`` trusts every folder; claude records
  it for the git root of the folder it starts in (a run in a subdirectory of a repository asks
  again: its answer is for a folder beyond the workspace).

Why one module of this size: an agent plugin is one file a third party can copy — the profile
(its holes and their reasons), where its transcripts are and how they read — and Claude Code's
are the largest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from egg_core.api import (
    AgentProfile,
    EnvDefault,
    Grant,
    HistoryContext,
    PlatformGrant,
    RegisterAgent,
    Relocation,
    Transcript,
    TranscriptReader,
    Turn,
    cut,
    hookimpl,
    is_markup,
    is_uuid,
)

#: settings keys that make claude run something on the host, or run it without asking, on a
#: later start outside egg (each name checked in the 2.1.332 binary): hooks and helper commands,
#: MCP servers and which project ones are enabled, plugins (they bring hooks and MCP servers),
#: the environment every session gets (NODE_OPTIONS=--require …, CLAUDE_CODE_SHELL_PREFIX), the
#: launcher prefix (processWrapper), and permission grants
_SETTINGS_COMMANDS = (
    "hooks",
    "disableAllHooks",
    "statusLine",
    "subagentStatusLine",
    "fileSuggestion",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "gcpAuthRefresh",
    "otelHeadersHelper",
    "proxyAuthHelper",
    "processWrapper",
    "mcpServers",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "enabledPlugins",
    "extraKnownMarketplaces",
    "additionalMarketplaces",
    "env",
    "permissions",
)
#: settings keys that loosen claude's own permission system, its sandbox and what it loads
#: (2.1.332's security-relevant settings, ``d1`` and ``fc``): what runs without asking (auto
#: mode, the bypass-mode prompt), its own sandbox, skill shell lines, plugin and skill sources,
#: MCP server allow and deny lists, remote control and session upload, the sign-in it insists on
_SETTINGS_PERMISSIONS = (
    "sandbox",
    "autoMode",
    "disableAutoMode",
    "useAutoModeDuringPlan",
    "skipDangerousModePermissionPrompt",
    "skipAutoPermissionPrompt",
    "disableSkillShellExecution",
    "disableDirectMcpSkills",
    "disableCommandPluginSources",
    "disableSideloadFlags",
    "disablePluginDirectory",
    "strictPluginOnlyCustomization",
    "syncClaudeAiSkills",
    "syncClaudeAiPlugins",
    "allowedMcpServers",
    "deniedMcpServers",
    "disabledMcpjsonServers",
    "allowedHttpHookUrls",
    "allowManagedHooksOnly",
    "allowManagedMcpServersOnly",
    "allowManagedPermissionRulesOnly",
    "strictKnownMarketplaces",
    "allowedMarketplaces",
    "blockedMarketplaces",
    "channelsEnabled",
    "disableRemoteControl",
    "remoteControl",
    "remoteControlAtStartup",
    "remoteTools",
    "crossSessionInbound",
    "autoUploadSessions",
    "disableDeepLinkRegistration",
    "skipWebFetchPreflight",
    "isolation",
    "forceLoginMethod",
    "forceLoginOrgUUID",
)
#: ~/.claude.json: MCP servers, globally and per project, and which project ones are enabled;
#: of the settings 2.1.332 still reads from it (its global-config key list), the environment it
#: applies to itself at every start (PATH, NODE_OPTIONS, CLAUDE_CODE_SHELL_PREFIX…), the
#: legacy apiKeyHelper, the diff tool, IDE extension installs, remote control and session
#: uploads; the account (see the docstring): the API key a Console sign-in keeps there, the
#: approved and rejected ANTHROPIC_API_KEY answers, the subscription account and organization;
#: and trust given to any directory but the run's own workspace. Everything else there (the
#: workspace's trust answer, counters, caches) is claude's to keep, and so is what it writes
#: into every new project's entry — ``mcpServers: {}``, ``allowedTools: []``, ``false`` for the
#: approvals (``=[false]``: not given) — which names nothing (egg_core.settings_keys).
_STATE_COMMANDS = (
    "mcpServers",
    "env",
    "apiKeyHelper",
    "diffTool",
    "autoConnectIde",
    "autoInstallIdeExtension",
    "remoteControlAtStartup",
    "autoAddRemoteControlDaemonWorker",
    "autoUploadSessions",
    "projects.*.mcpServers",
    "projects.*.enabledMcpjsonServers",
    "projects.*.enableAllProjectMcpServers=[false]",
    "projects.*.allowedTools",
    "projects.*.disabledMcpjsonServers",
    "projects.*.hasClaudeMdExternalIncludesApproved=[false]",
    "bypassPermissionsModeAccepted=[false]",
    "claudeInChromeDefaultEnabled",
    "primaryApiKey",
    "customApiKeyResponses",
    "oauthAccount",
    "projects.*!cwd.hasTrustDialogAccepted",
)
#: the code and commands claude loads from its config home by itself (see the docstring)
_HOME_CODE = (
    ("hooks", "hook scripts its settings run"),
    ("skills", "skills it loads by itself, with their own allowed tools and shell lines"),
    ("commands", "slash commands, with their own allowed tools and shell lines"),
    ("agents", "subagents, with their own tools, hooks and MCP servers"),
    ("workflows", "workflows it runs"),
    ("routines", "routines it runs"),
    ("rules", "rules it follows in every project"),
    ("output-styles", "output styles: system prompts it takes on"),
    ("cowork_plugins", "plugins it loads"),
)
#: the same in a project's .claude (2.1.332's own sandbox guards these too)
_PROJECT_CODE = (
    ("hooks", "project hook scripts"),
    ("skills", "project skills it loads by itself, with their own allowed tools"),
    ("commands", "project slash commands, with their own allowed tools and shell lines"),
    ("agents", "project subagents, with their own tools and hooks"),
    ("workflows", "project workflows it runs"),
    ("routines", "project routines it runs"),
    ("output-styles", "project output styles: system prompts it takes on"),
)
_KEYCHAIN = "macOS Keychain access, where Claude Code keeps its login"

PROFILE = AgentProfile(
    name="claude",
    description="Claude Code, Anthropic's coding agent",
    binary="claude",
    domains=[
        Grant("api.anthropic.com", "the Claude API: every model request"),
        Grant("claude.ai", "signing in with a Claude subscription, and WebFetch's safety check"),
        Grant("platform.claude.com", "signing in with an Anthropic Console account"),
    ],
    env_vars=[
        Grant("ANTHROPIC_API_KEY", "API-key authentication"),
        Grant("ANTHROPIC_AUTH_TOKEN", "bearer-token authentication (gateways)"),
        Grant("CLAUDE_CODE_OAUTH_TOKEN", "long-lived subscription token from `claude setup-token`"),
        Grant("ANTHROPIC_BASE_URL", "routes the API to a gateway or local server"),
        Grant("ANTHROPIC_CUSTOM_HEADERS", "extra headers a gateway requires"),
        Grant(
            "CLAUDE_CONFIG_DIR",
            "relocates ~/.claude and ~/.claude.json (then that directory is writable)",
        ),
        Grant("ANTHROPIC_MODEL", "the model to use"),
        Grant("ANTHROPIC_DEFAULT_OPUS_MODEL", "model alias override"),
        Grant("ANTHROPIC_DEFAULT_SONNET_MODEL", "model alias override"),
        Grant("ANTHROPIC_DEFAULT_HAIKU_MODEL", "model alias override"),
    ],
    set_env=[
        EnvDefault("DISABLE_AUTOUPDATER", "1", "the installation is read-only inside the sandbox"),
        EnvDefault("DISABLE_TELEMETRY", "1", "telemetry hosts are not on the allowlist"),
        EnvDefault("DISABLE_ERROR_REPORTING", "1", "error-reporting hosts are not allowed"),
        EnvDefault(
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
            "1",
            "its auto-install is a git clone of plugin code into ~/.claude/plugins, which egg "
            "takes out after every run (a first run said so, and a clone cut short leaves a .git)",
        ),
        EnvDefault(
            "IS_SANDBOX",
            "1",
            "it does run in a sandbox; claude refuses --dangerously-skip-permissions as root "
            "without it",
        ),
    ],
    platform_env=[
        PlatformGrant("darwin", "XPC_SERVICE_NAME", _KEYCHAIN),
        PlatformGrant("darwin", "XPC_FLAGS", _KEYCHAIN),
        PlatformGrant("darwin", "__CFBundleIdentifier", _KEYCHAIN),
        PlatformGrant("darwin", "LOGNAME", _KEYCHAIN),
    ],
    write_dirs=[Grant(".cache/claude", "Claude Code's cache")],
    write_prefix_dirs=[
        Grant(
            ".claude", "settings, transcripts, todos and credentials (~/.claude/, ~/.claude.json)"
        )
    ],
    home_files=[
        Grant(
            ".claude.json",
            "its state (sign-in, trust answers), replaced atomically: a per-run copy, written "
            "back after the run",
        )
    ],
    settings_files=[
        Grant(".claude/settings.json", "defines hooks and commands that run outside a session"),
        Grant(".claude.json", "defines MCP server commands and per-project trust"),
        Grant(".claude/scheduled_tasks.json", "tasks it runs later by itself"),
        Grant(".claude/launch.json", "launch configurations: commands it starts"),
    ],
    project_settings_files=[
        Grant(".claude/settings.json", "project hooks run by claude outside a session too"),
        Grant(".claude/settings.local.json", "local project hooks and permissions"),
        Grant(".mcp.json", "project MCP server commands claude starts"),
        Grant(".claude/scheduled_tasks.json", "project tasks it runs later by itself"),
        Grant(".claude/launch.json", "project launch configurations: commands it starts"),
    ],
    restored_files=[
        Grant(
            ".claude/.credentials.json",
            "credentials: a sign-in or token refresh inside cannot be told from a swapped "
            "account, so it is not kept; sign in outside egg, or use CLAUDE_CODE_OAUTH_TOKEN "
            "(claude setup-token)",
        ),
        Grant(".claude/CLAUDE.md", "instructions it follows in every project"),
        Grant(".claude/loop.md", "the prompt /loop repeats"),
        Grant(".claude/remote-settings.json", "cached managed settings (they may hold hooks)"),
        Grant(".claude/remote-settings-consent.json", "consent to managed settings' commands"),
        Grant(".claude/remote-settings-helper-consent", "consent to the managed settings helper"),
        Grant(".claude/policy-limits.json", "cached organization limits it obeys"),
        Grant(".claude/daemon.json", "its background daemon's configuration"),
    ],
    relocations=[
        Relocation(".claude", "CLAUDE_CONFIG_DIR"),
        Relocation(".claude.json", "CLAUDE_CONFIG_DIR", ".claude.json"),
    ],
    command_keys={
        ".claude/settings.json": (*_SETTINGS_COMMANDS, *_SETTINGS_PERMISSIONS),
        ".claude/settings.local.json": (*_SETTINGS_COMMANDS, *_SETTINGS_PERMISSIONS),
        ".claude.json": _STATE_COMMANDS,
        ".mcp.json": ("mcpServers",),
    },
    code_dirs=[
        Grant(".claude/plugins", "plugins bring hooks, MCP servers and executables it runs"),
        *(Grant(f".claude/{name}", why) for name, why in _HOME_CODE),
    ],
    project_code_dirs=[Grant(f".claude/{name}", why) for name, why in _PROJECT_CODE],
    provider_url_vars=["ANTHROPIC_BASE_URL"],
    session_dir=".claude/projects",
    resume_flag="--resume",
    session_id_flag="--session-id",
    skip_permissions_flag="--dangerously-skip-permissions",
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)


# -- conversation history (see egg_core.history) ------------------------------------------------


def project_slug(cwd: Path | str) -> str:
    """Claude's directory name for a working directory: every non-alphanumeric character -> -."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def _transcript(ctx: HistoryContext, session_id: str | None) -> Transcript | None:
    if not session_id or not is_uuid(session_id):
        return None
    root = ctx.agent_path(PROFILE, ".claude")
    if root is None:
        return None
    file = f"projects/{project_slug(ctx.cwd)}/{session_id}.jsonl"
    return Transcript(agent_session_id=session_id, root=root, file=file)


@hookimpl
def egg_history_capture(agent: AgentProfile, ctx: HistoryContext) -> Transcript | None:
    if agent.name != PROFILE.name:
        return None
    return _transcript(ctx, ctx.agent_session_id)  # egg chose it: --session-id


@hookimpl
def egg_history_restore(
    agent: AgentProfile, ctx: HistoryContext, captured: Transcript
) -> Transcript | None:
    if agent.name != PROFILE.name:
        return None
    return _transcript(ctx, captured.agent_session_id)


@hookimpl
def egg_history_render(agent: AgentProfile, data: bytes) -> list[Turn] | None:
    if agent.name != PROFILE.name:
        return None
    return list(_turns(TranscriptReader.of_bytes(data).records()))


@hookimpl
def egg_history_turns(agent: AgentProfile, transcript: TranscriptReader) -> Iterator[Turn] | None:
    if agent.name != PROFILE.name:
        return None
    return _turns(transcript.records())


def _turns(records: Iterable[dict[str, Any]]) -> Iterator[Turn]:
    """Each record's turns as it is read: a record stands alone in Claude's format."""
    for record in records:
        kind = record.get("type")
        message = record.get("message")
        if (
            kind not in ("user", "assistant")
            or record.get("isMeta")
            or not isinstance(message, dict)
        ):
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield _text_turn(kind, content)
            continue
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield _text_turn(kind, block["text"])
            elif block.get("type") == "tool_use":
                summary = json.dumps(block.get("input", {}), ensure_ascii=False)
                yield Turn(role="tool", tool=str(block.get("name", "?")), text=cut(summary))
            elif block.get("type") == "tool_result":
                yield Turn(role="tool", text=cut(_result_text(block.get("content"))))


#: one ``<tag>body</tag>`` of the markup Claude Code writes for what was done at its prompt
_BLOCK = re.compile(r"\s*<([a-z][\w-]*)>(.*?)</\1>", re.DOTALL)
_BLANK = re.compile(r"\s*\Z")
#: the output of a ``!`` command or of a slash command that answers by itself, in that order
_OUTPUT = ("bash-stdout", "bash-stderr", "local-command-stdout", "local-command-stderr")


def _text_turn(role: str, text: str) -> Turn:
    """A message's text as the user saw it at Claude's prompt. 2.1.332 writes a ``!`` command as
    ``<bash-input>ls</bash-input>`` and its output as ``<bash-stdout>…</bash-stdout><bash-stderr>
    …</bash-stderr>``, a slash command as ``<command-message>…</command-message> <command-name>
    /review</command-name> <command-args>12</command-args>`` and a local one's answer as
    ``<local-command-stdout>``: they read ``! ls``, ``/review 12`` and a tool's output, as its own
    list of past conversations reads them. Other markup is left as it came."""
    blocks = _blocks(text) if role == "user" and is_markup(text) else None
    if not blocks:
        return Turn(role=role, text=text)
    if "bash-input" in blocks:
        return Turn(role="user", text="! " + blocks["bash-input"].strip())
    if "command-name" in blocks:
        command = f"{blocks['command-name'].strip()} {blocks.get('command-args', '').strip()}"
        return Turn(role="user", text=command.strip())
    if any(tag in blocks for tag in _OUTPUT):
        output = "\n".join(blocks[t].strip() for t in _OUTPUT if blocks.get(t, "").strip())
        return Turn(role="tool", text=cut(output))
    return Turn(role=role, text=text)


def _blocks(text: str) -> dict[str, str] | None:
    """``text`` as the ``<tag>body</tag>`` blocks it is made of (the first body of each tag);
    None when anything else is in it."""
    found: dict[str, str] = {}
    at = 0
    while not _BLANK.match(text, at):
        match = _BLOCK.match(text, at)
        if match is None:
            return None
        found.setdefault(match.group(1), match.group(2))
        at = match.end()
    return found


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""
