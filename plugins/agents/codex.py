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
- history, verified with 0.171 against a stand-in model (tests/history/fixtures/codex.jsonl is
  such a run): no flag chooses the id; the rollout is ``sessions/YYYY/MM/DD/rollout-<local
  time>-<id>.jsonl`` under CODEX_HOME, its first line ``session_meta`` with ``payload.id``,
  ``payload.cwd`` and ``payload.timestamp``; ``codex resume <id>`` (and ``codex exec resume``)
  appends to that same file. ``response_item`` records carry the messages (``developer`` and
  ``<environment_context>`` ones are injected context, and so is the user message ``# AGENTS.md
  instructions for DIR … </INSTRUCTIONS>`` of a project with an AGENTS.md:
  tests/history/fixtures/codex-agents-md.jsonl) and the function calls.
- its own permission system (threat R), the keys from ConfigToml and ConfigProfile
  (openai/codex codex-rs/config/src/config_toml.rs, profile_toml.rs), each name found in the
  0.171 binary: the endpoint (``openai_base_url``, ``chatgpt_base_url``, ``model_provider``,
  the ``model_providers`` table, ``oss_provider``, the realtime and thread-store endpoints,
  ``otel`` exporters, which can log prompts), what it may do unasked (``sandbox_workspace_write``,
  ``web_search``, ``tools``, ``features``), the sign-in it insists on (``forced_login_method``,
  ``forced_chatgpt_workspace_id``) and the instructions it follows (``instructions``,
  ``developer_instructions``, ``model_instructions_file``, ``compact_prompt``, their files).
  Command rules: every ``*.rules`` under ``$CODEX_HOME/rules`` and a trusted project's
  ``.codex/rules`` is loaded at start, and ``decision = "allow"`` runs a command outside
  Codex's sandbox unasked (developers.openai.com/codex/exec-policy; ``default.rules`` in the
  binary). Skills: ``$CODEX_HOME/skills``, ``~/.agents/skills``, a project's ``.codex/skills``
  and ``.agents/skills`` (codex-rs/core-skills/src/loader.rs; ``codex-home-skills``,
  ``.agents/skills`` in the binary). ``$CODEX_HOME/AGENTS.override.md`` or ``AGENTS.md``: the
  instructions of every session (both names in the binary). ``auth.json``: the sign-in.
  ``$CODEX_HOME/prompts`` is not read by 0.171 (no custom prompts in the binary), so it is not
  guarded; ``memories/`` is Codex's own (it writes there), and stays writable.
- trust: ``[projects."<path>"] trust_level`` (ProjectConfig in config_toml.rs; the name in the
  0.171 binary), looked up for the working directory and then for the root of its git
  repository (get_active_project), whose worktrees inherit it; a trusted project's
  ``.codex/`` (config, rules, skills) is loaded. Trust for any other path is put back.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from egg_core.api import (
    AgentProfile,
    ArgvRequest,
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
    list_names,
    read_head,
)

