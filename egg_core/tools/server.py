"""The tool socket: one per session or ``egg exec`` whose egg.yaml enables tools.

It lives in a 0700 directory of the run's own (under ``$EGG_HOME``, hidden from every sandbox),
which the platform shows inside read-only (``EGG_TOOL_SOCKET`` names the socket there): the socket,
a copy of :mod:`egg_core.tools.client`, and ``bin/`` with one shim per enabled tool and
``egg-tool-call``, put first on PATH, so the agent just runs ``gh-pr-create …``. Only the tools
that egg.yaml enables are listed or run; anything else is refused without running. Each connection
is served by a thread of its own, within limits: a request larger than :data:`MAX_REQUEST`,
garbage, half a request or a client that says nothing within :data:`REQUEST_TIMEOUT` is answered
or dropped, and the socket keeps serving the others.

The tool definitions are read again when the tools directory changes, so a running session sees
a new or edited tool on its next call.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core.hostrun import RunGuard
from egg_core.paths import bound_unix_socket, socket_directory
from egg_core.tools import client as toolclient
from egg_core.tools.model import ToolSet
from egg_core.tools.runner import REFUSED_ARGUMENTS, Caller, ToolRunner, refusal, unusable_argument

SOCKET = "tool.sock"
CLIENT = "client.py"
BIN = "bin"
MAX_REQUEST = toolclient.MAX_REQUEST
REQUEST_TIMEOUT = 10.0
MAX_CONNECTIONS = 64
#: the exit code a caller gets when a call was refused before the tool started
REFUSED = 125


class ToolServer:
    """Serves ``enabled`` tools to one sandbox (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        enabled: Sequence[str],
        load: Callable[[], ToolSet],
        caller: Caller,
        signature: Callable[[], Any] = lambda: None,
        runner: ToolRunner | None = None,
        guard: RunGuard | None = None,
    ) -> None:
        #: a deep $EGG_HOME leaves no room for the socket's path: a short private one instead
        self._short = socket_directory(directory, SOCKET, "egg-tools-")
        self.directory = self._short or directory
        self.enabled = list(enabled)
        self._load = load
        self._signature = signature
        self._seen = signature()
        self._tools = load()
        self._lock = threading.Lock()
        self.caller = caller
        self.runner = runner or ToolRunner()
        #: the run's guards: every call is audited first (threat O, egg_core.hostrun)
        self.guard = guard
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    @property
    def socket_path(self) -> Path:
        return self.directory / SOCKET

    def tools(self) -> ToolSet:
        """The definitions, read again when the tools directory changed."""
        with self._lock:
            now = self._signature()
            if now != self._seen:
                self._seen, self._tools = now, self._load()
            return self._tools

    # -- the directory the sandbox sees

    def prepare(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(toolclient.__file__, self.directory / CLIENT)
        shims = self.directory / BIN
        shims.mkdir(mode=0o755, exist_ok=True)
        python = os.path.realpath(sys.executable)
        client = f'"$(dirname "${toolclient.SOCKET_ENV}")/{CLIENT}"'
        for name in [*self.enabled, "egg-tool-call"]:
            call = "" if name == "egg-tool-call" else shlex.quote(name)
            script = f'#!/bin/sh\nexec {shlex.quote(python)} -I -S {client} {call} "$@"\n'
            (shims / name).write_text(script)
            (shims / name).chmod(0o755)

    def start(self) -> ToolServer:
        self.prepare()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        listener = bound_unix_socket(self.socket_path)
        os.chmod(self.socket_path, 0o600)
        listener.listen(64)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept, name="egg-tools", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._short is not None:
            shutil.rmtree(self._short, ignore_errors=True)

    # -- serving

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                conn.close()  # too many at once: this one is dropped, the others go on
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            try:
                request = toolclient.receive(conn, MAX_REQUEST)
            except (OSError, ValueError):
                return
            if request is None:
                with contextlib.suppress(OSError):
                    toolclient.send(conn, {"error": "bad request", "exit_code": 2})
                return
            conn.settimeout(None)
            try:
                answer = self.answer(request)
            except Exception as exc:  # a request no check foresaw: an answer, not a traceback
                answer = {"error": f"the request failed ({type(exc).__name__})", "exit_code": 70}
            with contextlib.suppress(OSError, ValueError):
                toolclient.send(conn, answer)
        finally:
            conn.close()
            self._slots.release()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """What a request gets (also for tests and ``egg mcp``)."""
        action = request.get("action")
        if action == "list":
            current = self.tools()
            found, _ = current.enabled(self.enabled)
            return {"tools": [tool.describe() for tool in found.values()]}
        if action != "call":
            return {"error": f"unknown action {str(action)[:40]!r}", "exit_code": 2}
        name, args = request.get("tool"), request.get("args", [])
        if not isinstance(name, str) or not isinstance(args, list):
            return {"error": "a call needs a tool name and a list of args", "exit_code": 2}
        if not all(isinstance(a, str) for a in args):
            return {"error": "every argument must be a string", "exit_code": 2}
        if unusable_argument([name]) is not None:
            return {"error": "a tool name is printable text", "exit_code": 2}
        bad = unusable_argument(args)
        if bad is not None:
            return {"error": bad, "exit_code": 2}
        if name not in self.enabled:
            return {
                "error": f"tool {name[:64]!r} is not enabled for this sandbox "
                "(egg.yaml's tools: lists the ones it may call)",
                "exit_code": 2,
            }
        found, problems = self.tools().enabled([name])
        if problems:
            return {"error": problems[0], "exit_code": 2}
        refused = refusal(found[name], args)
        if refused is not None:  # before the sandbox is paused for a call that cannot start
            return {"error": refused, "exit_code": REFUSED_ARGUMENTS}
        if self.guard is None:
            return self.runner.call(found[name], args, self.caller).to_json()
        where = self.caller.workspace or os.environ.get("HOME") or "/"
        with self.guard.holding(f"tool {name}", where) as preflight:
            said = "".join(f"egg: {line}\n" for line in preflight.lines)
            if preflight.refused is not None:
                return {"error": preflight.refused, "exit_code": REFUSED, "stderr": said}
            answer = self.runner.call(found[name], args, self.caller).to_json()
        answer["stderr"] = said + str(answer.get("stderr") or "")
        return answer


def serve(
    pm: Any, plan: Any, directory: Path, caller: Caller, guard: RunGuard | None = None
) -> ToolServer | None:
    """The tool socket for a launch of ``plan``, started; None when its egg.yaml enables no
    tool. An enabled tool that is not defined, or whose file is broken, stops the launch (exit
    125, the error in one line). Every call is audited by ``guard`` first, and its PATH keeps
    nothing the sandbox of ``plan`` can write."""
    from egg_core.errors import EggError
    from egg_core.tools.model import collect

    names = list(plan.policy.tools)
    if not names:
        return None

    def load() -> ToolSet:
        return collect(pm, plan.resolved.config, plan.egg_home)

    from egg_core.pathrules import mounted_rules

    ruled = tuple(mounted_rules((entry.path, entry.mode) for entry in plan.policy.fs))
    caller = attrs.evolve(caller, ruled=ruled)
    server = ToolServer(
        directory,
        names,
        load,
        caller,
        signature=lambda: tools_signature(plan.egg_home),
        guard=guard,
    )
    _, problems = server.tools().enabled(names)  # what it loaded, not a second reading
    if problems:
        raise EggError(problems[0], exit_code=125)
    return server.start()


def tools_signature(egg_home: Path) -> Any:
    """What changes when a tool file is added, removed or edited."""
    directory = egg_home / "tools"
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return None
    found = []
    for entry in entries:
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=True)
            found.append((entry.name, st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(found)
