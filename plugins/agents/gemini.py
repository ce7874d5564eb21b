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
- relaunch (0.61 bundle: packages/cli/index.ts, utils/processUtils.ts, utils/relaunch.ts):
  after "Trust folder", a sign-in or a setting that needs a restart, Gemini exits with
  RELAUNCH_EXIT_CODE (199) for its launcher to start it again. Its own launcher — the first
  node process, which spawns the real one — exists only when neither GEMINI_CLI_NO_RELAUNCH
  nor SANDBOX is set; inside a sandbox it is the sandbox's launcher that starts it again
  (start_sandbox runs in relaunchOnExitCode, from outside). With SANDBOX=egg that launcher is
  egg: ``relaunch_exit_code`` makes the session start it again, so the first run goes on to
  the chat prompt and SANDBOX keeps what it gives. The trust answer is in
  ~/.gemini/trustedFolders.json, which the sandbox writes and the guard keeps for the
  workspace; the relaunch resumes the conversation under egg's id once Gemini has written it
  (``--session-id`` of a session that exists is refused: "already exists").
- settings.json may have comments (every load strips them) and ``$VAR`` values; project hooks
  run after a warning (~/.gemini/trusted_hooks.json only silences it).
- GEMINI_FORCE_FILE_STORAGE keeps tokens in files rather than a keychain (gemini-cli PR #6347).
- history, verified with 0.61 against a stand-in model (tests/history/fixtures/gemini.jsonl is
  such a run): ``--session-id UUID`` starts a conversation with that id, ``--resume UUID``
  appends to it. The file is ``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id[:8]>.jsonl``
  under ~/.gemini, ``<project>`` a short name (``projects.json`` maps directories to them; the
  directory's ``.project_root`` holds the path it stands for). The first line holds
  ``sessionId``; then ``{"$set": {...}}`` records change the session's fields (``messages``
  among them) and plain records append a message (``type`` ``user`` or ``gemini``, ``content``
  a string or text parts, ``toolCalls`` with names).
- its own permission system (threat R), from the 0.61 bundle: the settings schema
  (SETTINGS_SCHEMA) — ``tools.core``/``exclude``/``confirmationRequired`` (which tools exist and
  which ask), its sandbox's paths and network, ``security.*`` (YOLO refused, "always allow"
  options, permanent approvals, extension sources, folder trust, secret redaction, the
  security checker, the sign-in it insists on), ``mcp.allowed``/``excluded``, the policy files
  it loads (``policyPaths``, ``adminPolicyPaths``), what is disabled (``extensions.disabled``,
  ``skills.disabled``) and the Gemma router's binary, which it starts
  (``experimental.gemmaModelRouter``). ``tools.autoAccept`` is not in 0.61's schema (older
  releases auto-approved "safe" tools with it): still put back. Directories, from the
  bundle's Storage class: ``~/.gemini/{commands,skills,agents,policies}`` and
  ``~/.agents/skills`` (getUserCommandsDir … getUserPoliciesDir, getUserAgentSkillsDir), a
  project's ``.gemini/{commands,skills,agents}`` and ``.agents/skills``; a custom command's
  ``!{…}`` runs a shell command, a policy's ``decision = "allow"`` approves a tool call
  (docs/reference/policy-engine.md). A project's ``.gemini/policies`` is not loaded by 0.61
  (``disableWorkspacePolicies = true``) but guarded all the same: its loader is there.
  ``GEMINI.md`` (getGlobalMemoryFilePath) is the instructions of every session — save_memory
  writes there, so a memory saved inside egg is not kept; ``oauth_creds.json`` the sign-in
  (Google does not rotate its refresh token, so restoring it costs nothing).
- trust, from the 0.61 bundle (packages/core/src/utils/trust.ts): ``~/.gemini/trustedFolders.json``
  (Storage.getTrustedFoldersPath) maps a path to ``TRUST_FOLDER``, ``TRUST_PARENT`` or
  ``DO_NOT_TRUST``; isPathTrusted takes the longest rule whose path holds the folder, and
  ``TRUST_PARENT`` stands for the rule's parent folder — so ``{"/": "TRUST_FOLDER"}`` trusts
  every folder, and ``TRUST_PARENT`` on the workspace trusts its parent and every sibling. In a
  trusted folder Gemini loads that folder's settings, hooks, MCP servers and environment file.
  Kept: the workspace's own ``TRUST_FOLDER`` or ``DO_NOT_TRUST``; every other change is put back.
