"""Threat P: bytes a sandbox produced reach the user's terminal only as visible text.

Every printing command is fed a corpus of hostile strings through the place they really come
from (a transcript the agent wrote inside a session, a directory the sandbox made, a browser-open
request written inside a session, a git repository and agent settings planted inside, a log and a
file name), runs on a real PTY, and the bytes the PTY received are checked: no ESC, no C1 control
(neither as UTF-8 nor as a raw byte), no BEL, no backspace, no CR but in a line end, no bidi
control — and the escaped form of each is there, so nothing was silently dropped either.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import unicodedata
from pathlib import Path

import pexpect
import pytest

from tests.linux.conftest import Box

#: what a sandbox writes to drive the host's terminal: name -> (text, how egg shows it)
HOSTILE = {
    "clipboard write (OSC 52)": ("\x1b]52;c;cHduZWQ=\x07", "\\x1b]52;c;cHduZWQ=\\x07"),
    "title (OSC 0)": ("\x1b]0;pwned-title\x07", "\\x1b]0;pwned-title\\x07"),
    "clear screen (CSI 2J)": ("\x1b[2J", "\\x1b[2J"),
    "DCS": ("\x1bP1$r0m\x1b\\", "\\x1bP1$r0m\\x1b\\"),
    "C1 CSI": ("\u009b2J", "\\x9b2J"),
    "C1 OSC": ("\u009d0;c1-title\u009c", "\\x9d0;c1-title\\x9c"),
    "BEL": ("\x07!", "\\x07!"),
    "line forgery": ("\rFORGED\b\b", "\\rFORGED\\x08\\x08"),
    "bidi override": ("\u202eexe.txt", "\\u202eexe.txt"),
}
CORPUS = "".join(text for text, _ in HOSTILE.values())
SHOWN = [shown for _, shown in HOSTILE.values()]
#: a file name that is not UTF-8: 0x9b alone is CSI to a terminal that takes 8-bit controls
RAW_NAME = "evil" + CORPUS.replace("\r", "") + os.fsdecode(b"\xff\x9b")
RAW_SHOWN = "\\xff\\x9b"
#: what stays readable as it is
READABLE = "héllo 中文 🧑‍💻"


def on_pty(box: Box, *args: str, cwd: Path | str | None = None, timeout: float = 90) -> bytes:
    """``egg ARGS`` as the box's identity on a real PTY; every byte the terminal received."""
    argv = box.command(*args)
    child = pexpect.spawn(
        argv[0],
        argv[1:],
        env=box.env(),
        cwd=os.fsencode(cwd or box.workspace),
        dimensions=(40, 400),
        timeout=timeout,
    )
    child.expect(pexpect.EOF)
    data = child.before
    child.close()
    assert isinstance(data, bytes)
    return data


def _acts_or_hides(char: str) -> bool:
    """A character a terminal acts on, or that hides or reorders text (the joiners emoji use
    are text)."""
    if char in "\n\t":
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cs", "Zl", "Zp") or (category == "Cf" and char not in "\u200c\u200d")


def assert_visible(data: bytes, *expected: str) -> str:
    """``data`` (PTY bytes) holds no control, and each ``expected`` escape form; its text."""
    text = data.decode("utf-8")  # strict: a raw byte that is not UTF-8 (0x9b) fails here
    text = text.replace("\r\n", "\n")  # the PTY's own line ends
    bad = sorted({f"U+{ord(c):04X}" for c in text if _acts_or_hides(c)})
    assert not bad, f"{bad} reached the terminal:\n{text!r}"
    for form in expected:
        assert form in text, f"{form!r} not shown in:\n{text}"
    return text


def wait_ended(box: Box, session: str, timeout: float = 60) -> dict[str, object]:
    meta = box.egg_home / "sessions" / session / "egg.meta"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = json.loads(meta.read_text()) if meta.exists() else {}
        if data.get("state") in ("exited", "failed", "crashed"):
            return data
        time.sleep(0.1)
    raise AssertionError(f"session {session} did not end")


