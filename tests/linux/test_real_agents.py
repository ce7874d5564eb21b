"""The real agent CLIs, installed from npm, under egg, from a fresh home (the real-agent tier).

Each agent talks to a stand-in model server on the host's loopback
(:mod:`egg_core.testing.modelserver`), forwarded into the sandbox with ``network: {local_ports:
[PORT]}``; it starts, completes a turn, writes its transcript, and leaves the home with only its
own state changed. The CLIs are installed once (pinned versions) into a cache directory that
outlives the clone: ``$EGG_TEST_AGENTS_DIR``, default ``/var/cache/egg-test-agents``. When npm
cannot install them the tier fails; it is never skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from egg_core.testing.modelserver import ModelServer
from tests import agent_clis
from tests.agent_clis import PACKAGES
from tests.tmux import Tmux

from .conftest import EGG, Box, Result, only_session

ANSWER = "EGG-ANSWER-OK"


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    """The directory holding the four CLIs (:mod:`tests.agent_clis`: installed with npm once
    per set of versions, started early by a run that includes this tier)."""
    try:
        return agent_clis.installed()
    except agent_clis.InstallFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(answer=ANSWER) as server:
        yield server


# -- what a home looks like, to check that a run changed only the agent's own state


def home_state(home: Path) -> dict[str, Any]:
    """Every path under the home with what it is and holds (files: a digest)."""
    state: dict[str, Any] = {}
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            path = Path(root) / name
            st = path.lstat()
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                state[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                state[str(path)] = ("dir" if path.is_dir() else "other", st.st_mode)
    return state


def own_state(box: Box, agent: str) -> tuple[list[str], list[str]]:
    """The agent's own places, as ``egg explain`` lists them: (trees — its writable directories,
    its home files, $EGG_HOME —, prefixes — a ``rw-prefix`` directory such as ~/.claude also
    covers the names that start with it, ~/.claude.json)."""
    result = box.run("explain", agent, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    mine = [e for e in data["fs"] if e["source"] == f"agent:{agent}"]
    trees = [e["path"] for e in mine if e["mode"] == "rw"]
    trees += [h["value"] for h in data["drilled"] if h["kind"] == "home_file"]
    prefixes = [e["path"] for e in mine if e["mode"] == "rw-prefix"]
    return [*trees, str(box.egg_home)], prefixes


def changed_outside(
    before: dict[str, Any], after: dict[str, Any], own: tuple[list[str], list[str]]
) -> list[str]:
    trees, prefixes = own

    def mine(path: str) -> bool:
        return (
            any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)
            or any(path.startswith(p) for p in prefixes)
            # a directory egg made on the way to one of them (~/.local for ~/.local/share/x)
            or (after.get(path, ("",))[0] == "dir" and any(t.startswith(path + "/") for t in trees))
        )

    paths = set(before) | set(after)
    return sorted(p for p in paths if before.get(p) != after.get(p) and not mine(p))


def run_agent(
    box: Box,
    model: ModelServer,
    agent: str,
    agent_bin: Path,
    argv: list[str],
    env: dict[str, str] | None = None,
    allow_env: tuple[str, ...] = (),
) -> tuple[Result, dict[str, Any]]:
    """Run the agent under egg; (its result, the home as it was right before)."""
    box.config({"network": {"local_ports": [model.port]}, "env": list(allow_env)})
    before = home_state(box.home)
    binary = agent_bin / argv[0]
    path = f"{agent_bin}:/usr/local/bin:/usr/bin:/bin"
    result = box.exec(
        str(binary),
        *argv[1:],
        options=["--agent", agent],
        env={"PATH": path, **(env or {})},
        timeout=180,
    )
    return result, before


def check_run(box: Box, agent: str, result: Result, before: dict[str, Any]) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert ANSWER in result.stdout, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    outside = changed_outside(before, home_state(box.home), own_state(box, agent))
    assert outside == [], outside


# -- the agents


def test_claude_code(box: Box, model: ModelServer, agent_bin: Path) -> None:
    key = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-egg-test"}
    result, before = run_agent(box, model, "claude", agent_bin, ["claude", "-p", "hi"], env=key)

    check_run(box, "claude", result, before)
    transcripts = list((box.home / ".claude" / "projects").glob("*/*.jsonl"))
    assert transcripts and ANSWER in transcripts[0].read_text()
    # its state file was replaced atomically inside, written back, and found by the next run
    state = json.loads((box.home / ".claude.json").read_text())
    assert state["userID"] and state["firstStartTime"], state
    assert any(path.endswith("/v1/messages?beta=true") for _, path in model.requests)
    again, _ = run_agent(box, model, "claude", agent_bin, ["claude", "-p", "hi"], env=key)
    assert again.returncode == 0, again.stderr
    later = json.loads((box.home / ".claude.json").read_text())
    assert (later["userID"], later["firstStartTime"]) == (state["userID"], state["firstStartTime"])


CODEX_CONFIG = """model_provider = "egg"
model = "egg-model"