- environment files, from the 0.61 bundle (loadEnvironment, findEnvFile): from the folder it
  starts in upwards, the first ``.gemini/.env`` (trusted folders only) or ``.env``, else
  ``~/.gemini/.env``, ``~/.env``; parsed by the dotenv package. In a trusted folder *every*
  variable there that its environment lacks is set in its own process — and so in every program
  it starts, unasked ones too: at every start it runs ``git rev-parse`` and ``/bin/sh -c lspci``
  and the like (strace of 0.61), and a ``LD_PRELOAD`` in a project's ``.env`` ran code on the
  host there (tried); untrusted, only GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_CLOUD_PROJECT and
  GOOGLE_CLOUD_LOCATION (AUTH_ENV_VAR_WHITELIST), which pick the account and project the user's
  prompts go to. A list of the variables that matter cannot be complete (what the programs it
  starts read is open-ended), so in a gemini run every variable of the workspace's ``.env`` is
  put back — it is ordinary project content too, so only its variables: the agent's comments and
  layout stay, and other agents' runs keep every change (each agent's project settings are
  guarded in that agent's runs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from egg_core.api import (
    AgentProfile,
    ArrayLine,
    EnvDefault,
    Grant,
    HistoryContext,
    LongLine,
    RegisterAgent,
    Transcript,
    TranscriptReader,
    Turn,
    cut,
    hookimpl,
    is_uuid,
    list_names,
    read_head,
)

#: settings.json keys that make Gemini start a program on the host later, or run tools without
#: asking (the 0.61 settings schema, SETTINGS_SCHEMA in the bundle): hooks, MCP servers, the
#: tool discovery and call commands, its own sandbox command, the shell pager, auto-approved
#: tools, and every key that loosens its approvals (see the docstring). Sign-in, theme and the
#: rest are Gemini's to keep.
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
    "tools.autoAccept",
    "tools.core",
    "tools.exclude",
    "tools.confirmationRequired",
    "tools.sandboxAllowedPaths",
    "tools.sandboxNetworkAccess",
    "mcp.allowed",
    "mcp.excluded",
    "policyPaths",
    "adminPolicyPaths",
    "security.toolSandboxing",
    "security.disableYoloMode",
    "security.disableAlwaysAllow",
    "security.enablePermanentToolApproval",
    "security.autoAddToPolicyByDefault",
    "security.blockGitExtensions",
    "security.allowedExtensions",
    "security.folderTrust",
    "security.environmentVariableRedaction",
    "security.enableConseca",
    "security.auth.enforcedType",
    "extensions.disabled",
    "skills.disabled",
    "experimental.gemmaModelRouter",
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
        Grant(
            ".gemini/trustedFolders.json",
            "which folders it trusts: their settings, hooks, MCP servers and .env are loaded",
        ),
    ],
    project_settings_files=[
        Grant(".gemini/settings.json", "project hooks and MCP server commands"),
        Grant(".gemini/.env", "loaded into Gemini's environment in this project"),
        Grant(
            ".env",
            "every variable in it is loaded into Gemini's environment in this project, and "
            "into every program it starts",
        ),
    ],
    command_keys={
        ".gemini/settings.json": _SETTINGS_COMMANDS,
        # the workspace's own answer stays, unless it trusts the folder above it
        ".gemini/trustedFolders.json": ('*!cwd=["TRUST_FOLDER", "DO_NOT_TRUST"]',),
        # every variable (see the docstring): its comments and layout stay
        ".env": ("*",),
    },
    restored_files=[
        Grant(
            ".gemini/oauth_creds.json",
            "credentials: a sign-in inside cannot be told from a swapped account, so it is "
            "not kept; sign in outside egg, or use GEMINI_API_KEY",
        ),
        Grant(".gemini/GEMINI.md", "instructions (and saved memories) of every session"),
    ],
    code_dirs=[
        Grant(".gemini/extensions", "extensions bring MCP servers, hooks and commands it runs"),
        Grant(".gemini/commands", "custom commands; their !{...} lines run shell commands"),
        Grant(".gemini/skills", "skills it loads by itself"),
        Grant(".agents/skills", "skills it loads by itself"),
        Grant(".gemini/agents", "subagents, with the tools they may use"),
        Grant(".gemini/policies", 'policy rules: decision = "allow" approves a tool call'),
    ],
    project_code_dirs=[
        Grant(".gemini/extensions", "project extensions, loaded by gemini in this project"),
        Grant(".gemini/commands", "project commands; their !{...} lines run shell commands"),
        Grant(".gemini/skills", "project skills it loads by itself"),
        Grant(".agents/skills", "project skills it loads by itself"),
        Grant(".gemini/agents", "project subagents, with the tools they may use"),
        Grant(".gemini/policies", "workspace policy rules (a later release loads them)"),
    ],
    provider_url_vars=["GOOGLE_GEMINI_BASE_URL"],
    session_dir=".gemini/tmp",
    resume_flag="--resume",
    session_id_flag="--session-id",
    skip_permissions_flag="--approval-mode=yolo",
    relaunch_exit_code=199,
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)


