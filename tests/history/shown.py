"""``egg history show`` of a transcript, run for real: a session directory made the way a session
makes it (its meta, then :func:`egg_core.history.capture` of the agent's file), then the CLI in a
subprocess. And the transcripts the streaming tests show: each agent's real fixture, and the
same with every kind of line its reader must skip or sanitize added (tool calls, hostile bytes,
controls, CRLF, a half-written last line, Gemini's rewrites of its message list).

``golden/`` holds what the CLI printed for these before it streamed (commit abf9681, which read
the whole capture, parsed every record into a list and printed at the end)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from egg_core import history
from egg_core.session.store import create_session, write_json

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
AGENT_SESSION_ID = "8d1f2b8e-0000-4000-8000-000000000001"
EGG = [sys.executable, "-P", "-m", "egg_core.cli"]


def capture_session(egg_home: Path, agent: str, data: bytes) -> str:
    """A finished session of ``agent`` whose captured conversation is ``data``; its id."""
    paths = create_session(egg_home)
    write_json(paths.meta, {"agent": agent, "cwd": "/w", "started": 1.0e9, "ended": 1.0e9 + 60})
    root = paths.directory / "agent-dir"
    root.mkdir()
    (root / "t.jsonl").write_bytes(data)
    meta = history.capture(
        history.Transcript(agent_session_id=AGENT_SESSION_ID, root=root, file="t.jsonl"),
        paths.directory,
    )
    history.write_meta(paths.directory, {**meta, "agent": agent, "title": None})
    (root / "t.jsonl").unlink()
    return paths.id


def show(
    egg_home: Path,
    session: str,
    *flags: str,
    env: Mapping[str, str] | None = None,
    preexec: object = None,
) -> subprocess.CompletedProcess[bytes]:
    """``egg history show SESSION FLAGS`` as a user runs it; stdout as bytes, the session id
    replaced by ``SESSION`` (it is random)."""
    done = subprocess.run(
        [*EGG, "history", "show", session, *flags],
        env={**os.environ, "EGG_HOME": str(egg_home), **(env or {})},
        capture_output=True,
        timeout=120,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )
    done.stdout = done.stdout.replace(session.encode(), b"SESSION")
    return done


# -- the transcripts -------------------------------------------------------------------------

#: text a sandbox may have shaped: ESC and CSI sequences, C1, bidi override, zero-width space,
#: CR alone and CRLF, tabs, a lone surrogate, a non-UTF-8 byte as Python keeps it, CJK, emoji,
#: trailing blanks (a turn is printed right-stripped)
HOSTILE_TEXT = (
    "red \x1b[31mALERT\x1b[0m \x9b2J \u202eevil\u202c zero\u200bwidth\n"
    "over\rwrite\r\nnext line\twith tab \udcff \ud800 字 🙂\u200d🙂  \n\n"
)
LONG = "x" * 450 + " end"


def _line(record: object) -> bytes:
    return json.dumps(record).encode() + b"\n"


#: lines no reader may choke on: blanks, not objects, not JSON, not UTF-8, NUL
JUNK = b'\n   \n\t\n[1, 2]\n"a string"\n{not json\n\xff\xfe garbage\x00\nnull\n'


def _claude() -> bytes:
    def user(content: object, **extra: object) -> bytes:
        return _line({"type": "user", "message": {"role": "user", "content": content}, **extra})

    def assistant(content: object) -> bytes:
        return _line({"type": "assistant", "message": {"role": "assistant", "content": content}})

    return b"".join(
        [
            user(HOSTILE_TEXT),
            user("meta, not shown", isMeta=True),
            _line({"type": "user", "message": "not a dict"}),
            _line({"type": "system", "message": {"content": "not a turn"}}),
            assistant(
                [
                    {"type": "text", "text": "two\n\nparagraphs\t"},
                    {"type": "tool_use", "name": "Bash", "input": {"command": LONG}},
                    {"type": "tool_use", "input": {"no": "name"}},
                    {"type": "thinking", "thinking": "not shown"},
                    "not a block",
                    {"type": "text", "text": 5},
                ]
            ),
            user([{"type": "tool_result", "content": LONG + "\n" + HOSTILE_TEXT}]),
            user([{"type": "tool_result", "content": [{"type": "text", "text": "a"}, "b"]}]),
            user([{"type": "tool_result", "content": 7}]),
            assistant({"not": "a list"}),
            JUNK,
            user("a CRLF line").rstrip(b"\n") + b"\r\n",
            b"\x0c" + user("form feeds around it").rstrip(b"\n") + b"\x0c\n",
            b"\xef\xbb\xbf" + user("after a BOM"),
            b'{"type": "user",\r"message": {"role": "user", "content": "cut by a CR"}}\n',
            b'{"type": "user", "message": {"role": "user", "content": "NaN id", "id": NaN}}\n',
            user("half-written last line")[:-12],
        ]
    )


def _codex() -> bytes:
    def item(payload: object) -> bytes:
        return _line({"type": "response_item", "payload": payload})

    def message(role: str, *blocks: object) -> bytes:
        return item({"type": "message", "role": role, "content": list(blocks)})

    return b"".join(
        [
            message("user", {"type": "input_text", "text": HOSTILE_TEXT}),
            message("user", {"type": "input_text", "text": "  <environment_context>skipped"}),
            message("assistant", {"type": "output_text", "text": "done\n"}, "not a block", {}),
            message("system", {"type": "input_text", "text": "not shown"}),
            item({"type": "function_call", "name": "shell", "arguments": '{"cmd": ["ls"]}'}),
            item({"type": "custom_tool_call", "name": "apply_patch", "input": LONG}),
            item({"type": "local_shell_call", "action": {"command": ["ls", "-la"]}}),
            item({"type": "function_call", "arguments": {"a": HOSTILE_TEXT}}),
            item({"type": "function_call_output", "output": LONG}),
            item({"type": "function_call_output", "output": {"content": HOSTILE_TEXT}}),
            item({"type": "custom_tool_call_output", "output": None}),
            item({"type": "reasoning", "summary": []}),
            item("not a dict"),
            _line({"type": "event_msg", "payload": {"type": "message"}}),
            JUNK,
            message("assistant", {"text": "a CRLF line"}).rstrip(b"\n") + b"\r\n",
            message("assistant", {"text": "half-written"})[:-5],
        ]
    )


def _gemini() -> bytes:
    def msg(ident: object, kind: str, content: object, **extra: object) -> bytes:
        return _line({"id": ident, "type": kind, "content": content, **extra})

    return b"".join(
        [
            msg("m1", "user", HOSTILE_TEXT),
            msg("m2", "gemini", "first answer", toolCalls=[{"name": "ls", "args": {"d": LONG}}]),
            msg("m3", "gemini", ["a string part", {"text": "a dict part"}, {"no": "text"}, 5]),
            msg("m1", "user", "m1 again: replaces the first, moves to the end"),
            msg(None, "gemini", "no id"),
            msg(None, "gemini", "no id again: replaces it"),
            msg(1, "gemini", "id 1"),
            msg(1.0, "gemini", "id 1.0 (equal to 1): replaces it"),
            msg([1, "x"], "gemini", "a list id"),
            msg([1, "x"], "gemini", "the same list id: replaces it"),
            b'{"id": NaN, "type": "gemini", "content": "NaN id"}\n',
            b'{"id": NaN, "type": "gemini", "content": "NaN id: never equal, kept too"}\n',
            msg("m4", "info", "not a message"),
            _line({"$set": {"lastUpdated": "2026-12-01T14:47:29.574Z"}}),
            _line({"$set": 5, "id": "m5", "type": "user", "content": "a $set that is no dict"}),
            msg("m6", "user", "  <session_context> skipped"),
            msg("m7", "gemini", "   "),
            msg("m8", "gemini", "calls", toolCalls=["not a dict", {"args": {}}]),
            JUNK,
            msg("m9", "user", "a CRLF line").rstrip(b"\n") + b"\r\n",
            msg("m10", "gemini", "half-written")[:-5],
        ]
    )


def _gemini_rewritten() -> bytes:
    """A list rewritten by ``$set`` after records that a later record replaces again."""
    kept = {"id": "k1", "type": "user", "content": "kept from the rewrite"}
    return b"".join(
        [
            _gemini(),
            b"\n",
            _line({"$set": {"messages": [kept, "junk", {"id": "k2", "content": "no type"}]}}),
            _line({"id": "k1", "type": "gemini", "content": "k1 replaced after the rewrite"}),
            _line({"id": "m2", "type": "gemini", "content": "m2 back after the rewrite"}),
            _line({"$set": {"messages": "not a list"}}),
            _line({"id": None, "type": "user", "content": "none after the rewrite"}),
        ]
    )


def transcripts() -> dict[str, tuple[str, bytes]]:
    """name -> (agent, transcript) for every case the golden files hold."""
    cases: dict[str, tuple[str, bytes]] = {}
    for agent in ("claude", "codex", "gemini"):
        fixture = (FIXTURES / f"{agent}.jsonl").read_bytes()
        cases[agent] = (agent, fixture)
    cases["claude-hostile"] = ("claude", (FIXTURES / "claude.jsonl").read_bytes() + _claude())
    cases["codex-hostile"] = ("codex", (FIXTURES / "codex.jsonl").read_bytes() + _codex())
    cases["gemini-hostile"] = ("gemini", (FIXTURES / "gemini.jsonl").read_bytes() + _gemini())
    cases["gemini-rewritten"] = ("gemini", _gemini_rewritten())
    cases["gemini-no-rewrite"] = ("gemini", _gemini())
    cases["empty"] = ("claude", b"")
    cases["unknown-agent"] = ("nosuchagent", (FIXTURES / "claude.jsonl").read_bytes())
    return cases


def write_golden(egg_home: Path) -> None:
    """Record what the CLI prints now for every case (run once, on the code before streaming)."""
    GOLDEN.mkdir(exist_ok=True)
    for name, (agent, data) in transcripts().items():
        session = capture_session(egg_home, agent, data)
        for flags, suffix in (((), "txt"), (("--json",), "json")):
            done = show(egg_home, session, *flags)
            assert done.returncode == 0, done.stderr
            (GOLDEN / f"{name}.{suffix}").write_bytes(done.stdout)
            (GOLDEN / f"{name}.{suffix}.stderr").write_bytes(done.stderr)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "egg-home"
        home.mkdir(mode=0o700)
        started = time.time()
        write_golden(home)
        print(f"golden files written in {time.time() - started:.1f} s")


# -- Gemini's rewrite of its whole list, as one line longer than the reader holds -------------


def _rewrite(items: list[bytes], *, sep: bytes = b",", end: bytes = b"]}}") -> bytes:
    return b'{"$set":{"messages":[' + sep.join(items) + end + b"\n"


def _gemini_items(count: int) -> list[bytes]:
    """Messages to rewrite, with what may fall on a piece's edge: multi-byte characters,
    escapes, numbers and literals (items that are no message)."""
    items = []
    for i in range(count):
        kind = "user" if i % 2 == 0 else "gemini"
        text = f"message {i} 字🙂é \\u202e " + HOSTILE_TEXT if i % 7 == 0 else f"message {i} 字🙂é"
        extra = {"toolCalls": [{"name": "ls", "args": {"n": i}}]} if i % 5 == 0 else {}
        items.append(json.dumps({"id": f"r{i}", "type": kind, "content": text, **extra}).encode())
        if i % 9 == 0:
            items += [b"12345678901234567", b"true", b"null", b'"a string item"', b"-1.5e3"]
    return items


def long_rewrites() -> dict[str, tuple[bytes, bytes, int]]:
    """name -> (a Gemini transcript whose rewrites are long lines, the transcript whose lines
    all held whole say the same, how many lines the reader skips): each case's long line is
    over 2 KiB, its other lines under. A long line that is no JSON object is skipped (as it
    was held whole) and counted; one not as Gemini writes it is skipped and counted."""
    head = (FIXTURES / "gemini.jsonl").read_bytes()
    items = _gemini_items(60)
    after = b"".join(
        [
            _line({"id": "r4", "type": "gemini", "content": "r4 replaced after the rewrite"}),
            _line({"id": "new", "type": "user", "content": "after the rewrite"}),
            _line({"$set": {"lastUpdated": "2026-12-01T14:47:29.574Z"}}),
        ]
    )
    dup = _line({"id": "d", "type": "user", "content": "a duplicate key's list wins"})[:-1]
    long = _rewrite(items)
    same = {
        "long": head + long + after,
        "long, then a short one": head + long + after + _rewrite([items[0]]) + after,
        "spaces and tabs between the items": head
        + _rewrite(items, sep=b" ,\t ", end=b"  ] } }\x0c")
        + after,
        "no items, only spaces": head + _rewrite([b" " * 3000]) + after,
        "a later duplicate key": head
        + _rewrite(items, end=b'],"messages":[' + dup + b"]}}")
        + after,
        "an outer duplicate that makes it a message": head
        + _rewrite(items, end=b']},"$set":5,"id":"z","type":"user","content":"dup"}')
        + after,
    }
    void = {
        "a bad item: the whole line is no record": _rewrite(
            [*items[:30], b'{"id": 1,}', *items[30:]]
        ),
        "a CR between items: the whole file's reading cut it there": _rewrite(
            [*items[:30], b"\r" + items[30], *items[31:]]
        ),
        "something after the object": _rewrite(items, end=b"]}} {}"),
    }
    cases = {name: (data, data, 0) for name, data in same.items()}
    cases.update(
        {name: (head + line + after, head + line + after, 1) for name, line in void.items()}
    )
    cases["cut short at the end of the file"] = (head + long[:-40], head + long[:-40], 1)
    other = b"{ " + long[1:]
    cases["not as Gemini writes it (a space after the brace): skipped"] = (
        head + other + after,
        head + after,
        1,
    )
    return cases


# -- a transcript larger than the memory egg history show may use ----------------------------


def big_transcript(agent: str, path: Path, size: int) -> int:
    """``size`` bytes or a little more of ``agent``'s format at ``path`` (Gemini's: half of it
    one rewrite line); how many user turns ``egg history show`` must print."""
    users = 0
    with open(path, "wb") as out:
        written = 0
        if agent == "gemini":
            written += out.write(b'{"$set":{"messages":[')
            i = 0
            while written < size // 2:
                comma = b"," if i else b""
                written += out.write(comma + _gemini_item(i, "user") + b"," + _gemini_item(i, "x"))
                i += 1
            written += out.write(b"]}}\n")
            users += i
        block = _round(agent)
        while written < size:
            for n in range(64):
                piece = block.replace(b"ROUND", str(written + n).encode())
                if agent == "gemini":
                    piece += _gemini_item(written + n, "user") + b"\n"
                written += out.write(piece)
                users += 1
    return users


def _gemini_item(i: int, kind: str) -> bytes:
    role = b"user" if kind == "user" else b"gemini"
    return b'{"id":"%s-%d","type":"%s","content":"%s"}' % (role, i, role, b"text " * 60)


def _round(agent: str) -> bytes:
    """One round of ``agent``'s records with one user turn (Gemini's: none, its messages are
    added by the caller)."""
    filler = "output line\t" * 400
    if agent == "claude":
        records: list[object] = [
            {"type": "user", "message": {"role": "user", "content": "question ROUND"}},
            {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": filler}]},
            },
            {"type": "api-request-shape", "shape": filler},
        ]
    elif agent == "codex":
        records = [
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "question ROUND"}],
                },
            },
            {
                "type": "response_item",
                "payload": {"type": "function_call_output", "output": filler},
            },
        ]
    else:
        records = [{"$set": {"lastUpdated": "ROUND" + filler}}]
    return b"".join(_line(r) for r in records)
