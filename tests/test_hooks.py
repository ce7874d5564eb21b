"""Each hook called through the plugin manager (datasette's rule): one ``test_hook_<name>`` per
hook in :mod:`egg_core.hookspecs`, which ``test_hookspecs`` requires. A hook a built-in
implements is answered by that built-in; a hook none does by a plugin registered here, as a
third party's would be."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import attrs

from egg_core.commands import Command, CommandRegistry
from egg_core.config.model import EggConfig
from egg_core.history import HistoryContext, Transcript
from egg_core.hookspecs import hookimpl
from egg_core.lifecycle import RunningSession, SessionInfo
from egg_core.netproxy import NetworkTransport
from egg_core.plugins import get_plugin_manager
from egg_core.registry import agents
from egg_core.transcripts import TranscriptReader
from tests.history import samples


def _pm(egg_home: Path, *extra: tuple[str, object]):
    return get_plugin_manager(environ={"EGG_HOME": str(egg_home)}, extra_plugins=extra)


def _claude_home(tmp_path: Path) -> tuple[HistoryContext, str, bytes]:
    """A home holding a Claude Code conversation of one session: (its context, id, bytes)."""
    base = tmp_path / "claude-history"
    home, work, session = base / "home", base / "work", base / "session"
    for path in (home, work, session):
        path.mkdir(mode=0o700, parents=True)
    ident = str(uuid.uuid4())
    sample = samples.claude(work, ident)
    for relative, data in sample.files.items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_bytes(data)
    ctx = HistoryContext(
        cwd=work,
        home=home,
        session_dir=session,
        started_after=time.time() - 60,
        agent_session_id=ident,
        environ={"HOME": str(home)},
    )
    return ctx, ident, sample.files[sample.transcript]


def _session(tmp_path: Path) -> SessionInfo:
    return SessionInfo(
        id="abcd1234",
        directory=tmp_path,
        agent="shell",
        command=("sh",),
        cwd=tmp_path,
        platform="linux-ns",
    )


# -- registration


def test_hook_egg_register_agents(egg_home: Path) -> None:
    found: list[str] = []

    _pm(egg_home).hook.egg_register_agents(register=lambda profile: found.append(profile.name))

    assert {"claude", "codex", "gemini", "opencode", "cursor", "ollama", "shell"} <= set(found)


def test_hook_egg_register_platforms(egg_home: Path) -> None:
    found: list[str] = []

    _pm(egg_home).hook.egg_register_platforms(register=lambda p: found.append(p.name))

    assert {"linux-ns", "macos-seatbelt", "unsandboxed"} <= set(found)


def test_hook_egg_register_tools(egg_home: Path) -> None:
    (egg_home / "tools").mkdir()
    (egg_home / "tools" / "hello.yaml").write_text("name: hello\ndescription: hi\nrun: echo hi\n")
    found: list[str] = []
    problems: list[tuple[str, str]] = []

    _pm(egg_home).hook.egg_register_tools(
        register=lambda tool: found.append(tool.name),
        config=EggConfig(),
        egg_home=egg_home,
        report=lambda source, problem: problems.append((source, problem)),
    )

    assert "hello" in found and problems == []


# -- history


def test_hook_egg_history_capture(egg_home: Path, tmp_path: Path) -> None:
    ctx, ident, _data = _claude_home(tmp_path)
    pm = _pm(egg_home)
    claude = agents(pm)["claude"].obj

    found = pm.hook.egg_history_capture(agent=claude, ctx=ctx)

    assert found is not None and found.agent_session_id == ident
    assert (found.root / found.file).is_file()


def test_hook_egg_history_restore(egg_home: Path, tmp_path: Path) -> None:
    ctx, ident, _data = _claude_home(tmp_path)
    pm = _pm(egg_home)
    claude = agents(pm)["claude"].obj
    captured = pm.hook.egg_history_capture(agent=claude, ctx=ctx)

    target = pm.hook.egg_history_restore(agent=claude, ctx=ctx, captured=captured)

    assert isinstance(target, Transcript) and target.agent_session_id == ident
    assert target.root == captured.root and target.file == captured.file


def test_hook_egg_history_render(egg_home: Path, tmp_path: Path) -> None:
    _ctx, _ident, data = _claude_home(tmp_path)
    pm = _pm(egg_home)

    turns = pm.hook.egg_history_render(agent=agents(pm)["claude"].obj, data=data)

    assert turns and turns[0].role == "user" and "first question please" in turns[0].text


def test_hook_egg_history_turns(egg_home: Path, tmp_path: Path) -> None:
    _ctx, _ident, data = _claude_home(tmp_path)
    pm = _pm(egg_home)
    claude = agents(pm)["claude"].obj

    streamed = pm.hook.egg_history_turns(agent=claude, transcript=TranscriptReader.of_bytes(data))

    assert streamed is not None
    assert list(streamed) == pm.hook.egg_history_render(agent=claude, data=data)


# -- the network


def test_hook_egg_network_transport(egg_home: Path, monkeypatch) -> None:
    monkeypatch.delenv("EGG_TEST_NETWORK", raising=False)
    assert _pm(egg_home).hook.egg_network_transport().system  # the built-in default's
    monkeypatch.setenv("EGG_TEST_NETWORK", "api.example.com=93.184.216.34@127.0.0.1:9")

    found = _pm(egg_home).hook.egg_network_transport()

    assert isinstance(found, NetworkTransport) and not found.system  # the seam, asked first


# -- session lifecycle: the built-in watchers (egg_plugins.session) answer, and a plugin of the
# test's sees the same calls a third party's would


class _SessionWatcher:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int | None]] = []

    @hookimpl
    def egg_session_started(self, session: SessionInfo) -> None:
        self.calls.append(("started", session.id, None))

    @hookimpl
    def egg_session_tick(self, session: SessionInfo, live: RunningSession) -> None:
        self.calls.append(("tick", session.id, None))

    @hookimpl
    def egg_session_ended(self, session: SessionInfo, exit_code: int) -> None:
        self.calls.append(("ended", session.id, exit_code))


class _Guards:
    def __init__(self, needs: bool) -> None:
        self.needs = needs
        self.audits = 0

    def needs_audit(self) -> bool:
        return self.needs

    def audit(self) -> None:
        self.audits += 1


class _Told:
    """What a RunningSession's hooks told the daemon."""

    def __init__(self) -> None:
        self.notices: list[str] = []
        self.lines: list[str] = []
        self.records: list[dict[str, object]] = []

    def record(self, **fields: object) -> None:
        self.records.append(fields)


