"""Hostile requests on the tool socket, sent from inside a real sandbox: each gets an error reply
or a closed connection, egg prints no traceback anywhere, and the next call works. A deep
``$EGG_HOME`` (longer than a unix socket path may be) still gets its tools."""

from __future__ import annotations

import json
import time

import pytest

from tests.linux.conftest import PRELUDE, PY, Box

GREET = 'name: greet\nrun: echo "hi $1"\n'

ATTACKS = r"""
import struct
path = os.environ["EGG_TOOL_SOCKET"]

def ask(raw):
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(20)
    sock.connect(path)
    try:
        sock.sendall(struct.pack(">I", len(raw)) + raw)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        return "closed: " + type(exc).__name__
    finally:
        sock.close()
    if not data:
        return "closed"
    return json.loads(data[4:])

def call(*args, tool="greet"):
    return json.dumps({"action": "call", "tool": tool, "args": list(args)}).encode()

answers = {
    "nested": ask(b"[" * 200000 + b"]" * 200000),
    "nested_object": ask(b'{"action": "call", "tool": "greet", "args": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
    "nul": ask(call("a\u0000b")),
    "nul_tool": ask(call("x", tool="gr\u0000eet")),
    "garbage": ask(b"\xff\xfe not json at all"),
    "not_utf8": ask(b'{"action": "call", "tool": "greet", "args": ["\xff"]}'),
    "huge_number": ask(b'{"action": "call", "tool": "greet", "args": [' + b"9" * 100000 + b"]}"),
    "surrogate": ask(b'{"action": "call", "tool": "greet", "args": ["\\ud800"]}'),
    "then": ask(call("you")),
}
report(**{k: (v if isinstance(v, str) else {"error": v.get("error"), "exit_code": v.get("exit_code"), "stdout": v.get("stdout")}) for k, v in answers.items()})
"""


def test_hostile_requests_get_an_answer_and_the_next_call_works(box: Box) -> None:
    box.write(box.egg_home / "tools" / "greet.yaml", GREET)
    box.config({"tools": ["greet"]})
    result = box.py(ATTACKS)

    assert result.returncode == 0, result.stderr
    found = result.json()
    assert found["then"]["stdout"] == "hi you\n"
    for name, answer in found.items():
        if name == "then":
            continue
        closed = isinstance(answer, str) and answer.startswith("closed")
        assert closed or (answer["error"] and answer["exit_code"] == 2), (name, answer)
    assert found["nul"]["error"] and "NUL" in found["nul"]["error"]
    assert "Traceback" not in result.stderr and "Error" not in result.stderr, result.stderr


@pytest.mark.parametrize("identity", ["root"], indirect=True)
def test_a_session_survives_hostile_requests_without_a_traceback_in_its_log(box: Box) -> None:
    box.write(box.egg_home / "tools" / "greet.yaml", GREET)
    box.config({"tools": ["greet"]})
    script = box.write(box.root / "attacks.py", PRELUDE + ATTACKS)
    started = box.run("run", "--detach", "--", "sh", "-c", f"{PY} -I {script} > out.json; sleep 60")
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    try:
        out = box.workspace / "out.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()):
            time.sleep(0.2)
        assert json.loads(out.read_text())["then"]["stdout"] == "hi you\n"
        log = (box.egg_home / "sessions" / session / "egg.log").read_text()
        assert "Traceback" not in log, log
    finally:
        box.run("kill", session)


def test_a_deep_egg_home_still_gets_its_tools(box: Box) -> None:
    """A unix socket's path has room for about 107 bytes: the tool socket, like the proxy's,
    moves to a short private directory when ``$EGG_HOME`` is deep."""
    # the tool socket's path would not fit; the session's own socket (shorter) still does
    room = 105 - len(str(box.home)) - len("/sessions/12345678/egg.sock") - 1
    deep = box.mkdir(box.home / ("d" * room), mode=0o700)
    assert len(str(deep / "sessions/12345678/tools/tool.sock")) > 108
    env = {"EGG_HOME": str(deep)}
    box.write(deep / "tools" / "greet.yaml", GREET)
    box.config({"tools": ["greet"]})

    result = box.exec("greet", "deep", env=env)
    session = box.run("run", "--", "greet", "session", env=env)

    assert result.returncode == 0 and result.stdout == "hi deep\n", result.stderr
    assert session.returncode == 0, session.stderr
    # the socket stays in the run's own directory under $EGG_HOME (bound through
    # /proc/self/fd), not in a /tmp directory another sandbox could be given with rw:/tmp
    mounted = box.probe(
        "report(m=[l.split()[3] for l in open('/proc/self/mountinfo')"
        " if l.split()[4] == '/run/egg-tools'])",
        env=env,
    )["m"]
    assert mounted and all(str(deep) in m for m in mounted), mounted


def test_an_egg_home_too_deep_for_a_sessions_socket_is_one_line(box: Box) -> None:
    deep = box.mkdir(box.home / ("d" * 100), mode=0o700)
    result = box.run("run", "--", "true", env={"EGG_HOME": str(deep)})
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "too deep for a session's socket" in result.stderr
    assert not (deep / "sessions").exists() or not list((deep / "sessions").iterdir())
