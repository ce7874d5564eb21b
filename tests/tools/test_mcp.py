"""``egg mcp``: the host tools over MCP, driven by the official SDK's own client, over stdio and
over streamable HTTP on loopback (good token, wrong token, none)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.tools.test_tools import tool_file

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]
TOKEN = "egg-mcp-test-token-0123456789"


@pytest.fixture
def env(egg_home: Path, egg_user_home: Path) -> dict[str, str]:
    tool_file(
        egg_home,
        "greet",
        'name: greet\ndescription: greet someone\nrun: echo "hi $1$2"\n'
        "params: [{name: who, required: true}, {name: suffix}]\n",
    )
    tool_file(egg_home, "fail", "name: fail\nrun: echo bad >&2; exit 5\n")
    tool_file(egg_home, "echo-all", 'name: echo-all\nrun: printf "%s," "$@"\n')
    return {**os.environ, "EGG_HOME": str(egg_home), "HOME": str(egg_user_home)}


async def exercise(session: ClientSession) -> dict[str, object]:
    await session.initialize()
    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    greet = await session.call_tool("greet", {"who": "$(id)", "suffix": "!"})
    fail = await session.call_tool("fail", {})
    echo = await session.call_tool("echo-all", {"args": ["a b", ";c"]})
    missing = [await session.call_tool("greet", arguments) for arguments in ({}, {"suffix": "!"})]
    return {"tools": tools, "greet": greet, "fail": fail, "echo": echo, "missing": missing}


def check(found: dict[str, object], names: set[str]) -> None:
    tools = found["tools"]
    assert set(tools) == names  # type: ignore[arg-type]
    schema = tools["greet"].input_schema  # type: ignore[index]
    assert schema["required"] == ["who"] and set(schema["properties"]) == {"who", "suffix"}
    greet = found["greet"]
    assert not greet.is_error and greet.content[0].text == "hi $(id)!\n"  # type: ignore[attr-defined]
    fail = found["fail"]
    assert fail.is_error and "bad" in fail.content[0].text and "exit code 5" in fail.content[0].text  # type: ignore[attr-defined]
    echo = found["echo"]
    assert echo.content[0].text == "a b,;c,"  # type: ignore[attr-defined]
    for missing in found["missing"]:  # type: ignore[attr-defined]
        # the line the shims and egg tool-call get for it (the runner's one check)
        assert missing.is_error and missing.content[0].text == (
            "tool greet: missing the required parameter 'who' (usage: greet who [suffix])\n"
            "(exit code 2)"
        )


def test_stdio_with_the_sdks_client(env, tmp_path):
    params = StdioServerParameters(
        command=EGG[0], args=[*EGG[1:], "mcp"], env=env, cwd=str(tmp_path)
    )

    async def main() -> dict[str, object]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await exercise(session)

    check(anyio.run(main), {"greet", "fail", "echo-all", "example-words"})


def test_the_server_reports_eggs_version(env, tmp_path):
    from importlib.metadata import version

    import egg_core

    params = StdioServerParameters(
        command=EGG[0], args=[*EGG[1:], "mcp"], env=env, cwd=str(tmp_path)
    )

    async def main() -> object:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return (await session.initialize()).server_info

    info = anyio.run(main)
    assert (info.name, info.version) == ("egg", egg_core.__version__)  # type: ignore[attr-defined]
    assert info.version == version("egg-sandbox")  # type: ignore[attr-defined]


def test_stdio_serves_only_the_named_tools(env, tmp_path):
    params = StdioServerParameters(
        command=EGG[0], args=[*EGG[1:], "mcp", "--tool", "greet"], env=env, cwd=str(tmp_path)
    )

    async def main() -> set[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            refused = await session.call_tool("fail", {})
            assert refused.is_error and "no tool 'fail'" in refused.content[0].text
            return names

    assert anyio.run(main) == {"greet"}


def test_an_argument_no_command_line_can_carry_is_an_error_not_a_traceback(env, tmp_path):
    errors = tmp_path / "stderr"
    params = StdioServerParameters(
        command=EGG[0], args=[*EGG[1:], "mcp"], env=env, cwd=str(tmp_path)
    )

    async def main() -> list[object]:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                nul = await session.call_tool("greet", {"who": "a\x00b"})
                after = await session.call_tool("greet", {"who": "you"})
                return [nul, after]

    # (a lone surrogate cannot be sent: the SDK's client refuses to encode it)
    nul, after = anyio.run(main)
    assert nul.is_error and "NUL" in nul.content[0].text  # type: ignore[attr-defined]
    assert after.content[0].text == "hi you\n"  # type: ignore[attr-defined]
    assert "Traceback" not in errors.read_text()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(env, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    port = free_port()
    proc = subprocess.Popen(
        [*EGG, "mcp", "--http", f"127.0.0.1:{port}", "--token-file", str(token_file)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def test_http_with_the_right_token(http_server):
    async def main() -> dict[str, object]:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(http_server, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await exercise(session)

    check(anyio.run(main), {"greet", "fail", "echo-all", "example-words"})


@pytest.mark.parametrize("header", [None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}"])
def test_http_without_the_right_token_gets_401(http_server, header):
    import httpx2

    headers = {"Authorization": header} if header else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = httpx2.post(
        http_server,
        json=body,
        headers={**headers, "Accept": "application/json, text/event-stream"},
    )
    assert reply.status_code == 401


def test_bad_http_arguments_are_one_line_and_exit_2(env, tmp_path):
    short = tmp_path / "short"
    short.write_text("abc\n")
    short.chmod(0o600)
    for args, said in [
        (["--http", "127.0.0.1:99999", "--token-file", str(short)], "expected HOST:PORT"),
        (["--http", "127.0.0.1:8765"], "needs --token-file"),
        (["--http", "127.0.0.1:8765", "--token-file", str(short)], "16 characters"),
        (["--http", "127.0.0.1:8765", "--token-file", str(tmp_path / "none")], "--token-file"),
        (["--tool", "nosuch"], "not defined"),
    ]:
        result = subprocess.run(
            [*EGG, "mcp", *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 2, (args, result.stderr)
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("mode", "may"), [(0o644, "read"), (0o640, "read"), (0o604, "read"), (0o620, "write")]
)
def test_a_token_file_others_may_read_is_refused_and_nothing_serves(env, tmp_path, mode, may):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(mode)
    result = subprocess.run(
        [*EGG, "mcp", "--http", "127.0.0.1:8765", "--token-file", str(token_file)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stdout == "", result
    # the one line, and not the one egg prints as it starts serving ("egg: MCP on http://...")
    assert result.stderr.splitlines() == [
        f"egg: error: --token-file {token_file}: group or others may {may} it "
        f"(mode {mode:04o}); chmod 600 {token_file}"
    ]
