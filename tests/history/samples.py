"""Conversations in each agent's real format, for the history tests and the contract suite.

The fixtures are real runs (claude 2.1.332, codex 0.171, gemini 0.61, from npm, against egg's
stand-in model server on loopback), long strings shortened. A sample re-targets one to another id
and directory the way the agent itself would have written it.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

from egg_core.testing.contracts import HistorySample

FIXTURES = Path(__file__).parent / "fixtures"


def _records(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]


def _jsonl(records: list[dict[str, object]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _retarget(value: object, old: str, new: str) -> object:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_retarget(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _retarget(v, old, new) for k, v in value.items()}
    return value


def claude(cwd: Path, ident: str) -> HistorySample:
    records = _records("claude.jsonl")
    old = str(next(r["sessionId"] for r in records if "sessionId" in r))
    records = [_retarget(_retarget(r, old, ident), "/var/tmp/hx/proj.x", str(cwd)) for r in records]
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    path = f".claude/projects/{slug}/{ident}.jsonl"
    return HistorySample(
        files={path: _jsonl(records)},
        transcript=path,  # type: ignore[arg-type]
        first_user_message="first question please",
    )


def codex(cwd: Path, ident: str) -> HistorySample:
    records = _records("codex.jsonl")
    first = records[0]["payload"]
    assert isinstance(first, dict)
    old = str(first["id"])
    records = [_retarget(_retarget(r, old, ident), "/var/tmp/hx/proj.x", str(cwd)) for r in records]
    now = datetime.datetime.now(datetime.UTC)
    meta = records[0]["payload"]
    assert isinstance(meta, dict)
    meta["timestamp"] = now.isoformat().replace("+00:00", "Z")
    local = datetime.datetime.now()
    path = f".codex/sessions/{local:%Y/%m/%d}/rollout-{local:%Y-%m-%dT%H-%M-%S}-{ident}.jsonl"
    return HistorySample(
        files={path: _jsonl(records)},
        transcript=path,  # type: ignore[arg-type]
        first_user_message="first codex question",
    )


def gemini(cwd: Path, ident: str) -> HistorySample:
    records = _records("gemini.jsonl")
    old = str(records[0]["sessionId"])
    records = [_retarget(r, old, ident) for r in records]
    project = re.sub(r"[^a-z0-9]+", "-", cwd.name.lower()).strip("-") or "project"
    chat = f".gemini/tmp/{project}/chats/session-2026-12-01T14-47-{ident[:8]}.jsonl"
    files = {chat: _jsonl(records), f".gemini/tmp/{project}/.project_root": str(cwd).encode()}
    return HistorySample(files=files, transcript=chat, first_user_message="chosen id question")