def host_git(box: Box, *args: str, cwd: Path | None = None) -> None:
    done = subprocess.run(
        box.identity.wrap(["git", *args]),
        cwd=cwd or box.workspace,
        env=box.env({"GIT_AUTHOR_DATE": "2026-01-01T00:00:00"}),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def make_repo(box: Box) -> None:
    host_git(box, "init", "-q")
    host_git(box, "commit", "-q", "--allow-empty", "-m", "start")


#: plants, from inside: a nested repository under a hostile name with an fsmonitor, staged as a
#: gitlink (the audit after the run quarantines it and says so, quoting the path)
PLANT_GIT = (
    'git init -q "$1" && git -C "$1" commit -q --allow-empty -m s && '
    'git -C "$1" config core.fsmonitor "true" && '
    'git update-index --add --cacheinfo "160000,$(git -C "$1" rev-parse HEAD),$1"'
)


# -- a transcript, and what a session says when it ends --------------------------------------

#: a fake ``claude`` (on PATH, run inside the sandbox): writes a transcript where Claude Code
#: does, a project key in ~/.claude.json that names an MCP server, and a planted repository
FAKE_CLAUDE = r"""#!/usr/bin/env python3
import json, os, re, subprocess, sys
args = sys.argv[1:]
ident = args[args.index("--session-id") + 1]
root = os.path.expanduser("~/.claude/projects/" + re.sub(r"[^A-Za-z0-9]", "-", os.getcwd()))
os.makedirs(root, exist_ok=True)
with open(os.path.join(root, ident + ".jsonl"), "w") as out:
    out.write(TRANSCRIPT.replace("@IDENT@", ident))
with open(os.path.expanduser("~/.claude.json"), "w") as out:
    json.dump({"projects": {HOSTILE: {"mcpServers": {"x": {"command": "true"}}}}}, out)
subprocess.run(["sh", "-c", PLANT_GIT, "sh", GIT_NAME], check=True)
"""


def transcript(ident: str) -> str:
    def record(kind: str, content: object) -> str:
        message = {"role": kind, "content": content}
        return json.dumps({"type": kind, "sessionId": ident, "message": message}) + "\n"

    return record("user", f"{READABLE} please {CORPUS} \udc9b") + record(
        "assistant",
        [
            {"type": "text", "text": f"line one\n\tindented {CORPUS}\nline three"},
            {"type": "tool_use", "id": "t1", "name": "Bash" + CORPUS, "input": {"c": CORPUS}},
        ],
    )


def test_a_hostile_transcript_and_the_end_of_its_session_are_shown_visibly(box: Box) -> None:
    make_repo(box)
    # an existing state file, so that egg reverts the key (a file the run created with only
    # a command in it is removed whole, and says so without the key's name)
    box.write(".claude.json", '{"numStartups": 1}\n')
    script = (
        FAKE_CLAUDE.replace("TRANSCRIPT", repr(transcript("@IDENT@")))
        .replace("HOSTILE", repr(CORPUS))
        .replace("PLANT_GIT", repr(PLANT_GIT))
        .replace("GIT_NAME", repr(RAW_NAME))
    )
    bin_dir = box.root / "bin"
    box.write(bin_dir / "claude", script, mode=0o755)
    box.extra_env["PATH"] = f"{bin_dir}:{box.env()['PATH']}"

    ended = on_pty(box, "run", "claude")

    # what egg says after the session: the settings it put back, the repository it quarantined
    after = ended.rsplit(b"[exited", 1)[-1]
    tail = assert_visible(after, *SHOWN, RAW_SHOWN)
    assert "reverted projects." in tail and "git: dropped core.fsmonitor" in tail
    [session] = [n for n in os.listdir(box.egg_home / "sessions") if not n.startswith(".")]
    wait_ended(box, session)

    listed = assert_visible(on_pty(box, "history"), "please \\x1b]52;c;cHduZWQ=\\x07")
    assert session in listed and READABLE in listed
    assert_visible(on_pty(box, "history", "--all"), "\\x9b2J")
    shown = assert_visible(on_pty(box, "history", "show", session), *SHOWN, "\\x9b")
    assert f"line one\n\tindented {SHOWN[0]}" in shown and "\nline three" in shown  # multi-line
    assert READABLE in shown and "[Bash\\x1b]52;c;" in shown
    as_json = assert_visible(on_pty(box, "history", "show", session, "--json"), "\\u001b]52")
    assert "\\u009b2J" in as_json and "\\u202e" in as_json
    assert json.loads(as_json)[0]["text"] == f"{READABLE} please {CORPUS} \udc9b"
    assert_visible(on_pty(box, "history", "--json"), "\\u001b]52")


# -- a session's directory and command ------------------------------------------------------


def test_a_sessions_hostile_directory_command_and_screen_are_shown_visibly(box: Box) -> None:
    made = box.exec("sh", "-c", 'mkdir -- "$1"', "sh", RAW_NAME)  # the sandbox names it
    assert made.returncode == 0, made.stderr
    where = box.workspace / RAW_NAME
    screen = "printf 'SCREEN u\\302\\255v k\\356\\200\\200l\\n'; sleep 60"
    started = box.run("run", "--detach", "--", "sh", "-c", screen, CORPUS, RAW_NAME, cwd=where)
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        deadline = time.monotonic() + 30  # its screen is there (a fixed sleep: not on a busy host)
        while not json.loads(box.run("status", session, "--json").stdout)["bytes"]:
            assert time.monotonic() < deadline, "the program never printed its screen"
            time.sleep(0.1)
        assert_visible(on_pty(box, "ls", cwd=where), RAW_SHOWN, "\\x1b]52;c;")
        assert_visible(on_pty(box, "ls", "--json", cwd=where), "\\u001b]52", "\\udcff\\udc9b")
        status = assert_visible(on_pty(box, "status", session), RAW_SHOWN, *SHOWN)
        assert "command     sh -c" in status
        assert_visible(on_pty(box, "status", session, "--json"), "\\u009b2J", "\\u202e")
        shown = assert_visible(on_pty(box, "status", session, "--screen"), "u\\xadv")
        assert "SCREEN" in shown
    finally:
        box.run("kill", session)


# -- a browser-open request, with clipboard writes off ---------------------------------------


def test_a_browser_open_request_is_shown_visibly_with_the_clipboard_off(box: Box) -> None:
    box.config({"clipboard": False})
    url = "https://example.com/" + RAW_NAME
    request = 'sleep 2; printf "%s\\n" "$1" >> /run/egg-session/browser-requests; sleep 2'

    received = on_pty(box, "run", "--", "sh", "-c", request, "sh", url)

    assert b"\x1b]52" not in received and b"\xc2\x9d" not in received
    start = received.index(b"[egg] open in your browser: ")
    notice = received[start : received.index(b"\r\n", start)]
    assert_visible(notice, "https://example.com/evil", *SHOWN[:-2], "\\x08\\x08", RAW_SHOWN)


# -- what egg exec says it put back ----------------------------------------------------------


def test_what_egg_exec_put_back_is_said_visibly(box: Box) -> None:
    make_repo(box)
    box.write(".claude.json", '{"numStartups": 1}\n')  # so the key is reverted, not the file
    plant = f"{PLANT_GIT} && printf '%s' \"$2\" > ~/.claude.json"
    settings = {"projects": {"P\x1b]0;t\x07": {"mcpServers": {"x": {"command": "true"}}}}}

    said = on_pty(
        box,
        "exec",
        "--agent",
        "claude",
        "--",
        "sh",
        "-c",
        plant,
        "sh",
        RAW_NAME,
        json.dumps(settings),
    )

    text = assert_visible(said, "git: dropped core.fsmonitor", RAW_SHOWN, "P\\x1b]0;t\\x07")
    assert "reverted projects.P" in text


# -- files and logs a sandbox shaped, read by the host ---------------------------------------


def test_policy_suggest_shows_a_hostile_log_and_its_name_visibly(box: Box) -> None:
    made = box.exec("sh", "-c", 'printf "x\\n" > "$1"', "sh", RAW_NAME)  # a name from inside
    assert made.returncode == 0, made.stderr
    log = box.workspace / RAW_NAME
    records = [
        {
            "time": CORPUS,
            "host": "api.example.com",
            "port": 443,
            "decision": "allow",
            "reason": "host not on the allowlist",
            "would_deny": True,
            "listed": False,
        },
        {
            "time": "t",
            "host": "x" + CORPUS,
            "port": 443,
            "decision": "allow",
            "reason": CORPUS,
            "would_deny": True,
            "listed": False,
        },
    ]
    box.write(log, "".join(json.dumps(r) + "\n" for r in records))

    shown = assert_visible(on_pty(box, "policy", "suggest", "--log", str(log)), RAW_SHOWN)
    assert "\\x1b]52;c;" in shown and "\\u202e" in shown
    assert_visible(on_pty(box, "policy", "suggest", "--log", str(log), "--json"), "\\u001b]52")


def test_an_error_that_quotes_a_hostile_path_is_one_visible_line(box: Box) -> None:
    made = box.exec("sh", "-c", 'printf "fs: [\\n" > "$1"', "sh", RAW_NAME)  # broken, from inside
    assert made.returncode == 0, made.stderr

    said = assert_visible(on_pty(box, "config", "validate", RAW_NAME), RAW_SHOWN, "\\x9b2J")
    assert said.count("\n") <= 1 and said.startswith("egg: error: ")


def test_tool_listings_show_hostile_definitions_and_errors_visibly(box: Box) -> None:
    escaped = "\\e]52;c;cHduZWQ=\\a \\x9b2J \\u202eexe"  # YAML's own escapes
    box.write(
        box.egg_home / "tools" / "good.yaml",
        f'name: good\ndescription: "{escaped}"\nrun: "true"\n',
    )
    box.write(box.egg_home / "tools" / f"{RAW_NAME}.yaml", "name: [\n")

    listed = assert_visible(on_pty(box, "tools"), "\\x1b]52;c;cHduZWQ=\\x07", "\\x9b2J", RAW_SHOWN)
    assert "good" in listed
    assert_visible(on_pty(box, "tools", "--json"), "\\u001b]52", "\\u202e")


def test_doctor_shows_guard_log_lines_visibly(box: Box) -> None:
    line = f"2026-01-01T00:00:00 NOT restored {RAW_NAME}\n"
    box.write(box.egg_home / "guard.log", os.fsencode(line))

    assert_visible(on_pty(box, "doctor"), "NOT restored evil\\x1b]52;c;", RAW_SHOWN)


def test_the_check_passes_readable_text_and_fails_the_corpus() -> None:
    """The oracle itself: a line of plain text passes, and the corpus raw does not."""
    assert_visible(READABLE.encode() + b"\r\n\tok\r\n", READABLE)
    for text, _ in HOSTILE.values():
        with pytest.raises(AssertionError):
            assert_visible(text.encode())
    with pytest.raises(UnicodeDecodeError):
        assert_visible(b"\x9b2J")
