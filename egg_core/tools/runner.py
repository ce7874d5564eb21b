"""Run a privileged host tool for a caller: the one runner behind the tool socket and ``egg mcp``.

- A call's arguments are checked first, the same for every caller (:func:`refusal`): one that
  leaves out a required parameter, or holds what no command line can carry, is refused in one
  line with exit 2, and nothing starts.
- Arguments are positional parameters, never part of the command string: ``sh -c RUN sh ARG1
  ARG2 …``, so ``$(touch x)`` or ``;id`` arrive verbatim as ``"$1"``.
- The environment is minimal (PATH, HOME, LANG, USER of the host), then the tool's ``env``, then
  the caller's identity, last, so that no tool file can spoof it: ``EGG_SESSION``,
  ``EGG_AGENT``, ``EGG_WORKSPACE``, ``EGG_TOOL``. PATH keeps no empty, relative or
  caller-writable entry (:func:`egg_core.hostrun.program_path`): the command runs in the
  caller's workspace, and a ``git`` the sandbox put on a PATH it can write must not be the one
  that runs.
- The command runs in its own process group, in the caller's workspace; past the tool's timeout
  the whole group is killed and the call returns exit 124. Each output stream is kept up to
  :data:`MAX_OUTPUT` bytes (the rest is read and dropped, with a note).
- At most ``max_concurrent`` calls of one tool run at once; further calls wait for a slot within
  their timeout.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs

from egg_core.hostrun import program_path
from egg_core.tools.model import Tool, ToolResult

#: bytes of each output stream a call returns
MAX_OUTPUT = 1024 * 1024
TIMED_OUT = 124
#: a call whose arguments the tool cannot take (a required parameter left out, a NUL): not run
REFUSED_ARGUMENTS = 2
#: host variables a tool gets (then its own env, then the caller's identity)
HOST_VARIABLES = ("PATH", "HOME", "LANG", "USER")


@attrs.frozen(kw_only=True)
class Caller:
    """Who calls: the session (``exec-<pid>`` for ``egg exec``), its agent, its workspace, and
    what its sandbox can write (its mounted rules; none for a host MCP client)."""

    session: str
    agent: str = ""
    workspace: str = ""
    ruled: tuple[tuple[str, str], ...] = ()

    def environment(self, tool: Tool) -> dict[str, str]:
        return {
            "EGG_SESSION": self.session,
            "EGG_AGENT": self.agent,
            "EGG_WORKSPACE": self.workspace,
            "EGG_TOOL": tool.name,
        }


class ToolRunner:
    """Runs tools, at most ``max_concurrent`` calls of each at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}

    def _slot(self, tool: Tool) -> threading.BoundedSemaphore:
        key = (tool.name, tool.max_concurrent)
        with self._lock:
            if key not in self._slots:
                self._slots[key] = threading.BoundedSemaphore(tool.max_concurrent)
            return self._slots[key]

    def call(self, tool: Tool, args: Sequence[str], caller: Caller) -> ToolResult:
        refused = refusal(tool, args)
        if refused is not None:
            return ToolResult(exit_code=REFUSED_ARGUMENTS, error=refused)
        deadline = time.monotonic() + tool.timeout
        slot = self._slot(tool)
        if not slot.acquire(timeout=tool.timeout):
            return ToolResult(
                exit_code=TIMED_OUT,
                stderr=f"egg: tool {tool.name}: no free slot within {tool.timeout:g}s "
                f"(max_concurrent: {tool.max_concurrent})\n",
            )
        try:
            env = host_environment()
            env.update(tool.env)
            env.update(caller.environment(tool))
            if "PATH" in env:
                env["PATH"] = program_path(env["PATH"], caller.ruled)
            if tool.func is not None:
                return _call_function(tool, list(args), env, deadline)
            return _run_command(tool, list(args), env, caller.workspace, deadline)
        finally:
            slot.release()


def refusal(tool: Tool, args: Sequence[str]) -> str | None:
    """Why a call of ``tool`` with ``args`` must not start (None: it may), in one line: the one
    check of a call's arguments, whoever calls (a shim, ``egg tool-call``, an MCP client). The
    runner asks it first; the tool socket asks it before it pauses the sandbox for the call."""
    bad = unusable_argument(args)
    if bad is not None:
        return f"tool {tool.name}: {bad}"
    return tool.missing(args)


def unusable_argument(args: Sequence[str]) -> str | None:
    """Why these arguments cannot reach a program (None: they can). A command line is C
    strings of bytes: a NUL would cut one short, and a lone surrogate (JSON's ``"\ud800"``)
    has no bytes at all."""
    for number, arg in enumerate(args, 1):
        if "\0" in arg:
            return f"argument {number} holds a NUL character, which no command line can carry"
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return f"argument {number} is not valid text (a lone surrogate)"
    return None


def host_environment() -> dict[str, str]:
    return {name: os.environ[name] for name in HOST_VARIABLES if name in os.environ}


def _run_command(
    tool: Tool, args: list[str], env: dict[str, str], workspace: str, deadline: float
) -> ToolResult:
    assert tool.run is not None
    cwd = workspace if workspace and os.path.isdir(workspace) else env.get("HOME") or "/"
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", tool.run, "sh", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return ToolResult(exit_code=126, error=f"cannot start: {exc.strerror}")
    outputs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    cut = {proc.stdout: False, proc.stderr: False}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for stream in outputs:
            selector.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in selector.select(min(remaining, 1.0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = outputs[key.fileobj]  # type: ignore[index]
                room = MAX_OUTPUT - len(buffer)
                if len(chunk) > room:
                    cut[key.fileobj] = True  # type: ignore[index]
                buffer += chunk[: max(room, 0)]
    if timed_out:
        _kill_group(proc)
    else:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
    for stream in outputs:
        stream.close()  # type: ignore[union-attr]
    stdout = bytes(outputs[proc.stdout]).decode("utf-8", "replace")
    stderr = bytes(outputs[proc.stderr]).decode("utf-8", "replace")
    if cut[proc.stdout]:
        stderr += f"\negg: tool {tool.name}: stdout cut at {MAX_OUTPUT} bytes\n"
    if cut[proc.stderr]:
        stderr += f"\negg: tool {tool.name}: stderr cut at {MAX_OUTPUT} bytes\n"
    if timed_out:
        stderr += f"egg: tool {tool.name}: killed after its timeout of {tool.timeout:g}s\n"
        return ToolResult(exit_code=TIMED_OUT, stdout=stdout, stderr=stderr)
    code = proc.returncode
    return ToolResult(exit_code=code if code >= 0 else 128 - code, stdout=stdout, stderr=stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _call_function(tool: Tool, args: list[str], env: dict[str, str], deadline: float) -> ToolResult:
    """A Python tool, in a thread so that its timeout holds (a late answer is dropped)."""
    assert tool.func is not None
    found: list[Any] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            found.append(tool.func(args, env))  # type: ignore[misc]
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=work, name=f"tool-{tool.name}", daemon=True)
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0))
    if worker.is_alive():
        return ToolResult(
            exit_code=TIMED_OUT, stderr=f"egg: tool {tool.name}: no answer within its timeout\n"
        )
    if failed:
        exc = failed[0]
        return ToolResult(exit_code=1, stderr=f"{type(exc).__name__}: {exc}\n")
    result = found[0]
    if not isinstance(result, ToolResult):
        return ToolResult(exit_code=1, error=f"tool {tool.name} returned no ToolResult")
    return result
