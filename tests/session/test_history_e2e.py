"""Conversations end to end, in real sandboxed sessions, with fake agent binaries on PATH that
write the real agents' transcript formats (tests/history/fixtures: real runs of claude 2.1.332,
codex 0.171, gemini 0.61): a new conversation is captured, listed, shown, wiped from the agent's
directory, resumed (the agent finds its transcript and gets its resume flag), and the bad inputs
and the symlink attacks fail as they must."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.session.test_sessions import TIMEOUT, egg, kill_daemon, session_dir, wait_exited

#: a fake ``claude``: writes its transcript where Claude Code does, from --session-id or
#: --resume (appending to it, as claude does), says which it got, and whether the transcript was
#: there on --resume
FAKE_CLAUDE = r"""#!/usr/bin/env python3
import json, os, re, sys, time
args = sys.argv[1:]
def flag(name):
    return args[args.index(name) + 1] if name in args else None
sid, resume = flag("--session-id"), flag("--resume")
ident = sid or resume
base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
root = os.path.join(base, "projects", re.sub(r"[^A-Za-z0-9]", "-", os.getcwd()))
os.makedirs(root, exist_ok=True)
path = os.path.join(root, ident + ".jsonl")
def say(*words):
    with open("agent-said.txt", "a") as out:
        out.write(" ".join(words) + "\n")
if resume:
    say("RESUMED", resume, "FOUND" if os.path.exists(path) else "MISSING")
else:
    say("NEW", sid)
asked = "question.txt"  # the workspace's question.txt, when there is one, is what was typed
question = open(asked).read() if os.path.exists(asked) else "please fix the flaky test"
with open(path, "a") as out:
    out.write(json.dumps({"type": "user", "sessionId": ident,
                          "message": {"role": "user", "content": question}}) + "\n")
    out.write(json.dumps({"type": "assistant", "sessionId": ident, "message": {
        "role": "assistant", "content": [
            {"type": "text", "text": "Looking at it."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}}]}}) + "\n")
if "--linger" in args:
    time.sleep(600)
"""

#: a fake ``codex``: a rollout as Codex writes it, its id chosen by itself
FAKE_CODEX = r"""#!/usr/bin/env python3
import datetime, json, os, sys, uuid
args = sys.argv[1:]
home = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
now = datetime.datetime.now()
if args[:1] == ["resume"]:
    ident = args[1]
    found = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(home, "sessions"))
             for f in fs if f.endswith(ident + ".jsonl")]
    with open("agent-said.txt", "a") as out:
        out.write(f"RESUMED {ident} {'FOUND' if found else 'MISSING'}\n")
    raise SystemExit(0)
