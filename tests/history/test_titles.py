"""Titles and turns as the user typed them, not the agents' markup: real transcripts (fixtures/:
an interactive claude 2.1.332 that ran ``!ls`` and a project's ``/hello world``, a codex 0.171
exec in a project with an AGENTS.md) read by each agent's plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egg_core import history
from egg_core.history import Turn
from egg_core.plugins import get_plugin_manager
from egg_core.registry import agents
from egg_core.session import conversations

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def pm(egg_home: Path):
    return get_plugin_manager(environ={"EGG_HOME": str(egg_home)})


@pytest.mark.parametrize(
    ("agent", "fixture", "drop", "title"),
    [
        # a real interactive claude 2.1.332: `!ls`, then `/hello world` (a project command)
        ("claude", "claude-markup.jsonl", (), "! ls"),
        ("claude", "claude-markup.jsonl", ("<bash-",), "/hello world"),
        # a real codex 0.171 exec in a project with an AGENTS.md
        ("codex", "codex-agents-md.jsonl", (), "what is up"),
    ],
)
def test_a_title_is_what_the_user_typed_not_the_agents_markup(pm, agent, fixture, drop, title):
    lines = (FIXTURES / fixture).read_bytes().splitlines(keepends=True)
    data = b"".join(line for line in lines if not any(d.encode() in line for d in drop))
    assert conversations.title_of(pm, agents(pm)[agent].obj, data) == title


def test_claude_shows_a_shell_command_and_a_slash_command_as_they_were_typed(pm):
    data = (FIXTURES / "claude-markup.jsonl").read_bytes()
    turns = conversations.render(pm, agents(pm)["claude"].obj, data)
    assert [(t.role, t.text) for t in turns if t.role != "assistant"] == [
        ("user", "! ls"),
        ("tool", "file.txt"),  # the command's output, one line like a tool's
        ("user", "/hello world"),
        ("user", "what is up"),
    ]


def test_markup_a_plugin_leaves_as_it_came_is_never_a_title():
    turns = [
        Turn(role="user", text="<task-notification>\n<task-id>b1</task-id>"),
        Turn(role="user", text="  <local-command-stdout>Set model</local-command-stdout>"),
        Turn(role="user", text="the real question <b>here</b>"),
    ]
    assert history.title_of(turns) == "the real question <b>here</b>"
    assert history.title_of(turns[:2]) is None


@pytest.mark.parametrize(
    ("content", "turn"),
    [
        ("<command-name>/init</command-name>", ("user", "/init")),
        (
            "<command-message>model</command-message>\n<command-name>/model</command-name>\n"
            "<command-args>opus</command-args>",
            ("user", "/model opus"),
        ),
        ("<local-command-stdout>Set model</local-command-stdout>", ("tool", "Set model")),
        (
            "<bash-stdout></bash-stdout><bash-stderr>no such file</bash-stderr>",
            ("tool", "no such file"),
        ),
        # anything else around the tags: the message as it came (and never a title)
        ("<bash-input>ls</bash-input> and more", ("user", "<bash-input>ls</bash-input> and more")),
        ("<bash-input>ls", ("user", "<bash-input>ls")),
    ],
)
def test_claude_reads_its_prompt_markup_and_nothing_else(pm, content, turn):
    record = {"type": "user", "message": {"role": "user", "content": content}}
    data = json.dumps(record).encode() + b"\n"
    [found] = conversations.render(pm, agents(pm)["claude"].obj, data)
    assert (found.role, found.text) == turn
