"""The real agent CLIs as a user meets them: ``egg run AGENT`` in a real terminal (a PTY), from a
fresh home, against the stand-in model (the real-agent tier: see test_real_agents). What the
user sees is the terminal's screen, emulated from every byte egg wrote to it; a test waits for a
screen and answers it as a user would, key by key (an agent reads a burst of keys as a paste)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from egg_core.session.screen import ByteStream, Screen
from egg_core.testing.modelserver import ModelServer

from .conftest import Box
from .test_real_agents import ANSWER, GEMINI_SETTINGS, agent_bin, model

__all__ = ["agent_bin", "model"]  # fixtures of the tier, shared

ROWS, COLS = 30, 100
#: how long an agent may take to show what a step waits for (a bound for a failure, not a
#: measurement: a screen that never comes fails the test with the screen it had)
PATIENCE = 120


class Terminal:
    """``egg ARGS`` as the box's user, in a terminal of ROWS x COLS whose screen is followed."""

    def __init__(self, box: Box, args: list[str], env: dict[str, str]) -> None:
        argv = box.command(*args)
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            env=box.env({"TERM": "xterm-256color", **env}),
            cwd=str(box.workspace),
            dimensions=(ROWS, COLS),
        )
        self.screen = Screen(COLS, ROWS)
        self.stream = ByteStream(self.screen)
        #: every screen's text as it was after each read, joined: what the user ever saw
        self.seen: list[str] = []
        self.output = b""
        self.ended = False

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def _read(self) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=1)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            self.ended = True
            return
        self.output += data
        self.stream.feed(data)
        self.seen.append(self.text())

    def wait_for(self, ready: Callable[[str], bool], what: str) -> str:
        """Read until the screen satisfies ``ready``; its text."""
        deadline = time.monotonic() + PATIENCE
        while not ready(self.text()):
            if self.ended or time.monotonic() > deadline:
                pytest.fail(f"never saw {what}; the screen:\n{self.text()}")
            self._read()
        return self.text()

    def settle(self, quiet: float = 3.0) -> None:
        """Read until the program has been quiet for ``quiet`` seconds: done with what it does
        at start, as a user who reads the question first finds it. (Gemini 0.61 answered
        within its first moments closes the trust dialog without starting again: its
        settings reload unmounts the dialog before its 250 ms restart timer fires.)"""
        deadline = time.monotonic() + PATIENCE
        last = time.monotonic()
        while time.monotonic() - last < quiet:
            if self.ended or time.monotonic() > deadline:
                pytest.fail(f"it never went quiet; the screen:\n{self.text()}")
            size = len(self.output)
            self._read()
            if len(self.output) != size:
                last = time.monotonic()

    def type(self, text: str, prompt: str | None = None) -> None:
        """Type ``text`` one key at a time, each shown before the next; then Enter.

        With ``prompt`` (what the input line shows before the input), Enter waits until the
        input line reads exactly ``text``: Gemini under load has been seen to show a key twice
        ("/quitt", answered as a chat turn), and a suggestion list that already shows ``text``
        makes the per-key wait pass early. Then the line is erased and typed again."""
        for _attempt in range(3):
            for index in range(len(text)):
                self.child.send(text[index])
                typed = text[: index + 1].rstrip()  # (the screen's lines are read without their
                # trailing blanks: a space shows with the next key)
                self.wait_for(lambda screen, typed=typed: typed in screen, f"{typed!r} typed")
            if prompt is None or self._input_reads(prompt, text):
                self.child.send("\r")
                return
            self.child.send("\x7f" * (len(text) + 8))
            self.wait_for(lambda screen: prompt + text not in screen, "the input erased")
        pytest.fail(f"the input line never read {text!r}; the screen:\n{self.text()}")

    def _input_reads(self, prompt: str, text: str, quiet: float = 1.0) -> bool:
        """Whether, once the screen has been quiet for ``quiet`` seconds, a line ends with
        ``prompt`` followed by exactly ``text``."""
        self.settle(quiet)
        return any(line.endswith(prompt + text) for line in self.text().splitlines())

    def ever_saw(self, text: str) -> bool:
        return any(text in screen for screen in self.seen)

    def said(self) -> str:
        """Everything egg wrote, as text: its lines after the program's end among it."""
        return self.output.decode(errors="replace").replace("\r\n", "\n")

    def session(self) -> str:
        """The session's id, from ``egg run``'s first line ("..., session ID (detach ...")."""
        found = re.search(r"session ([0-9a-f]{8})\b", self.said())
        assert found, self.said()
        return found.group(1)

    def finish(self) -> int:
        """Read to the end; the exit code of ``egg run``."""
        deadline = time.monotonic() + PATIENCE
        while not self.ended:
            if time.monotonic() > deadline:
                pytest.fail(f"egg run did not end; the screen:\n{self.text()}")
            self._read()
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        if not self.ended:
            self.child.close(force=True)