#: config.toml keys that make Codex start a program on the host later (notify, MCP servers and
#: their header helpers, hooks and their trust, plugins, provider auth commands, the JS REPL's
#: node), choose a profile, set the environment of what it runs, let it run things without
#: asking or without its own sandbox (approval_policy, sandbox_mode, sandbox_workspace_write,
#: features), send the user's prompts elsewhere (openai_base_url, model providers, otel), or
#: change the instructions it follows (see the docstring), or trust another directory than the
#: run's own workspace. The workspace's trust and the model are Codex's to keep. The same for
#: each profile file ($CODEX_HOME/<name>.config.toml, 0.171; the legacy [profiles.x] tables
#: are refused by 0.171 but still covered).
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
    "sandbox_workspace_write",
    "openai_base_url",
    "chatgpt_base_url",
    "model_provider",
    "model_providers",
    "oss_provider",
    "experimental_realtime_ws_base_url",
    "experimental_realtime_webrtc_call_base_url",
    "experimental_thread_store_endpoint",
    "otel",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "web_search",
    "tools",
    "features",
    "instructions",
    "developer_instructions",
    "model_instructions_file",
    "experimental_compact_prompt_file",
    "compact_prompt",
    "project_doc_fallback_filenames",
    "model_catalog_json",
    "marketplaces",
    "skills",
    "profiles.*.notify",
    "profiles.*.mcp_servers",
    "profiles.*.shell_environment_policy",
    "profiles.*.approval_policy",
    "profiles.*.approvals_reviewer",
    "profiles.*.sandbox_mode",
    "profiles.*.model_provider",
    "profiles.*.oss_provider",
    "profiles.*.chatgpt_base_url",
    "profiles.*.model_instructions_file",
    "profiles.*.experimental_instructions_file",
    "profiles.*.experimental_compact_prompt_file",
    "profiles.*.model_catalog_json",
    "profiles.*.js_repl_node_path",
    "profiles.*.js_repl_node_module_dirs",
    "profiles.*.tools",
    "profiles.*.web_search",
    "profiles.*.features",
    "projects.*!cwd.trust_level",
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
    restored_files=[
        Grant(
            ".codex/auth.json",
            "credentials: a sign-in or token refresh inside cannot be told from a swapped "
            "account, so it is not kept; sign in outside egg, or use CODEX_API_KEY",
        ),
        Grant(".codex/AGENTS.md", "instructions it follows in every project"),
        Grant(".codex/AGENTS.override.md", "instructions it follows in every project"),
    ],
    code_dirs=[
        Grant(".codex/rules", 'command rules: decision = "allow" runs a command unasked'),
        Grant(".codex/skills", "skills it loads by itself, with the scripts they run"),
        Grant(".agents/skills", "skills it loads by itself, with the scripts they run"),
    ],
    project_code_dirs=[
        Grant(".codex/rules", "project command rules: allow rules run a command unasked"),
        Grant(".codex/skills", "project skills it loads by itself"),
        Grant(".agents/skills", "project skills it loads by itself"),
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


# -- conversation history (see egg_core.history) ------------------------------------------------

_ROLLOUT = re.compile(r"rollout-.*-([0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\.jsonl")
#: a session_meta line holds Codex's whole base instructions: read this much for it
_META_BYTES = 256 * 1024
#: clocks: a rollout's own timestamp may be this much before the session's recorded start
_SLACK = 5.0


def _days(since: float) -> list[str]:
    """``YYYY/MM/DD`` from the day ``since`` falls on (local time and UTC) to today."""
    days = []
    start = datetime.date.fromtimestamp(since) - datetime.timedelta(days=1)
    today = datetime.date.today() + datetime.timedelta(days=1)
    while start <= today:
        days.append(start.strftime("%Y/%m/%d"))
        start += datetime.timedelta(days=1)
    return days


def _meta(root: object, file: str) -> dict[str, object]:
    head = read_head(root, file, _META_BYTES)  # type: ignore[arg-type]
    if not head:
        return {}
    try:
        record = json.loads(head.split(b"\n", 1)[0])
    except ValueError:
        return {}
    payload = record.get("payload") if isinstance(record, dict) else None
    if record.get("type") != "session_meta" or not isinstance(payload, dict):
        return {}
    return payload


def _when(payload: dict[str, object]) -> float:
    try:
        stamp = str(payload.get("timestamp", "")).replace("Z", "+00:00")
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


@hookimpl
def egg_history_capture(agent: AgentProfile, ctx: HistoryContext) -> Transcript | None:
    """The rollout of this session: the one with the id egg learnt, or else the newest written
    since the session started whose ``session_meta`` names the session's directory (another
    project's rollout written at the same moment is not ours)."""
    if agent.name != PROFILE.name:
        return None
    root = ctx.agent_path(PROFILE, ".codex")
    if root is None:
        return None
    best: tuple[float, Transcript] | None = None
    for day in _days(ctx.started_after):
        for name, mtime in list_names(root, f"sessions/{day}"):
            match = _ROLLOUT.fullmatch(name)
            if match is None:
                continue
            file = f"sessions/{day}/{name}"
            if ctx.agent_session_id:
                if match.group(1) == ctx.agent_session_id:
                    return Transcript(agent_session_id=match.group(1), root=root, file=file)
                continue
            if mtime < ctx.started_after:
                continue
            payload = _meta(root, file)
            if payload.get("cwd") != str(ctx.cwd) or payload.get("id") != match.group(1):
                continue
            when = _when(payload)
            if when < ctx.started_after - _SLACK:
                continue
            found = Transcript(agent_session_id=match.group(1), root=root, file=file)
            if best is None or when > best[0]:
                best = (when, found)
    return best[1] if best else None


@hookimpl
def egg_history_restore(
    agent: AgentProfile, ctx: HistoryContext, captured: Transcript
) -> Transcript | None:
    """Back where it was under CODEX_HOME (``codex resume`` finds a rollout by its id)."""
    if agent.name != PROFILE.name or not _ROLLOUT.fullmatch(captured.file.rsplit("/", 1)[-1]):
        return None
    root = ctx.agent_path(PROFILE, ".codex")
    if root is None:
        return None
    return Transcript(agent_session_id=captured.agent_session_id, root=root, file=captured.file)


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


#: how the AGENTS.md instructions Codex adds as a user message open and close (codex-rs
#: ``AGENTS_MD_START_MARKER`` / ``AGENTS_MD_END_MARKER``; 0.171 writes them into the rollout)
_AGENTS_MD = ("# agents.md instructions for ", "</instructions>")


def _context(text: str) -> bool:
    """Whether a user message is context Codex added, not what the user typed: its own test
    (``is_contextual_user_fragment``) for the AGENTS.md instructions (their markers, either
    case), and any message that opens with a tag (``<environment_context>``,
    ``<user_shell_command>``, ``<turn_aborted>``, ``<skill>``, ...)."""
    body = text.strip()
    opens, closes = _AGENTS_MD
    if body[: len(opens)].lower() == opens and body[-len(closes) :].lower() == closes:
        return True
    return text.lstrip().startswith("<")


def _turns(records: Iterable[dict[str, Any]]) -> Iterator[Turn]:
    """Each rollout item's turns as it is read: an item stands alone in Codex's format."""
    for record in records:
        payload = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            for block in payload.get("content") or ():
                text = block.get("text") if isinstance(block, dict) else None
                if not isinstance(text, str) or (payload["role"] == "user" and _context(text)):
                    continue
                yield Turn(role=str(payload["role"]), text=text)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            arguments = payload.get("arguments") or payload.get("input") or payload.get("action")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            name = str(payload.get("name") or ("shell" if kind == "local_shell_call" else "?"))
            yield Turn(role="tool", tool=name, text=cut(text))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            if isinstance(output, dict):
                output = output.get("content", "")
            yield Turn(role="tool", text=cut(str(output or "")))
