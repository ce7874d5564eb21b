"""Host tools from inside a real sandbox, as root and as an unprivileged user: the shims on PATH,
``egg tool-call``, refusals, and what the sandbox can and cannot reach of the tool machinery."""

from __future__ import annotations

import json
import time

from tests.linux.conftest import EGG, Box

HELLO = (
    "name: hello\n"
    "description: greet, on the host\n"
    'run: printf "%s|" "$@"; echo "$EGG_SESSION|$EGG_TOOL|$TOKEN"; exit 3\n'
    "env: {TOKEN: host-only-token}\n"
    "params: [{name: who, required: true}]\n"
)


def with_tools(box: Box, *enabled: str) -> None:
    box.write(box.egg_home / "tools" / "hello.yaml", HELLO)
    box.write(box.egg_home / "tools" / "other.yaml", "name: other\nrun: echo other\n")
    box.config({"tools": list(enabled)})


def test_the_shim_calls_the_tool_on_the_host_with_arguments_verbatim(box: Box) -> None:
    with_tools(box, "hello")
    result = box.exec("sh", "-c", "hello '$(id)' ';id' --help; echo \"code=$?\"")
    first, code = result.stdout.splitlines()
    assert first.startswith("$(id)|;id|--help|exec-") and first.endswith("|hello|host-only-token")
    assert code == "code=3"


def test_egg_tool_call_lists_only_what_is_enabled_and_refuses_the_rest(box: Box) -> None:
    with_tools(box, "hello")
    listed = box.exec("egg-tool-call", "--list", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["hello"], listed.stderr
    refused = box.exec("sh", "-c", "egg-tool-call other; echo code=$?")
    assert "not enabled for this sandbox" in refused.stderr and "code=2" in refused.stdout
    assert "other\n" not in refused.stdout.splitlines()


def test_a_required_parameter_left_out_is_refused_for_every_caller_inside(box: Box) -> None:
    """The shim, ``egg-tool-call`` and ``egg tool-call`` get the one check: one line naming
    the parameter, exit 2, and the tool's command never starts (its mark is never made)."""
    mark = box.witness("ran")
    box.write(
        box.egg_home / "tools" / "mark.yaml",
        f"name: mark\nrun: touch {mark}; echo ran\n"
        "params: [{name: title, required: true}, {name: body}]\n",
    )
    box.config({"tools": ["mark"]})
    callers = {
        "shim": "mark",
        "egg-tool-call": "egg-tool-call mark",
        "egg": f"{EGG} tool-call mark",
    }
    script = "; ".join(f"{call} 2>&1; echo {name}=$?" for name, call in callers.items())
    result = box.exec("sh", "-c", script)
    said = "tool mark: missing the required parameter 'title' (usage: mark title [body])"
    assert result.stdout.splitlines() == [
        line for name in callers for line in (f"egg tool-call: {said}", f"{name}=2")
    ], result
    assert not mark.exists()
    given = box.exec("sh", "-c", "mark 'a title'")
    assert (given.returncode, given.stdout) == (0, "ran\n"), given
    assert mark.exists()


def test_no_tool_machinery_when_no_tool_is_enabled(box: Box) -> None:
    with_tools(box)
    found = box.probe(
        "report(socket=os.environ.get('EGG_TOOL_SOCKET'), dir=os.path.exists('/run/egg-tools'))"
    )
    assert found == {"socket": None, "dir": False}


def test_the_tool_directory_is_read_only_and_the_definitions_invisible(box: Box) -> None:
    with_tools(box, "hello")
    found = box.probe(
        "report(shim=attempt(write, '/run/egg-tools/bin/hello'),"
        " new=attempt(write, '/run/egg-tools/bin/evil'),"
        f" defs=attempt(read, {str(box.egg_home / 'tools' / 'hello.yaml')!r}))"
    )
    assert found["shim"] != "ok" and found["new"] != "ok" and found["defs"] != "ok"
    assert "host-only-token" not in json.dumps(found)


def test_an_enabled_tool_that_is_broken_or_missing_stops_the_launch(box: Box) -> None:
    with_tools(box, "hello", "nosuch")
    result = box.exec("true")
    assert result.returncode == 125 and len(result.stderr.strip().splitlines()) == 1
    assert "tool 'nosuch' is not defined" in result.stderr
    box.write(box.egg_home / "tools" / "hello.yaml", "name: hello\nrun: x\ntimout: 1s\n")
    box.config({"tools": ["hello"]})
    result = box.exec("true")
    assert result.returncode == 125 and "timout: unknown key" in result.stderr


def test_egg_run_whose_session_cannot_start_exits_125_as_egg_exec_does(box: Box) -> None:
    with_tools(box, "hello", "nosuch")

    for args in (("run", "--", "true"), ("run", "--detach", "--", "true")):
        result = box.run(*args)
        assert result.returncode == 125, result
        (line,) = result.stderr.strip().splitlines()
        assert "failed to start: tool 'nosuch' is not defined" in line


def test_another_sandbox_cannot_reach_a_sessions_tool_socket(box: Box) -> None:
    with_tools(box, "hello")
    started = box.run("run", "--detach", "--", "sleep", "60")
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    sock = box.egg_home / "sessions" / session / "tools" / "tool.sock"
    deadline = time.monotonic() + 20
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sock.exists()
    try:
        found = box.probe(
            f"report(connect=attempt(connect, socket.AF_UNIX, {str(sock)!r}),"
            " own=os.environ.get('EGG_TOOL_SOCKET'))"
        )
        assert found["connect"] != "ok"
        assert found["own"] == "/run/egg-tools/tool.sock"  # its own socket, not the session's
    finally:
        box.run("kill", session)
