"""egg from the installed wheel, run from outside the checkout with nothing of it on ``sys.path``:
every built-in plugin loads, a host tool is listed, called from inside the real sandbox and served
over MCP to the SDK's own client, and the test harness's network seam still plugs in. The
``egg`` command is egg's own launcher whichever pip installs the wheel, and a cache hit of the
installed egg imports what a hit of the checkout's may and nothing more. The suite's editable
install passes all of this with a package missing from the wheel."""

from __future__ import annotations

import json
import socket
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.linux.conftest import Box, Listen
from tests.linux.test_network import PROXY, PUBLIC, seam
from tests.test_exec_cache import HIT_ATTEMPTS, hit, miss_reason, own_miss
from tests.test_exec_cache_hitpath import DEBUG, PLAIN_HIT, SHA256, modules

from .conftest import BASE_PYTHON, ROOT, Installed, run_step

#: every plugin egg ships: its entry points, as the checkout declares them
BUILTINS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["egg"]
ROOT_ONLY = pytest.mark.parametrize("identity", ["root"], indirect=True)

WHERE_EGG_COMES_FROM = """
import importlib, importlib.metadata, json, sys
import egg_core, egg_plugins
print(json.dumps({
    "modules": [egg_core.__file__, *egg_plugins.__path__] + [
        importlib.import_module(entry.value).__file__
        for entry in importlib.metadata.entry_points(group="egg")
    ],
    "path": sys.path,
}))
"""


def note_tool(box: Box) -> Path:
    """``$EGG_HOME/tools/note.yaml``: a tool that writes its argument to a host file the sandbox
    cannot write (outside the workspace), and says so on stdout. Returns the note's path."""
    note = box.mkdir(box.root / "host-side") / "note"
    box.write(
        box.egg_home / "tools" / "note.yaml",
        "name: note\n"
        "description: leave a note on the host\n"
        'run: printf "%s|%s\\n" "$1" "$EGG_TOOL" > "$NOTE"; echo "noted $1"\n'
        f"env: {{NOTE: {json.dumps(str(note))}}}\n"
        "params: [{name: text, required: true}]\n",
    )
    return note


