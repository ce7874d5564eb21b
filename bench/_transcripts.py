"""Large transcripts in each agent's format, shaped like a working session's: a question, an
answer with a code block, a shell tool call, and its output (a few KiB of a test run), round
after round, with the records around them that are no turn (request shapes, token counts).

Gemini's is a resumed conversation: its first half is one ``$set`` of the whole message list
(one line of half the file, as Gemini writes at a resume), its second half the records after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

ANSWER = (
    "The failure comes from the fixture that shares its temporary directory.\n\n"
    "```python\ndef test_case(tmp_path):\n\tpath = tmp_path / 'x'\n\tassert not path.exists()\n```\n"
    "I will run the suite again with `-x` to see the next one.\n"
) * 3
OUTPUT = "".join(
    f"tests/test_mod{k % 17}.py::test_case_{k} PASSED\t[{k % 100:3d}%]\n" for k in range(140)
)


def _ident(i: int, salt: int) -> str:
    return f"{i:08x}-{salt:04x}-4c3a-9d2b-{i * 7919 % 10**12:012d}"


def _claude(i: int) -> Iterator[dict[str, object]]:
    yield {
        "type": "user",
        "uuid": _ident(i, 1),
        "message": {"role": "user", "content": f"step {i}: please fix the next failing test"},
    }
    yield {
        "type": "assistant",
        "uuid": _ident(i, 2),
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": ANSWER},
                {
                    "type": "tool_use",
                    "id": _ident(i, 3),
                    "name": "Bash",
                    "input": {"command": "pytest -x -q"},
                },
            ],
        },
    }
    yield {
        "type": "user",
        "uuid": _ident(i, 4),
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": _ident(i, 3), "content": OUTPUT}],
        },
    }
    yield {
        "type": "api-request-shape",
        "sessionId": _ident(0, 0),
        "shape": {"tools": ["Bash"] * 40, "i": i},
    }


def _codex(i: int) -> Iterator[dict[str, object]]:
    def item(payload: dict[str, object]) -> dict[str, object]:
        return {
            "timestamp": "2026-12-01T14:47:00.000Z",
            "type": "response_item",
            "payload": payload,
        }

    yield item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": f"step {i}: please fix the next failing test"}
            ],
        }
    )
    yield item({"type": "reasoning", "summary": [{"type": "summary_text", "text": ANSWER[:400]}]})
    yield item(
        {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["pytest", "-x", "-q"]}),
            "call_id": _ident(i, 3),
        }
    )
    yield item({"type": "function_call_output", "call_id": _ident(i, 3), "output": OUTPUT})
    yield item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": ANSWER}],
        }
    )
    yield {"type": "event_msg", "payload": {"type": "token_count", "info": {"total": i}}}


def _gemini_messages(i: int) -> Iterator[dict[str, object]]:
    yield {
        "id": _ident(i, 1),
        "timestamp": "2026-12-01T14:47:27.484Z",
        "type": "user",
        "content": [{"text": f"step {i}: please fix the next failing test"}],
    }
    yield {
        "id": _ident(i, 2),
        "timestamp": "2026-12-01T14:47:27.569Z",
        "type": "gemini",
        "content": ANSWER,
        "toolCalls": [
            {
                "id": _ident(i, 3),
                "name": "run_shell_command",
                "args": {"command": "pytest -x -q"},
                "result": [{"functionResponse": {"response": {"output": OUTPUT}}}],
            }
        ],
        "model": "gemini-3.8-flash",
    }


def write(agent: str, path: Path, size: int) -> None:
    """A transcript of about ``size`` bytes in ``agent``'s format at ``path``."""
    with open(path, "w") as out:
        if agent == "gemini":
            _write_gemini(out.write, size)
            return
        rounds = {"claude": _claude, "codex": _codex}[agent]
        written, i = 0, 0
        if agent == "codex":
            written += out.write(
                json.dumps({"type": "session_meta", "payload": {"id": _ident(0, 0), "cwd": "/w"}})
                + "\n"
            )
        while written < size:
            for record in rounds(i):
                written += out.write(json.dumps(record) + "\n")
            i += 1


def _write_gemini(write: Callable[[str], int], size: int) -> None:
    written = write(
        json.dumps({"sessionId": _ident(0, 0), "projectHash": "0" * 64, "kind": "main"}) + "\n"
    )
    written += write('{"$set":{"messages":[')
    i = 0
    while written < size // 2:
        for message in _gemini_messages(i):
            written += write(
                ("," if i or message["type"] != "user" else "")
                + json.dumps(message, separators=(",", ":"))
            )
        i += 1
    written += write("]}}\n")
    while written < size:
        for message in _gemini_messages(i):
            written += write(json.dumps(message, separators=(",", ":")) + "\n")
        written += write('{"$set":{"lastUpdated":"2026-12-01T14:47:29.574Z"}}\n')
        i += 1