@pytest.fixture
def terminals() -> Iterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def start(box: Box, *args: str, env: dict[str, str], verb: str = "run") -> Terminal:
        terminal = Terminal(box, [verb, *args], env)
        opened.append(terminal)
        return terminal

    yield start
    for terminal in opened:
        terminal.close()


def _path(agent_bin: Path) -> str:
    return f"{agent_bin}:/usr/local/bin:/usr/bin:/bin"


def _egg_lines(terminal: Terminal) -> list[str]:
    """What egg said after the program's end: its own lines, from ``[exited…]`` on."""
    said = terminal.said()
    return said[said.rindex("[exited") :].splitlines()


def _egg_hint(agent: str, session: str) -> str:
    return f"egg: to resume this conversation in the sandbox: egg run {agent} --resume {session}"


# -- Gemini


GEMINI_PROMPT = "Type your message"
GEMINI_TRUST = "Do you trust the files in this folder?"


def _gemini(box: Box, model: ModelServer, agent_bin: Path, **extra: str) -> dict[str, str]:
    box.config({"network": {"local_ports": [model.port]}})
    if not (box.home / ".gemini" / "settings.json").exists():
        box.write(".gemini/settings.json", json.dumps(GEMINI_SETTINGS), 0o600)
    return {
        "PATH": _path(agent_bin),
        "GEMINI_API_KEY": "egg-test-key",
        "GOOGLE_GEMINI_BASE_URL": model.url,
        **extra,
    }


def _at_gemini_prompt(screen: str) -> bool:
    return GEMINI_PROMPT in screen and GEMINI_TRUST not in screen


def _quit_gemini(terminal: Terminal) -> int:
    terminal.settle()  # "Initializing... Prompts will be queued": a command typed then is a prompt
    terminal.type("/quit", prompt="> ")
    return terminal.finish()


def _trust_gemini_and_chat(box: Box, terminal: Terminal) -> None:
    """Gemini's first run in a folder: "Trust folder" chosen, then on (it started again) to the
    chat prompt, where a turn is answered."""
    terminal.wait_for(lambda screen: GEMINI_TRUST in screen, "the trust question")
    terminal.settle()
    terminal.child.send("\r")  # 1. Trust folder (project), the one chosen
    terminal.wait_for(_at_gemini_prompt, "the chat prompt after the trust answer")
    terminal.settle()
    _ask_gemini(terminal)
    assert "[exited" not in terminal.text()
    trusted = json.loads((box.home / ".gemini" / "trustedFolders.json").read_text())
    assert trusted == {str(box.workspace): "TRUST_FOLDER"}


def _ask_gemini(terminal: Terminal) -> None:
    """ "hi", answered. An Enter that Gemini 0.61 takes as part of the typing (under load it
    left "> hi" in its input box, not sent) is pressed again, as a user would."""
    terminal.type("hi", prompt="> ")
    for _ in range(3):
        terminal.settle()
        if ANSWER in terminal.text() or "> hi" not in terminal.text():
            break
        terminal.child.send("\r")
    terminal.wait_for(lambda screen: ANSWER in screen, "the model's answer")


def _started_again(box: Box, session: str) -> int:
    """How often the session's log says Gemini was started again."""
    log = box.egg_home / "sessions" / session / "egg.log"
    return log.read_text().count("the agent asked to be started again")