@ROOT_ONLY
def test_nothing_of_the_checkout_is_imported(box: Box, installed: Installed) -> None:
    env = box.env()
    assert "PYTHONPATH" not in env
    found = subprocess.run(
        [installed.python, "-c", WHERE_EGG_COMES_FROM],
        env=env,
        cwd=box.workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    where = json.loads(found.stdout)

    prefix = installed.prefix.resolve()
    assert [m for m in where["modules"] if not Path(m).resolve().is_relative_to(prefix)] == []
    assert [
        p for p in where["path"] if Path(p or box.workspace).resolve().is_relative_to(ROOT)
    ] == []


@ROOT_ONLY
def test_egg_plugins_loads_every_builtin_plugin(box: Box, installed: Installed) -> None:
    result = box.run("plugins", "--json", egg=installed.egg)

    assert result.returncode == 0, result.stderr
    seen = {
        report["name"]: (
            report["distribution"],
            report["builtin"],
            report["status"],
            report["error"],
        )
        for report in json.loads(result.stdout)
    }
    assert seen == {name: ("egg-sandbox", True, "loaded", None) for name in BUILTINS}


@ROOT_ONLY
def test_egg_tools_lists_a_tool_from_egg_home(box: Box, installed: Installed) -> None:
    note_tool(box)

    result = box.run("tools", "--json", egg=installed.egg)

    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [(t["name"], t["source"]) for t in listed["tools"]] == [
        ("note", str(box.egg_home / "tools" / "note.yaml"))
    ]
    assert listed["errors"] == []


def test_egg_exec_runs_a_command_in_the_sandbox(box: Box, installed: Installed) -> None:
    result = box.exec("true", options=["--platform", "linux-ns"], egg=installed.egg)

    assert (result.returncode, result.stderr) == (0, "")


def test_the_distributions_own_pip_installs_the_wheel_with_eggs_launcher(
    installed: Installed, tmp_path: Path
) -> None:
    """A venv as ``python3 -m venv`` makes it, with the pip the distribution bundles (Debian 12's
    is 23.0.1, whose console-script wrappers import ``re``): ``bin/egg`` is ``launcher/egg``
    there too, only its first line the interpreter's."""
    venv = tmp_path / "venv"
    run_step([BASE_PYTHON, "-m", "venv", str(venv)], "making a venv with its own pip")
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    argv = [*pip, "install", "--quiet", "--no-deps", "--no-index", str(installed.wheel)]
    run_step(argv, "installing the wheel with the venv's own pip")
    for prefix in (venv, installed.prefix):
        first, _, rest = (prefix / "bin" / "egg").read_text().partition("\n")

        assert first.startswith(f"#!{prefix}/bin/python"), first
        assert rest == (ROOT / "launcher" / "egg").read_text().partition("\n")[2]


@ROOT_ONLY
def test_a_hit_of_the_installed_egg_imports_only_what_a_hit_may(
    box: Box, installed: Installed
) -> None:
    """The modules pinned for a hit (tests/test_exec_cache_hitpath.py), from the installed
    ``egg`` itself: its launcher and the wheel's files, not the checkout's."""
    env = {"EGG_EXEC_CACHE": "debug", "PYTHONPROFILEIMPORTTIME": "1"}
    reasons = []
    for _ in range(1 + HIT_ATTEMPTS):  # as cached_call: the first stores, a host's miss is retried
        result = box.run("exec", "--", "true", env=env, egg=installed.egg)
        assert result.returncode == 0, result.stderr
        if hit(result):
            break
        reasons.append(miss_reason(result))
        assert not own_miss(reasons[-1], box.workspace, box.env(env)), reasons
    else:
        raise AssertionError(f"no hit: {reasons}")
    start = subprocess.run(
        [installed.python, "-X", "importtime", "-c", "pass"],
        env=box.env(),
        cwd=box.workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )

    new = modules(result.stderr) - modules(start.stderr)
    assert sorted(new - PLAIN_HIT - SHA256 - DEBUG) == []
    assert "egg_core.cachedrun" in new


def test_egg_exec_calls_a_host_tool_from_inside(box: Box, installed: Installed) -> None:
    note = note_tool(box)
    box.config({"tools": ["note"]})

    result = box.exec(
        "note", "from the sandbox", options=["--platform", "linux-ns"], egg=installed.egg
    )

    assert (result.returncode, result.stdout) == (0, "noted from the sandbox\n"), result.stderr
    assert note.read_text() == "from the sandbox|note\n"


@ROOT_ONLY
def test_egg_mcp_serves_the_tools_to_the_sdks_client(box: Box, installed: Installed) -> None:
    note = note_tool(box)
    server = StdioServerParameters(
        command=installed.egg, args=["mcp"], env=box.env(), cwd=str(box.workspace)
    )

    async def main() -> tuple[list[str], bool, str]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            called = await session.call_tool("note", {"text": "over mcp"})
            return names, called.is_error, called.content[0].text  # type: ignore[union-attr]

    assert anyio.run(main) == (["note"], False, "noted over mcp\n")
    assert note.read_text() == "over mcp|note\n"


@ROOT_ONLY
def test_the_network_seam_plugs_into_the_installed_egg(
    box: Box, installed: Installed, listen: Listen
) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)

    found = box.probe(
        PROXY + "report(**via_proxy('api.example.com:443', b'hello api'))",
        config={"network": ["api.example.com"]},
        env=seam(("api.example.com", PUBLIC, server.port)),
        egg=installed.egg,
    )

    assert found == {"status": 200, "reply": "pong:hello api"}
    assert server.hits == [b"hello api"]


@ROOT_ONLY
def test_egg_web_serves_its_pages_and_the_vendored_xterm_from_the_wheel(
    box: Box, installed: Installed
) -> None:
    """The scripts are package data, not modules: what a wheel most easily leaves out."""
    import urllib.error
    import urllib.request

    proc = subprocess.Popen(
        [installed.egg, "web", "--listen", "127.0.0.1:0"], env=box.env(), cwd=box.workspace,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("egg web: open http://127.0.0.1:"), proc.stderr.read()
        base, _, token = line.split()[-1].partition("/?token=")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def get(path: str, **headers: str) -> tuple[int, bytes]:
            try:
                with opener.open(urllib.request.Request(base + path, headers=headers)) as answer:
                    return answer.status, answer.read()
            except urllib.error.HTTPError as error:
                return error.code, b""

        bearer = {"Authorization": f"Bearer {token}"}
        vendored = ROOT / "plugins" / "web" / "static" / "vendor" / "xterm.js"
        assert get("/static/vendor/xterm.js", **bearer) == (200, vendored.read_bytes())
        assert get("/static/term.js", **bearer)[0] == 200
        assert get("/", **bearer)[0] == 200
        assert get("/")[0] == 401
    finally:
        proc.terminate()
        proc.wait(10)