# -- conversation history (see egg_core.history) ------------------------------------------------

_SESSION_FILE = re.compile(r"session-[0-9T:-]+-([0-9a-fA-F]{8})\.jsonl?")


def _projects(root: Path, cwd: Path) -> list[str]:
    """Gemini's project directories (under ``tmp/``) whose ``.project_root`` names ``cwd``."""
    found = []
    for project, _ in list_names(root, "tmp"):
        marker = read_head(root, f"tmp/{project}/.project_root", 4096) or b""
        if marker.decode("utf-8", "replace").strip() == str(cwd):
            found.append(project)
    return found


def _find(ctx: HistoryContext, session_id: str) -> Transcript | None:
    """The chat file of ``session_id`` in the project directory that stands for ctx.cwd."""
    root = ctx.agent_path(PROFILE, ".gemini")
    if root is None or not is_uuid(session_id):
        return None
    for project in _projects(root, ctx.cwd):
        for name, _ in list_names(root, f"tmp/{project}/chats"):
            match = _SESSION_FILE.fullmatch(name)
            if match is None or match.group(1) != session_id[:8]:
                continue
            file = f"tmp/{project}/chats/{name}"
            first = (read_head(root, file, 64 * 1024) or b"").split(b"\n", 1)[0]
            try:
                if json.loads(first).get("sessionId") == session_id:
                    return Transcript(agent_session_id=session_id, root=root, file=file)
            except (ValueError, AttributeError):
                continue
    return None


@hookimpl
def egg_history_capture(agent: AgentProfile, ctx: HistoryContext) -> Transcript | None:
    if agent.name != PROFILE.name or not ctx.agent_session_id:
        return None
    return _find(ctx, ctx.agent_session_id)


@hookimpl
def egg_history_restore(
    agent: AgentProfile, ctx: HistoryContext, captured: Transcript
) -> Transcript | None:
    """Where Gemini keeps this directory's chats now, or back where it was."""
    if agent.name != PROFILE.name or not is_uuid(captured.agent_session_id):
        return None
    root = ctx.agent_path(PROFILE, ".gemini")
    if root is None:
        return None
    name = captured.file.rsplit("/", 1)[-1]
    projects = _projects(root, ctx.cwd)
    file = f"tmp/{projects[0]}/chats/{name}" if projects else captured.file
    return Transcript(agent_session_id=captured.agent_session_id, root=root, file=file)


@hookimpl
def egg_history_render(agent: AgentProfile, data: bytes) -> list[Turn] | None:
    if agent.name != PROFILE.name:
        return None
    return list(_turns(TranscriptReader.of_bytes(data)))


@hookimpl
def egg_history_turns(agent: AgentProfile, transcript: TranscriptReader) -> Iterator[Turn] | None:
    if agent.name != PROFILE.name:
        return None
    return _turns(transcript)