def test_geminis_first_run_goes_on_to_the_chat_after_trust_and_the_next_one_does_not_ask(
    box: Box, model: ModelServer, agent_bin: Path, terminals: Callable[..., Terminal]
) -> None:
    """Issue 24, item 1: Gemini exits 199 after "Trust folder" for its launcher to start it
    again (SANDBOX=egg makes egg that launcher); the session goes on to the chat prompt, the
    answer is kept, and the next run starts at the prompt. Its end says how to resume the
    conversation in egg (item 7)."""
    env = _gemini(box, model, agent_bin)

    first = terminals(box, "gemini", env=env)
    _trust_gemini_and_chat(box, first)
    trusted = (box.home / ".gemini" / "trustedFolders.json").read_text()
    assert _quit_gemini(first) == 0
    assert (box.home / ".gemini" / "trustedFolders.json").read_text() == trusted
    assert _started_again(box, first.session()) == 1
    assert _egg_lines(first)[0].startswith("[exited]"), _egg_lines(first)
    assert _egg_lines(first)[-1] == _egg_hint("gemini", first.session()), _egg_lines(first)

    second = terminals(box, "gemini", env=env)
    second.wait_for(lambda screen: GEMINI_PROMPT in screen, "the chat prompt")

    assert not second.ever_saw(GEMINI_TRUST)
    assert _quit_gemini(second) == 0
    assert _started_again(box, second.session()) == 0


def test_geminis_first_run_detached_goes_on_after_trust_in_the_client_that_attaches(
    box: Box, model: ModelServer, agent_bin: Path, terminals: Callable[..., Terminal]
) -> None:
    """Issue 24, item 1, the detached path: ``egg run --detach gemini``, then ``egg attach``:
    the trust answer given there starts Gemini again in the same session, which the attached
    client follows to the chat and to its end."""
    env = {**_gemini(box, model, agent_bin), "TERM": "xterm-256color"}
    size = ["--rows", str(ROWS), "--cols", str(COLS)]
    started = box.run("run", "--detach", *size, "gemini", env=env)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()

    attached = terminals(box, session, env=env, verb="attach")
    _trust_gemini_and_chat(box, attached)
    assert _quit_gemini(attached) == 0
    assert _started_again(box, session) == 1
    assert _egg_lines(attached)[0].startswith("[exited]"), _egg_lines(attached)
    assert _egg_lines(attached)[-1] == _egg_hint("gemini", session), _egg_lines(attached)


def test_gemini_sees_the_true_colour_terminal_it_runs_in(
    box: Box, model: ModelServer, agent_bin: Path, terminals: Callable[..., Terminal]
) -> None:
    """Issue 24, item 5: COLORTERM passes by default, so Gemini no longer warns on every start
    that the terminal lacks 24-bit colour."""
    env = _gemini(box, model, agent_bin, COLORTERM="truecolor")

    terminal = terminals(box, "gemini", "--skip-trust", env=env)
    terminal.wait_for(lambda screen: GEMINI_PROMPT in screen, "the chat prompt")

    assert not terminal.ever_saw("True color")
    assert _quit_gemini(terminal) == 0


# -- Claude Code

CLAUDE_KEY = "sk-ant-egg-test"
CLAUDE_TRUST = "Yes, I trust this folder"
CLAUDE_READY = "auto mode on"
#: what marks the chosen answer in Claude's questions
CLAUDE_POINTER = "\N{HEAVY RIGHT-POINTING ANGLE QUOTATION MARK ORNAMENT}"
#: what Claude 2.1 prints when it ends: its own way back, which runs it on the host
CLAUDE_OWN_HINT = "claude --resume "


def _claude(box: Box, model: ModelServer, agent_bin: Path) -> dict[str, str]:
    """A home where Claude's sign-in is done (onboarding seen, the key's use approved: Claude
    asks both once per home, and its onboarding checks api.anthropic.com, which is not
    reachable) and no project was ever opened."""
    box.config({"network": {"local_ports": [model.port]}})
    if not (box.home / ".claude.json").exists():
        state = {
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [CLAUDE_KEY[-20:]], "rejected": []},
        }
        box.write(".claude.json", json.dumps(state), 0o600)
    return {
        "PATH": _path(agent_bin),
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
    }