[analytics]
enabled = false

[features]
plugins = false

[model_providers.egg]
name = "egg"
base_url = "{url}/v1"
wire_api = "responses"
supports_websockets = false
"""


def test_codex(box: Box, model: ModelServer, agent_bin: Path) -> None:
    box.write(".codex/config.toml", CODEX_CONFIG.format(url=model.url), 0o600)

    result, before = run_agent(
        box, model, "codex", agent_bin, ["codex", "exec", "--skip-git-repo-check", "hi"]
    )

    check_run(box, "codex", result, before)
    rollouts = list((box.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert rollouts and ANSWER in rollouts[0].read_text()
    # the user's provider survives the run (the settings guard leaves ordinary keys alone)
    assert 'model_provider = "egg"' in (box.home / ".codex" / "config.toml").read_text()


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
}


def test_gemini_cli(box: Box, model: ModelServer, agent_bin: Path) -> None:
    box.write(".gemini/settings.json", json.dumps(GEMINI_SETTINGS), 0o600)

    result, before = run_agent(
        box,
        model,
        "gemini",
        agent_bin,
        ["gemini", "--skip-trust", "-p", "hi"],
        env={"GEMINI_API_KEY": "egg-test-key", "GOOGLE_GEMINI_BASE_URL": model.url},
    )

    check_run(box, "gemini", result, before)
    chats = list((box.home / ".gemini" / "tmp").glob("*/chats/session-*"))
    assert chats and ANSWER in chats[0].read_text()
    assert json.loads((box.home / ".gemini" / "settings.json").read_text()) == GEMINI_SETTINGS


def opencode_config(url: str) -> str:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "egg",
        "options": {"baseURL": f"{url}/v1", "apiKey": "egg-test-key"},
        "models": {"egg-model": {"name": "egg-model"}},
    }
    config = {
        "model": "egg/egg-model",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"egg": provider},
    }
    return json.dumps(config)


def test_opencode(box: Box, model: ModelServer, agent_bin: Path) -> None:

    result, before = run_agent(
        box,
        model,
        "opencode",
        agent_bin,
        ["opencode", "run", "hi"],
        env={
            "OPENCODE_CONFIG_CONTENT": opencode_config(model.url),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            # its start-up plugin install goes to the stand-in (a 404), not the internet
            "npm_config_registry": f"{model.url}/npm/",
        },
        allow_env=("OPENCODE_DISABLE_MODELS_FETCH", "npm_config_registry"),
    )

    check_run(box, "opencode", result, before)
    database = box.home / ".local" / "share" / "opencode" / "opencode.db"
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        (parts,) = db.execute("SELECT count(*) FROM part WHERE data LIKE ?", (f"%{ANSWER}%",))
        [(session,)] = db.execute("SELECT id FROM session").fetchall()
    assert parts[0] >= 1
    # egg keeps no copy of opencode's conversations (its plugin declines: one SQLite database
    # for every project); opencode resumes its own, which persists in its directory
    requests_before = len(model.bodies)
    again, _ = run_agent(
        box,
        model,
        "opencode",
        agent_bin,
        ["opencode", "run", "--session", session, "second question"],
        env={
            "OPENCODE_CONFIG_CONTENT": opencode_config(model.url),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "npm_config_registry": f"{model.url}/npm/",
        },
        allow_env=("OPENCODE_DISABLE_MODELS_FETCH", "npm_config_registry"),
    )
    assert again.returncode == 0, again.stderr
    resumed = json.dumps(model.bodies[requests_before:])
    assert '"hi"' in resumed and "second question" in resumed


def test_opencode_reattached_in_a_tmux_pane_shows_its_ui_and_ends_right(
    box: Box, model: ModelServer, agent_bin: Path, pane: Tmux
) -> None:
    """Issue 24: the real opencode TUI in a tmux pane (TERM=tmux-256color: it wraps some of its
    queries in tmux's passthrough), detached and reattached: the pane shows its UI, and after it
    exits the pane is on the main screen, the cursor shown, ``[exited]`` said."""
    box.config(
        {
            "network": {"local_ports": [model.port]},
            "env": ["OPENCODE_DISABLE_MODELS_FETCH", "npm_config_registry"],
        }
    )
    pane.env.update(
        PATH=f"{agent_bin}:/usr/local/bin:/usr/bin:/bin",
        OPENCODE_CONFIG_CONTENT=opencode_config(model.url),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        npm_config_registry=f"{model.url}/npm/",
    )
    pane.start("sh", box.workspace, cols=100, rows=30)
    pane.keys(f"{EGG} run opencode", "Enter")
    pane.wait_for("Ask anything", timeout=120)
    session = only_session(box)
    try:
        pane.keys("C-\\")
        pane.wait_for(f"egg attach {session} to return")
        pane.keys("clear", "Enter")
        pane.wait_for_gone("egg attach")

        pane.keys(f"{EGG} attach {session}", "Enter")
        shown = pane.wait_for("Ask anything", timeout=60)

        assert PACKAGES["opencode"].rsplit("@", 1)[1] in shown, shown  # its status bar too
        assert pane.flags()["alternate_on"] == "1"
        pane.keys("C-c")  # opencode's exit, with nothing typed
        shown = pane.wait_for("[exited", timeout=60)
        assert pane.flags()["alternate_on"] == "0" and pane.flags()["cursor_flag"] == "1"
        assert "Ask anything" not in shown
    finally:
        box.run("kill", session)  # (ended already, unless a check failed)


#: an opencode tool whose module, imported, leaves ``name`` in the home (opencode imports every
#: ``{tool,tools}/*.{js,ts}`` of its config directories, in its own process: 1.18's binary)
OPENCODE_TOOL = """import {{ writeFileSync }} from "fs"
writeFileSync(`${{process.env.HOME}}/{name}`, "ran")
export default {{ description: "a tool", args: {{}}, async execute() {{ return "ok" }} }}
"""


def test_an_opencode_tool_the_sandbox_plants_never_runs_on_the_host(
    box: Box, model: ModelServer, agent_bin: Path
) -> None:
    """Threat R with the real opencode: the sandbox (a first run: ~/.config/opencode does not
    exist yet) cannot leave a tool in ~/.config/opencode/tool; the real opencode, run on the
    host afterwards, runs the user's own tool from there and no other."""
    tool = OPENCODE_TOOL.format(name="PLANTED").replace("'", "'\\''")
    planted = box.exec(
        "sh",
        "-c",
        f"mkdir -p ~/.config/opencode/tool ~/.config/opencode/tools; "
        f"printf '%s' '{tool}' > ~/.config/opencode/tool/evil.ts; "
        f"printf '%s' '{tool}' > ~/.config/opencode/tools/evil.ts; true",
        options=["--agent", "opencode"],
    )
    assert planted.returncode == 0, planted.stderr
    box.write(".config/opencode/tool/mine.ts", OPENCODE_TOOL.format(name="MINE"))

    env = box.env(
        {
            "PATH": f"{agent_bin}:/usr/local/bin:/usr/bin:/bin",
            "OPENCODE_CONFIG_CONTENT": opencode_config(model.url),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "npm_config_registry": f"{model.url}/npm/",
        }
    )
    host = subprocess.run(
        box.identity.wrap([str(agent_bin / "opencode"), "run", "hi"]),
        env=env,
        cwd=box.workspace,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert host.returncode == 0, host.stderr
    assert (box.home / "MINE").exists(), "the host's opencode did not load its tool directory"
    assert not (box.home / "PLANTED").exists(), "a tool the sandbox planted ran on the host"
    assert not list((box.home / ".config" / "opencode").rglob("evil.ts"))


def _host_gemini(
    box: Box, model: ModelServer, agent_bin: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """The real gemini run by the user on the host (no egg), headless, in ``cwd``."""
    env = box.env(
        {
            "PATH": f"{agent_bin}:/usr/local/bin:/usr/bin:/bin",
            "GEMINI_API_KEY": "egg-test-key",
            "GOOGLE_GEMINI_BASE_URL": model.url,
        }
    )
    return subprocess.run(
        box.identity.wrap([str(agent_bin / "gemini"), "-p", "hi"]),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_trust_for_every_folder_recorded_inside_never_reaches_the_hosts_gemini(
    box: Box, model: ModelServer, agent_bin: Path
) -> None:
    """Threat R with the real gemini: the sandbox records ``/`` as trusted; the real gemini,
    run on the host afterwards in another project, still finds that project untrusted — so
    it neither loads its environment file (a ``GIT_TRACE`` there would make the git it starts
    by itself write where it names) nor answers (0.61 refuses an untrusted folder headless)."""
    box.write(".gemini/settings.json", json.dumps(GEMINI_SETTINGS), 0o600)
    trust = json.dumps({"/": "TRUST_FOLDER"}).replace('"', '\\"')
    planted = box.exec(
        "sh", "-c", f'echo "{trust}" > ~/.gemini/trustedFolders.json', options=["--agent", "gemini"]
    )
    assert planted.returncode == 0, planted.stderr
    other = box.mkdir(box.root / "other")
    traced = box.witness("TRACED")
    box.write(other / ".env", f"GIT_TRACE={traced}\n")

    host = _host_gemini(box, model, agent_bin, other)

    assert host.returncode != 0 and "not running in a trusted directory" in host.stderr, (
        host.stdout + host.stderr
    )
    assert not traced.exists(), "the host's gemini loaded an untrusted folder's .env"
    assert model.requests == []


def test_a_variable_the_sandbox_adds_to_the_workspaces_env_never_reaches_the_hosts_gemini(
    box: Box, model: ModelServer, agent_bin: Path
) -> None:
    """Threat R with the real gemini: in a workspace the user trusts, 0.61 copies every
    variable of ``./.env`` it does not have into its own environment and so into the git it
    starts by itself at every start (``LD_PRELOAD`` there runs code; ``GIT_TRACE``, used
    here, writes where it names). The sandbox adds one; the real gemini, run on the host
    afterwards, answers and never sees it."""
    box.write(".gemini/settings.json", json.dumps(GEMINI_SETTINGS), 0o600)
    box.write(".gemini/trustedFolders.json", json.dumps({str(box.workspace): "TRUST_FOLDER"}))
    box.write(box.workspace / ".env", "APP_MODE=dev\n")
    traced = box.witness("TRACED")
    planted = box.exec(
        "sh", "-c", f"echo GIT_TRACE={traced} >> .env", options=["--agent", "gemini"]
    )
    assert planted.returncode == 0, planted.stderr

    host = _host_gemini(box, model, agent_bin, box.workspace)

    assert host.returncode == 0 and ANSWER in host.stdout, host.stdout + host.stderr
    assert not traced.exists(), "a variable the sandbox planted reached the host's gemini"


#: runs the dotenv parser Gemini 0.61 bundles (its own text, cut out of the bundle) over every
#: text on stdin: for each, the [name, raw value] of each assignment its expression finds
DOTENV_PROBE = r"""
const fs = require("fs");
const bundle = fs.readFileSync(process.argv[1], "utf8");
const at = bundle.indexOf("var LINE = ", bundle.indexOf("node_modules/dotenv/lib/main.js"));
const line = bundle.slice(at, bundle.indexOf("\n", at));
const LINE = new Function(line + "; return LINE;")();
const texts = JSON.parse(fs.readFileSync(0, "utf8"));
const out = texts.map((text) => {
  const found = [];
  LINE.lastIndex = 0;
  let match;
  while ((match = LINE.exec(text)) != null) found.push([match[1], match[2] || ""]);
  return found;
});
process.stdout.write(JSON.stringify(out));
"""


def test_egg_reads_a_dotenv_file_as_geminis_own_parser_does(agent_bin: Path) -> None:
    """The workspace's .env is guarded by its variables (egg_core.settings_keys): which text is
    a variable, and which its value, must be what Gemini 0.61's dotenv finds, or a variable
    could hide from the revert. Thousands of texts built from the characters that matter."""
    import random

    from egg_core import settings_keys

    node = shutil.which("node")
    assert node, "the real-agent tier needs node"
    bundle = next(
        p
        for p in (agent_bin / "gemini").resolve().parent.glob("chunk-*.js")
        if "node_modules/dotenv/lib/main.js" in p.read_text()
    )
    pieces = ["A", "B_1", "export", " ", "\t", "\n", "=", ":", "#", "'", '"', "`", "\\"]
    pieces += ["x", "\u2028", "\xa0", "\ufeff", ".", "-", "\n\n", "A=", "export B="]
    rng = random.Random(22)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(4000)]
    texts += ["A=1\nB='x\ny'\n", 'A="a\\"b"\n', "A=\n'v'", "A\n=1", "A: 1 # c\n# d"]

    proc = subprocess.run(
        [node, "-e", DOTENV_PROBE, str(bundle)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode == 0, proc.stderr
    theirs = json.loads(proc.stdout)
    for text, found in zip(texts, theirs, strict=True):
        ours = [[m.group(1), m.group(2) or ""] for m in settings_keys._dotenv_matches(text)]
        assert ours == found, repr(text)


# -- conversations: captured from a real run, wiped, put back, resumed by the real agent


def run_session(
    box: Box, model: ModelServer, agent_bin: Path, *args: str, env: dict[str, str]
) -> str:
    """``egg run --detach ARGS`` as the box user, waited until it ended; the session id."""
    path = f"{agent_bin}:/usr/local/bin:/usr/bin:/bin"
    result = box.run("run", "--detach", *args, env={"PATH": path, **env}, timeout=60)
    assert result.returncode == 0, result.stderr
    session = result.stdout.strip()
    meta = box.egg_home / "sessions" / session / "egg.meta"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        state = json.loads(meta.read_text()).get("state") if meta.exists() else None
        if state in ("exited", "failed", "crashed"):
            break
        time.sleep(0.2)
    data = json.loads(meta.read_text())
    assert data.get("state") == "exited" and data.get("exit_code") == 0, (
        data,
        (box.egg_home / "sessions" / session / "egg.log").read_text(),
    )
    return session


RESUMABLE = {
    "claude": (
        ["-p", "first question"],
        ["-p", "second question"],
        lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-egg-test"},
        ".claude/projects",
    ),
    "codex": (
        ["exec", "--skip-git-repo-check", "first question"],
        None,  # codex resume ID is its interactive TUI; codex exec resume ID is what -p would be
        lambda url: {},
        ".codex/sessions",
    ),
    "gemini": (
        ["--skip-trust", "-p", "first question"],
        ["--skip-trust", "-p", "second question"],
        lambda url: {"GEMINI_API_KEY": "egg-test-key", "GOOGLE_GEMINI_BASE_URL": url},
        ".gemini/tmp",
    ),
}


@pytest.mark.parametrize("agent", sorted(RESUMABLE))
def test_a_real_conversation_is_captured_and_resumed_after_its_files_are_gone(
    box: Box, model: ModelServer, agent_bin: Path, agent: str
) -> None:
    first, second, keys, state_dir = RESUMABLE[agent]
    box.config({"network": {"local_ports": [model.port]}})
    if agent == "codex":
        box.write(".codex/config.toml", CODEX_CONFIG.format(url=model.url), 0o600)
    if agent == "gemini":
        box.write(".gemini/settings.json", json.dumps(GEMINI_SETTINGS), 0o600)
    session = run_session(box, model, agent_bin, agent, *first, env=keys(model.url))
    listed = box.run("history", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert entry["session"] == session and entry["title"] == "first question", entry
    shown = box.run("history", "show", session)
    assert "first question" in shown.stdout and ANSWER in shown.stdout, shown.stdout
    for transcript in (box.home / state_dir).rglob("*.jsonl"):
        transcript.unlink()  # the agent's own copy is gone: only egg's capture is left
    if second is None:
        # codex: the restore and the resume argv, as far as a non-interactive run goes
        again = run_session(box, model, agent_bin, "codex", "--resume", "--help", env={})
        spec = json.loads((box.egg_home / "sessions" / again / "spec.json").read_text())
        assert spec["resume_id"] == entry["agent_session_id"]
        assert list((box.home / state_dir).rglob(f"*{entry['agent_session_id']}.jsonl"))
        requests_before = len(model.bodies)
        path = f"{agent_bin}:/usr/local/bin:/usr/bin:/bin"
        resumed_run = box.exec(
            str(agent_bin / "codex"),
            *[
                "exec",
                "--skip-git-repo-check",
                "resume",
                entry["agent_session_id"],
                "second question",
            ],
            options=["--agent", "codex"],
            env={"PATH": path},
            timeout=180,
        )
        assert resumed_run.returncode == 0, resumed_run.stderr
        resumed = json.dumps(model.bodies[requests_before:])
        assert "first question" in resumed and "second question" in resumed
        return
    requests_before = len(model.bodies)
    again = run_session(box, model, agent_bin, agent, "--resume", *second, env=keys(model.url))
    resumed = json.dumps(model.bodies[requests_before:])
    # the real agent loaded the restored transcript: the earlier turn goes to the model again
    assert "first question" in resumed and "second question" in resumed
    # and it is still one conversation: one row, of two runs, named by the newest
    [row] = json.loads(box.run("history", "--json").stdout)
    assert row["sessions"] == [again, session] and row["runs"] == 2, row
    assert row["title"] == "first question", row


def test_a_resumed_claude_conversation_is_one_row_titled_as_it_was_typed(
    box: Box, model: ModelServer, agent_bin: Path
) -> None:
    """The real claude, started with a project's slash command and then resumed: ``egg
    history`` lists one conversation of two runs, titled as the command was typed (claude
    writes it as ``<command-message>…<command-name>/hello</command-name>…`` markup)."""
    keys = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-egg-test"}
    box.config({"network": {"local_ports": [model.port]}})
    box.write(box.workspace / ".claude" / "commands" / "hello.md", "Say hello to $ARGUMENTS\n")
    first = run_session(box, model, agent_bin, "claude", "-p", "/hello world", env=keys)
    requests_before = len(model.bodies)
    second = run_session(
        box, model, agent_bin, "claude", "--resume", "-p", "second question", env=keys
    )
    assert "Say hello to world" in json.dumps(model.bodies[requests_before:])  # resumed

    listed = box.run("history", "--json")
    table = box.run("history")

    assert listed.returncode == 0 and table.returncode == 0, listed.stderr + table.stderr
    [row] = json.loads(listed.stdout)
    assert row["session"] == second and row["sessions"] == [second, first], row
    assert row["runs"] == 2 and row["title"] == "/hello world", row
    header, line = table.stdout.splitlines()
    assert header.split()[5:8] == ["LAST", "USED", "RUNS"], header
    assert line.startswith(second) and line.split()[7] == "2", line
    assert line.endswith("  /hello world"), line
    shown = box.run("history", "show", second)
    assert "user:\n/hello world" in shown.stdout and "user:\nsecond question" in shown.stdout
