"""Host tools: definitions (yaml-tools), the runner, and the tool socket, with real processes and
real Unix sockets. The sandbox side is tests/linux/test_tools_sandbox.py."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from egg_core.config.model import EggConfig
from egg_core.plugins import get_plugin_manager
from egg_core.tools import client as toolclient
from egg_core.tools import server as toolserver
from egg_core.tools.model import Tool, collect
from egg_core.tools.runner import MAX_OUTPUT, Caller, ToolRunner

CALLER = Caller(session="s-1", agent="claude", workspace="/")


def tool_file(egg_home: Path, name: str, text: str) -> Path:
    directory = egg_home / "tools"
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return path


def tools_of(egg_home: Path):
    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home)})
    return collect(pm, EggConfig(), egg_home)


# -- definitions


def test_a_tool_file_loads_with_every_key(egg_home):
    tool_file(
        egg_home,
        "gh-pr",
        'name: gh-pr\ndescription: open a PR\nrun: gh pr create --title "$1"\n'
        "env: {GH_TOKEN: t}\ntimeout: 2m\nmax_concurrent: 2\n"
        "params:\n  - {name: title, description: the title, required: true}\n  - {name: body}\n",
    )
    found = tools_of(egg_home)
    tool = found.tools["gh-pr"]
    assert (tool.timeout, tool.max_concurrent, dict(tool.env)) == (120.0, 2, {"GH_TOKEN": "t"})
    assert [(p.name, p.required) for p in tool.params] == [("title", True), ("body", False)]
    assert tool.source.endswith("tools/gh-pr.yaml") and found.errors == ()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: t\nrun: x\ntimout: 5s\n", ":3: timout: unknown key (did you mean 'timeout'?)"),
        ("name: t\n", "run: missing"),
        ("name: other\nrun: x\n", "name: 'other' is not the file's name ('t')"),
        ("name: t\nrun: x\ntimeout: soon\n", ":3: timeout:"),
        ("name: t\nrun: x\nmax_concurrent: 0\n", "max_concurrent: 0 is out of range"),
        ("name: t\nrun: [x\n", "YAML syntax error"),
        ("name: t\nrun: x\nparams: [{name: a, requird: true}]\n", "params[0].requird: unknown key"),
        ("name: t\nrun: x\nenv: {1A: x}\n", "env.1A: not a variable name"),
    ],
)
def test_a_broken_file_is_reported_with_file_line_and_key_and_the_others_load(egg_home, text, said):
    tool_file(egg_home, "good", "name: good\nrun: echo good\n")
    path = tool_file(egg_home, "t", text)
    found = tools_of(egg_home)
    assert "good" in found.tools and "t" not in found.tools
    [(source, why)] = found.errors
    assert source == str(path) and said in why and "\n" not in why
    assert found.enabled(["t"])[1] == [f"tool 't': {why}"]


def test_two_tools_of_one_name_are_an_error_naming_both(egg_home):
    path = tool_file(egg_home, "example-words", "name: example-words\nrun: wc -w\n")
    found = tools_of(egg_home)  # the example plugin defines example-words too
    assert "example-words" not in found.tools
    [(_, why)] = [e for e in found.errors if "twice" in e[1]]
    assert str(path) in why and "plugin example" in why


# -- the runner


def run(tool: Tool, *args: str):
    return ToolRunner().call(tool, list(args), CALLER)


def test_arguments_are_positional_never_part_of_the_command(tmp_path):
    marker = tmp_path / "pwned"
    tool = Tool(name="echo", run='printf "%s\\n" "$@"')
    hostile = [f"$(touch {marker})", "; touch " + str(marker), "--help", "`id`", "a b"]
    result = run(tool, *hostile)
    assert result.exit_code == 0 and result.stdout.splitlines() == hostile
    assert not marker.exists()


def test_the_callers_identity_is_set_last_and_cannot_be_spoofed(monkeypatch):
    monkeypatch.setenv("HOST_SECRET", "not-for-tools")
    tool = Tool(
        name="who",
        run='echo "$EGG_SESSION|$EGG_AGENT|$EGG_WORKSPACE|$EGG_TOOL|$MINE|${HOST_SECRET-unset}"',
        env={"EGG_SESSION": "spoofed", "EGG_TOOL": "spoofed", "MINE": "tool-env"},
    )
    assert run(tool).stdout == "s-1|claude|/|who|tool-env|unset\n"


def test_exit_code_and_stderr_pass_through():
    result = run(Tool(name="fail", run="echo oops >&2; exit 7"))
    assert (result.exit_code, result.stderr) == (7, "oops\n")


def test_a_timeout_kills_the_whole_group_grandchildren_too(tmp_path):
    pid_file = tmp_path / "grandchild"
    tool = Tool(
        name="slow", run=f"sh -c 'echo $$ > {pid_file}; exec sleep 60' & sleep 60", timeout=1
    )
    started = time.monotonic()
    result = run(tool)
    assert result.exit_code == 124 and "timeout" in result.stderr
    assert time.monotonic() - started < 30  # not the 60 s of the sleeps (room for a busy host)
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild outlived the tool's timeout")


def test_output_is_cut_at_the_cap_with_a_note():
    result = run(Tool(name="loud", run="head -c 3000000 /dev/zero | tr '\\0' x"))
    assert len(result.stdout) == MAX_OUTPUT and "stdout cut" in result.stderr


def test_max_concurrent_never_runs_two_at_once(tmp_path):
    lock, log = tmp_path / "lock", tmp_path / "log"
    script = (
        f"if mkdir {lock} 2>/dev/null; then sleep 0.3; rmdir {lock}; echo ok >> {log}; "
        f"else echo OVERLAP >> {log}; fi"
    )
    tool = Tool(name="one", run=script, max_concurrent=1, timeout=20)
    runner = ToolRunner()
    threads = [threading.Thread(target=runner.call, args=(tool, [], CALLER)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert log.read_text().split() == ["ok", "ok", "ok"]


def test_a_python_tool_gets_its_arguments_and_the_identity(egg_home):
    found = tools_of(egg_home)
    result = ToolRunner().call(found.tools["example-words"], ["one two", "three"], CALLER)
    assert result.stdout == "3 words (asked by s-1)\n"


def test_a_required_parameter_left_out_is_refused_without_running(tmp_path, egg_home):
    mark = tmp_path / "ran"
    tool_file(
        egg_home,
        "mark",
        f'name: mark\nrun: touch {mark}; printf "%s|" "$@"\n'
        "params: [{name: title}, {name: body, required: true}, {name: footer}]\n",
    )
    tool = tools_of(egg_home).tools["mark"]
    said = "tool mark: missing the required parameter 'body' (usage: mark [title] body [footer])"
    for args in ([], ["a title"]):
        result = ToolRunner().call(tool, args, CALLER)
        assert (result.exit_code, result.error, result.stdout) == (2, said, ""), args
    assert not mark.exists()
    given = ToolRunner().call(tool, ["", ""], CALLER)  # given, even empty: "$2" is there
    assert (given.exit_code, given.stdout) == (0, "||") and mark.exists()


# -- the socket


@pytest.fixture
def server(tmp_path, egg_home):
    tool_file(egg_home, "hello", 'name: hello\nrun: echo "hello $1"\n')
    tool_file(egg_home, "secret", "name: secret\nrun: echo never\n")
    tool_file(
        egg_home, "noise", "name: noise\nrun: head -c 3000000 /dev/urandom | tee /dev/stderr\n"
    )
    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home)})
    directory = Path(os.path.realpath("/var/tmp")) / f"egg-tools-test-{os.getpid()}-{tmp_path.name}"
    serving = toolserver.ToolServer(
        directory,
        ["hello", "noise"],
        lambda: collect(pm, EggConfig(), egg_home),
        CALLER,
        signature=lambda: toolserver.tools_signature(egg_home),
    ).start()
    yield serving
    serving.stop()
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


def ask(server, payload) -> dict:
    return toolclient.request(str(server.socket_path), payload)


def test_a_call_and_a_list_through_the_socket(server):
    assert (
        ask(server, {"action": "call", "tool": "hello", "args": ["you"]})["stdout"] == "hello you\n"
    )
    listed = ask(server, {"action": "list"})
    assert [t["name"] for t in listed["tools"]] == ["hello", "noise"]  # only the enabled ones


def test_the_largest_answer_gets_through(server):
    answer = ask(server, {"action": "call", "tool": "noise", "args": []})
    assert answer["exit_code"] == 0 and "stdout cut" in answer["stderr"]
    assert len(answer["stdout"]) >= MAX_OUTPUT // 2


def test_a_tool_not_enabled_is_refused_without_running(server):
    answer = ask(server, {"action": "call", "tool": "secret", "args": []})
    assert (
        "not enabled" in answer["error"] and answer["exit_code"] == 2 and not answer.get("stdout")
    )


def test_garbage_half_oversized_and_silent_clients_do_not_stop_the_socket(server, monkeypatch):
    monkeypatch.setattr(toolserver, "REQUEST_TIMEOUT", 0.5)
    path = str(server.socket_path)
    clients = []
    for payload in (
        b"\x00\x00\x00\x05nope!",  # not JSON
        b"\x00\x00\x00\x10{",  # half a request, then nothing
        struct.pack(">I", toolserver.MAX_REQUEST + 1) + b"x" * 100,  # too large
        b"GET / HTTP/1.1\r\n\r\n",  # not our protocol
        b"",  # says nothing at all
    ):
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
        sock.sendall(payload)
        clients.append(sock)
    answer = ask(server, {"action": "call", "tool": "hello", "args": ["still"]})
    assert answer["stdout"] == "hello still\n"
    for sock in clients:
        sock.settimeout(5)
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass  # dropped
        except TimeoutError:
            raise AssertionError("a bad client was never answered nor dropped") from None
        if data:
            assert json.loads(data[4:]).get("error")
        sock.close()
    wrong = ask(server, {"action": "call", "tool": "hello", "args": [1, 2]})
    assert "string" in wrong["error"]


def test_an_edited_tool_is_seen_on_the_next_call(server, egg_home):
    tool_file(egg_home, "hello", 'name: hello\nrun: echo "HI $1"\n')
    assert ask(server, {"action": "call", "tool": "hello", "args": ["x"]})["stdout"] == "HI x\n"
    tool_file(egg_home, "hello", "name: hello\nrun: [broken\n")
    answer = ask(server, {"action": "call", "tool": "hello", "args": []})
    assert "YAML syntax error" in answer["error"]


def test_a_call_through_the_socket_that_leaves_out_a_required_parameter(tmp_path, egg_home):
    """Refused by the socket before the call is audited (no guard pause for it), in the one
    line the runner gives every caller."""
    mark = tmp_path / "ran"
    tool_file(
        egg_home,
        "mark",
        f"name: mark\nrun: touch {mark}\nparams: [{{name: who, required: true}}]\n",
    )
    pm = get_plugin_manager(environ={"EGG_HOME": str(egg_home)})
    directory = Path(os.path.realpath("/var/tmp")) / f"egg-tools-test-{os.getpid()}-{tmp_path.name}"
    serving = toolserver.ToolServer(
        directory, ["mark"], lambda: collect(pm, EggConfig(), egg_home), CALLER
    ).start()
    try:
        answer = ask(serving, {"action": "call", "tool": "mark", "args": []})
        assert answer == {
            "error": "tool mark: missing the required parameter 'who' (usage: mark who)",
            "exit_code": 2,
        }
        assert not mark.exists()
    finally:
        serving.stop()
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def test_the_client_without_a_socket_says_so(monkeypatch, capsys):
    monkeypatch.delenv("EGG_TOOL_SOCKET", raising=False)
    assert toolclient.main(["hello"]) == 2
    assert "no tool socket here" in capsys.readouterr().err


# -- the command line


def egg_cli(egg_home: Path, cwd: Path, *args: str):
    import subprocess
    import sys

    env = {**os.environ, "EGG_HOME": str(egg_home)}
    return subprocess.run(
        [sys.executable, "-P", "-m", "egg_core.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_egg_tools_lists_tools_sources_params_and_load_errors(egg_home, tmp_path):
    tool_file(egg_home, "hello", "name: hello\nrun: echo hi\nparams: [{name: who}]\n")
    broken = tool_file(egg_home, "broken", "name: broken\nrun: x\ntimout: 1s\n")
    (tmp_path / "egg.yaml").write_text("tools: [hello]\n")
    data = json.loads(egg_cli(egg_home, tmp_path, "tools", "--json").stdout)
    tools = {t["name"]: t for t in data["tools"]}
    assert tools["hello"]["enabled"] is True and tools["hello"]["params"][0]["name"] == "who"
    assert tools["example-words"]["source"] == "plugin example"
    assert tools["example-words"]["enabled"] is False
    assert data["errors"] == [
        {
            "source": str(broken),
            "error": f"{broken}:3: timout: unknown key (did you mean 'timeout'?)",
        }
    ]
    text = egg_cli(egg_home, tmp_path, "tools")
    assert "hello [who]  (enabled here" in text.stdout and "cannot load" in text.stderr


def test_egg_tool_call_help_on_the_host(egg_home, tmp_path):
    """No tool socket on the host, but --help still answers (and says what it is for)."""
    for flag in ("--help", "-h"):
        result = egg_cli(egg_home, tmp_path, "tool-call", flag)
        assert result.returncode == 0 and result.stderr == "", result
        assert result.stdout.startswith("usage: egg tool-call NAME [ARGS...]")
        assert "--list" in result.stdout and "egg tools" in result.stdout


def test_config_validate_reports_a_tools_name_no_tool_defines(egg_home, tmp_path):
    """The check egg exec makes at launch, word for word, so that what validates also starts."""
    tool_file(egg_home, "hello", "name: hello\nrun: echo hi\n")
    tool_file(egg_home, "broken", "name: broken\nrun: x\ntimout: 1s\n")
    config = tmp_path / "egg.yaml"
    for names, problem in [
        ("[hello, nosuch]", "tool 'nosuch' is not defined (egg tools lists the tools)"),
        ("[broken]", "tool 'broken': "),
    ]:
        config.write_text(f"tools: {names}\n")
        checked = egg_cli(egg_home, tmp_path, "config", "validate")
        assert checked.returncode == 2 and checked.stdout == "", checked
        (line,) = checked.stderr.splitlines()
        assert line.startswith(f"egg: error: {config}: tools: {problem}"), line
        launched = egg_cli(egg_home, tmp_path, "exec", "--", "true")
        assert launched.returncode == 125 and launched.stderr.strip().endswith(
            line.split(": tools: ", 1)[1]
        ), launched
    config.write_text("tools: [hello, example-words]\n")
    checked = egg_cli(egg_home, tmp_path, "config", "validate")
    assert (checked.returncode, checked.stdout) == (0, "ok\n"), checked


def test_explain_lists_the_enabled_tools_and_where_each_is_defined(egg_home, tmp_path):
    path = tool_file(egg_home, "hello", "name: hello\nrun: echo hi\n")
    (tmp_path / "egg.yaml").write_text("tools: [hello, example-words]\n")
    data = json.loads(egg_cli(egg_home, tmp_path, "explain", "--json").stdout)
    assert [(t["name"], t["source"]) for t in data["tools"]] == [
        ("hello", str(path)),
        ("example-words", "plugin example"),
    ]
    text = egg_cli(egg_home, tmp_path, "explain").stdout
    assert f"hello ({path})" in text


def test_tools_merge_through_a_base_chain(egg_home, tmp_path):
    (tmp_path / "base.yaml").write_text("tools: [a-tool]\n")
    (tmp_path / "egg.yaml").write_text("base: ./base.yaml\ntools: [b-tool, a-tool]\n")
    shown = egg_cli(egg_home, tmp_path, "config", "show", "--resolved", "--json")
    assert json.loads(shown.stdout)["tools"] == ["a-tool", "b-tool"]