def _trust_claude(terminal: Terminal) -> None:
    """Claude's question in a folder it has not seen: "No, exit" is chosen; down, then Enter."""
    terminal.wait_for(lambda screen: CLAUDE_TRUST in screen, "the trust question")
    terminal.settle()
    terminal.child.send("\x1b[B")
    chosen = f"{CLAUDE_POINTER} {CLAUDE_TRUST}"
    terminal.wait_for(lambda screen: chosen in screen, "Yes chosen")
    terminal.child.send("\r")


def _chat_with_claude(terminal: Terminal) -> None:
    terminal.wait_for(lambda screen: CLAUDE_READY in screen, "Claude's prompt")
    terminal.settle()
    terminal.type("hi")
    terminal.wait_for(lambda screen: ANSWER in screen, "the model's answer")


def _quit_claude(terminal: Terminal) -> int:
    terminal.settle()
    terminal.type("/exit")
    return terminal.finish()


def test_claudes_first_run_in_a_new_project_reverts_nothing_and_a_planted_command_is_reverted(
    box: Box, model: ModelServer, agent_bin: Path, terminals: Callable[..., Terminal]
) -> None:
    """Issue 24, item 4: Claude's first run in a project writes its empty defaults for it in
    ~/.claude.json (``projects.<dir>.mcpServers: {}`` and the like): kept, and not a word about
    them; a server with a command that Claude adds there inside the sandbox (``claude mcp add``:
    the project's ``mcpServers`` in the same file) is still put back and said."""
    env = _claude(box, model, agent_bin)

    first = terminals(box, "claude", env=env)
    _trust_claude(first)
    _chat_with_claude(first)
    assert _quit_claude(first) == 0

    state = json.loads((box.home / ".claude.json").read_text())
    project = state["projects"][str(box.workspace)]
    assert project.get("mcpServers") == {}, project  # its default, written and kept
    assert not any("reverted" in line for line in _egg_lines(first)), _egg_lines(first)
    # nor about the empty ~/.claude/plugins/marketplaces it makes in a home it has not seen
    assert not any("agent code" in line for line in _egg_lines(first)), _egg_lines(first)

    # Claude itself adds a server for this project, as an agent told to inside would
    witness = box.witness("planted")
    second = terminals(
        box, "claude", "mcp", "add", "x", "--", "/bin/sh", "-c", f"touch {witness}", env=env
    )
    assert second.finish() == 0, second.said()

    lines = _egg_lines(second)
    reverted = [line for line in lines if line.startswith("egg: reverted ")]
    assert len(reverted) == 1 and "mcpServers" in reverted[0], lines
    state = json.loads((box.home / ".claude.json").read_text())
    assert state["projects"][str(box.workspace)].get("mcpServers") == {}, state
    assert not witness.exists()


def test_claudes_end_says_how_to_resume_inside_egg_and_that_way_resumes(
    box: Box, model: ModelServer, agent_bin: Path, terminals: Callable[..., Terminal]
) -> None:
    """Issue 24, item 7: Claude's own parting hint (``claude --resume ID``) would run it on the
    host; egg's last line says how to resume in egg, and following it brings the conversation
    back, in the sandbox."""
    env = _claude(box, model, agent_bin)

    first = terminals(box, "claude", env=env)
    _trust_claude(first)
    _chat_with_claude(first)
    assert _quit_claude(first) == 0

    lines = _egg_lines(first)
    assert CLAUDE_OWN_HINT in first.said()  # the agent's own, which egg cannot change
    assert lines[-1] == _egg_hint("claude", first.session()), lines

    again = terminals(box, "claude", "--resume", first.session(), env=env)
    again.wait_for(lambda screen: ANSWER in screen, "the conversation resumed")
    assert not again.ever_saw(CLAUDE_TRUST)
    assert _quit_claude(again) == 0
    assert _egg_lines(again)[-1] == _egg_hint("claude", again.session())