def _turns(transcript: TranscriptReader) -> Iterator[Turn]:
    """The messages Gemini's chat file ends with, read twice instead of held.

    The file is a log of changes to one list of messages: a message record appends itself and
    drops every earlier message with its id (a message rewritten moves to the end); a ``$set``
    of ``messages`` replaces the whole list (at every resume: that line is as long as the
    conversation, and one longer than the reader holds is read an item at a time). Which
    messages remain is known only at the end, so a first pass notes the last rewrite and, of
    the records after it, where each id was last appended; the second prints the rewrite's
    messages whose id nothing later appends, then each later record that is its id's last.
    """
    plan = _Plan()
    for record in transcript.records(long=plan.long_line):
        plan.add(record)
    again = _Replay(plan)
    for index, record in enumerate(transcript.records(long=again.long_line)):
        if index < plan.rewrite:
            continue
        update = record.get("$set")
        if index == plan.rewrite:
            messages = update.get("messages") if isinstance(update, dict) else None
            for message in messages if isinstance(messages, list | Iterator) else ():
                if isinstance(message, dict) and _key(message.get("id")) not in plan.last:
                    yield from _message_turns(message)
        elif not isinstance(update, dict) and record.get("type") in ("user", "gemini"):
            key = _key(record.get("id"))
            if key is _NEVER_EQUAL or plan.last.get(key) == index:
                yield from _message_turns(record)


_REWRITE = ("$set", "messages")


class _Plan:
    """The first pass: the index of the last record that rewrote the list (-1: none), of the
    records after it where each id was last appended, and what each long line was."""

    def __init__(self) -> None:
        self.rewrite = -1
        self.last: dict[object, int] = {}
        #: per long line, in order: its record (its array emptied) or None, and whether the
        #: array is the rewrite's list (its items to be read again)
        self.long: list[tuple[dict[str, object] | None, bool]] = []
        self._index = 0

    def long_line(self, line: LongLine) -> dict[str, object] | None:
        array = ArrayLine.of(line, _REWRITE)
        if array is not None:
            for _ in array.items():
                pass  # checked, not held: the second pass reads them again
        record = array.record() if array is not None else None
        self.long.append((record, array is not None and array.streamed))
        return record

    def add(self, record: dict[str, object]) -> None:
        update = record.get("$set")
        if isinstance(update, dict):
            if isinstance(update.get("messages"), list):
                self.rewrite, self.last = self._index, {}
        elif record.get("type") in ("user", "gemini"):
            key = _key(record.get("id"))
            if key is not _NEVER_EQUAL:
                self.last[key] = self._index
        self._index += 1


class _Replay:
    """The second pass's long lines: the record the first pass made of each, and the
    rewrite's items read again as they are printed."""

    def __init__(self, plan: _Plan) -> None:
        self._plan = plan
        self._next = 0

    def long_line(self, line: LongLine) -> dict[str, object] | None:
        record, streamed = self._plan.long[self._next]
        self._next += 1
        array = ArrayLine.of(line, _REWRITE) if streamed else None
        if record is None or array is None:
            return record
        return {**record, "$set": {**_dict(record.get("$set")), "messages": array.items()}}


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


#: the key of an id equal to nothing, itself included (NaN)
_NEVER_EQUAL = object()


def _key(ident: object) -> object:
    """An id as a dict key that is equal where the ids are ``==`` (a list or object id is
    frozen; NaN is equal to nothing)."""
    if isinstance(ident, float) and ident != ident:
        return _NEVER_EQUAL
    return _frozen(ident)


def _frozen(value: object) -> object:
    if isinstance(value, list):
        return ("list", tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((k, _frozen(v)) for k, v in value.items()))
    return value


def _message_turns(message: dict[str, object]) -> Iterator[Turn]:
    role = "user" if message.get("type") == "user" else "assistant"
    content = message.get("content")
    parts = [content] if isinstance(content, str) else content
    for part in parts if isinstance(parts, list) else ():
        text = part.get("text") if isinstance(part, dict) else part
        if not isinstance(text, str) or not text.strip():
            continue
        if role == "user" and text.lstrip().startswith("<"):
            continue  # <session_context>: what Gemini injects, not what the user typed
        yield Turn(role=role, text=text)
    calls = message.get("toolCalls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            args = json.dumps(call.get("args", {}), ensure_ascii=False)
            yield Turn(role="tool", tool=str(call.get("name", "?")), text=cut(args))