def _live(pm, tmp_path: Path, told: _Told, guards: _Guards, history=None) -> RunningSession:
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    return RunningSession(
        pm=pm,
        profile=agents(pm)["claude"].obj,
        history=history,
        shared_dir=shared,
        guards=guards,
        notify=told.notices.append,
        log=told.lines.append,
        record=told.record,
    )


def test_hook_egg_session_started(egg_home: Path, tmp_path: Path) -> None:
    """The conversation capture starts here: a session with a history context is captured at
    its end (the copy in the session directory, the agent's id in the record)."""
    ctx, ident, _data = _claude_home(tmp_path)
    watcher, told = _SessionWatcher(), _Told()
    pm = _pm(egg_home, ("watcher", watcher))
    live = _live(pm, tmp_path, told, _Guards(False), history=ctx)
    session = attrs.evolve(_session(tmp_path), directory=ctx.session_dir)

    pm.hook.egg_session_started(session=session, live=live)
    pm.hook.egg_session_ended(session=session, exit_code=0, live=live)

    assert watcher.calls == [("started", "abcd1234", None), ("ended", "abcd1234", 0)]
    assert told.records == [{"agent_session_id": ident}]
    assert list(ctx.session_dir.glob("chat.*"))


def test_hook_egg_session_tick(egg_home: Path, tmp_path: Path) -> None:
    """A tick: the browser-open watcher tells what the sandbox asked to open (sanitized by the
    daemon's notify, not here), the git watcher audits when the guards say so."""
    watcher, told, guards = _SessionWatcher(), _Told(), _Guards(True)
    pm = _pm(egg_home, ("watcher", watcher))
    live = _live(pm, tmp_path, told, guards)
    (live.shared_dir / "browser-requests").write_text("https://login.example.test/x\n")

    pm.hook.egg_session_tick(session=_session(tmp_path), live=live)

    assert watcher.calls == [("tick", "abcd1234", None)]
    assert told.notices == ["open in your browser: https://login.example.test/x"]
    assert guards.audits == 1
    pm.hook.egg_session_tick(session=_session(tmp_path), live=live)
    assert told.notices == ["open in your browser: https://login.example.test/x"]  # read once


def test_hook_egg_session_ended(egg_home: Path, tmp_path: Path) -> None:
    watcher, told = _SessionWatcher(), _Told()
    pm = _pm(egg_home, ("watcher", watcher))

    pm.hook.egg_session_ended(
        session=_session(tmp_path), exit_code=3, live=_live(pm, tmp_path, told, _Guards(False))
    )

    assert watcher.calls == [("ended", "abcd1234", 3)]


# -- the command line


class _Commands:
    @hookimpl
    def egg_cli_commands(self, register) -> None:
        register(Command(name="hello-hook", help="say hello", run=lambda args: 0))


def test_hook_egg_cli_commands(egg_home: Path) -> None:
    registry = CommandRegistry()

    _pm(egg_home, ("commands", _Commands())).hook.egg_cli_commands(
        register=registry.register, cli=registry
    )

    assert registry.get("hello-hook").help == "say hello"