ident = str(uuid.uuid4())
day = os.path.join(home, "sessions", now.strftime("%Y/%m/%d"))
os.makedirs(day, exist_ok=True)
stamp = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
with open(os.path.join(day, f"rollout-{now:%Y-%m-%dT%H-%M-%S}-{ident}.jsonl"), "w") as out:
    out.write(json.dumps({"type": "session_meta", "payload": {
        "id": ident, "timestamp": stamp, "cwd": os.getcwd()}}) + "\n")
    out.write(json.dumps({"type": "response_item", "payload": {
        "type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "rename the module"}]}}) + "\n")
with open("agent-said.txt", "a") as out:
    out.write(f"NEW {ident}\n")
"""


def install(project: Path, name: str, script: str) -> None:
    path = project / "bin" / name
    path.write_text(script)
    path.chmod(0o755)


def run_agent(env: dict[str, str], project: Path, *args: str) -> str:
    """``egg run --detach AGENT ARGS``, waited until it ended; the session id."""
    result = egg(env, "run", "--detach", *args, cwd=project)
    assert result.returncode == 0, result.stderr
    session = result.stdout.strip()
    wait_exited(env, session)
    return session


def said(project: Path) -> str:
    """What the fake agents said (they append it to a file in the workspace)."""
    path = project / "agent-said.txt"
    return path.read_text() if path.exists() else ""


def claude_dir(env: dict[str, str], project: Path) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    return Path(env["HOME"]) / ".claude" / "projects" / slug


def test_a_claude_conversation_is_captured_listed_shown_and_resumed(env, project):
    install(project, "claude", FAKE_CLAUDE)
    session = run_agent(env, project, "claude")
    meta = json.loads((session_dir(env, session) / "egg.meta").read_text())
    ident = meta["agent_session_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", ident)
    assert (claude_dir(env, project) / f"{ident}.jsonl").is_file()
    chat = session_dir(env, session) / "chat.jsonl.gz"
    assert chat.is_file() and (chat.stat().st_mode & 0o777) == 0o600

    listed = egg(env, "history", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert entry["session"] == session and entry["agent"] == "claude"
    assert entry["agent_session_id"] == ident and entry["directory"] == str(project)
    assert entry["title"] == "please fix the flaky test" and entry["size"] > 0
    assert entry["started"] and entry["ended"]
    table = egg(env, "history", cwd=project).stdout
    assert session in table and "please fix the flaky test" in table

    shown = egg(env, "history", "show", session, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "user:\nplease fix the flaky test" in shown.stdout
    assert "assistant:\nLooking at it." in shown.stdout and "[Bash]" in shown.stdout
    turns = json.loads(egg(env, "history", "show", session, "--json", cwd=project).stdout)
    assert turns[0] == {"role": "user", "text": "please fix the flaky test"}
    assert {"role": "tool", "tool": "Bash"}.items() <= turns[-1].items()

    ls = egg(env, "ls", "--all", cwd=project).stdout
    assert "resumable" in next(line for line in ls.splitlines() if session in line)

    for path in (Path(env["HOME"]) / ".claude" / "projects").rglob("*.jsonl"):
        path.unlink()  # the agent's directory wiped: only egg's capture is left
    resumed = egg(env, "run", "--detach", "claude", "--resume", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert "restored" in resumed.stderr
    again = resumed.stdout.strip()
    wait_exited(env, again)
    assert f"RESUMED {ident} FOUND" in said(project)
    spec = json.loads((session_dir(env, again) / "spec.json").read_text())
    assert spec["resume_id"] == ident
    # the conversation outlives its session's removal, unless asked
    removed = egg(env, "rm", session, cwd=project)
    assert removed.returncode == 0, removed.stderr
    [row] = json.loads(egg(env, "history", "--json", cwd=project).stdout)
    assert row["session"] == again and row["sessions"] == [again, session]
    assert "please fix the flaky test" in egg(env, "history", "show", session, cwd=project).stdout
    # the resumed session captures the same conversation again
    assert (
        json.loads((session_dir(env, again) / "chat.meta").read_text())["agent_session_id"] == ident
    )


def test_a_resumed_conversation_is_one_row_and_resume_goes_on_from_its_newest_copy(env, project):
    install(project, "claude", FAKE_CLAUDE)
    (project / "question.txt").write_text("<bash-input>git status</bash-input>")  # `!git status`
    first = run_agent(env, project, "claude")
    (project / "question.txt").unlink()
    second = run_agent(env, project, "claude", "--resume")
    third = run_agent(env, project, "claude", "--resume")
    ident = json.loads((session_dir(env, first) / "egg.meta").read_text())["agent_session_id"]
    assert said(project).count(f"RESUMED {ident} FOUND") == 2

    listed = egg(env, "history", "--json", cwd=project)
    table = egg(env, "history", cwd=project)

    assert listed.returncode == 0 and table.returncode == 0, listed.stderr + table.stderr
    [row] = json.loads(listed.stdout)
    metas = [json.loads((session_dir(env, s) / "egg.meta").read_text()) for s in (first, third)]
    assert row["session"] == third and row["agent_session_id"] == ident
    assert row["runs"] == 3 and row["sessions"] == [third, second, first]
    assert row["started"] == metas[0]["started"] and row["ended"] == metas[1]["ended"]
    assert row["last_used"] == metas[1]["ended"]
    assert row["title"] == "! git status"
    header, line = table.stdout.splitlines()
    assert "RUNS" in header and "LAST USED" in header and "ENDED" not in header
    assert line.startswith(third) and line.endswith("! git status") and " 3 " in line
    shown = egg(env, "history", "show", row["session"], cwd=project)
    assert shown.stdout.count("\nuser:\n") == 3 and "user:\n! git status" in shown.stdout

    for path in (Path(env["HOME"]) / ".claude" / "projects").rglob("*.jsonl"):
        path.unlink()  # only egg's copies are left: the resume must take the newest
    again = run_agent(env, project, "claude", "--resume")
    assert said(project).count(f"RESUMED {ident} FOUND") == 3
    [transcript] = claude_dir(env, project).glob("*.jsonl")
    users = [r for r in map(json.loads, transcript.read_text().splitlines()) if r["type"] == "user"]
    assert len(users) == 4  # the three runs' questions, put back, and this run's
    [row] = json.loads(egg(env, "history", "--json", cwd=project).stdout)
    assert row["sessions"] == [again, third, second, first]


def test_a_codex_rollout_is_found_by_its_directory_and_resumed_by_its_id(env, project):
    install(project, "codex", FAKE_CODEX)
    session = run_agent(env, project, "codex")
    meta = json.loads((session_dir(env, session) / "egg.meta").read_text())
    ident = meta["agent_session_id"]
    [entry] = json.loads(egg(env, "history", "--json", cwd=project).stdout)
    assert entry["agent_session_id"] == ident and entry["title"] == "rename the module"
    for path in (Path(env["HOME"]) / ".codex" / "sessions").rglob("*.jsonl"):
        path.unlink()
    resumed = egg(env, "run", "--detach", "codex", "--resume", session, cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    again = resumed.stdout.strip()
    wait_exited(env, again)
    assert f"RESUMED {ident} FOUND" in said(project)


def test_bad_resume_requests_are_one_line_and_exit_2(env, project):
    install(project, "claude", FAKE_CLAUDE)
    plain = run_agent(env, project, "--", "true")
    claude_session = run_agent(env, project, "claude")
    before = set(os.listdir(Path(env["EGG_HOME"]) / "sessions"))
    cases = [
        (["codex", "--resume", claude_session], "holds a claude conversation"),
        (["claude", "--resume", "zzzzzzzz"], "zzzzzzzz"),
        (["claude", "--resume", plain], "no captured conversation"),
        (["opencode", "--resume"], "keeps no conversation history"),
        (["codex", "--resume"], "no captured codex conversation"),
    ]
    for args, said in cases:
        result = egg(env, "run", "--detach", *args, cwd=project)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and said in result.stderr, result.stderr
    assert set(os.listdir(Path(env["EGG_HOME"]) / "sessions")) == before  # nothing started
    shown = egg(env, "history", "show", "nosuchid", cwd=project)
    assert shown.returncode == 2 and len(shown.stderr.strip().splitlines()) == 1


@pytest.fixture
def lingering_claude(env, project):
    install(project, "claude", FAKE_CLAUDE)
    result = egg(env, "run", "--detach", "claude", "--linger", cwd=project)
    assert result.returncode == 0, result.stderr
    session = result.stdout.strip()
    deadline = time.monotonic() + TIMEOUT
    while not list(claude_dir(env, project).glob("*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield session
    egg(env, "kill", session, cwd=project)


def test_a_symlinked_transcript_is_not_captured(env, project, lingering_claude):
    session = lingering_claude
    secret = Path(env["HOME"]) / "id_ed25519"
    secret.write_text("PRIVATE-KEY-BYTES")
    [transcript] = claude_dir(env, project).glob("*.jsonl")
    transcript.unlink()
    transcript.symlink_to(secret)  # what a hostile sandbox could do
    egg(env, "kill", session, cwd=project)
    wait_exited(env, session)
    chat = session_dir(env, session) / "chat.jsonl.gz"
    if chat.exists():
        import gzip

        assert b"PRIVATE-KEY-BYTES" not in gzip.decompress(chat.read_bytes())
    log = (session_dir(env, session) / "egg.log").read_text()
    assert "not captured" in log


def test_restore_refuses_a_symlinked_directory_and_starts_nothing(env, project, tmp_path):
    install(project, "claude", FAKE_CLAUDE)
    session = run_agent(env, project, "claude")
    projects = Path(env["HOME"]) / ".claude" / "projects"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    slug = claude_dir(env, project)
    for path in slug.iterdir():
        path.unlink()
    slug.rmdir()
    slug.symlink_to(elsewhere)  # planted: a restore must not write through it
    before = set(os.listdir(Path(env["EGG_HOME"]) / "sessions"))
    result = egg(env, "run", "--detach", "claude", "--resume", session, cwd=project)
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "not restored" in result.stderr
    assert list(elsewhere.iterdir()) == []
    assert set(os.listdir(Path(env["EGG_HOME"]) / "sessions")) == before
    assert projects.is_dir()


def test_a_capture_survives_the_daemon_being_killed(env, project, lingering_claude):
    session = lingering_claude
    chat = session_dir(env, session) / "chat.jsonl.gz"
    deadline = time.monotonic() + TIMEOUT
    while not chat.exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # the first periodic capture
    assert chat.exists()
    kill_daemon(env, session)
    listed = json.loads(egg(env, "history", "--json", cwd=project).stdout)
    assert [c["session"] for c in listed] == [session]
    shown = egg(env, "history", "show", session, cwd=project)
    assert "please fix the flaky test" in shown.stdout
