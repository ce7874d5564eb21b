"""``egg tool-call``: call a host tool from inside a sandbox, through its tool socket.

    egg tool-call NAME [ARGS...]      the tool's stdout, stderr and exit code as its own
    egg tool-call --list [--json]     the tools this sandbox may call

This file is self-contained (standard library only, no egg import): the sandbox may not see egg's
installation, so the tool socket's directory holds a copy that the shims on PATH run with the
host's Python (``python -I -S client.py NAME ARGS``), and ``egg tool-call`` runs it on egg's fast
path without importing the CLI. The socket is found in ``EGG_TOOL_SOCKET``.

Wire format (both ways): a 4-byte big-endian length, then that many bytes of JSON. Requests:
``{"action": "list"}`` or ``{"action": "call", "tool": NAME, "args": [...]}``; answers to a call:
``{"exit_code", "stdout", "stderr", "error"}``, to a list: ``{"tools": [...]}``.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

SOCKET_ENV = "EGG_TOOL_SOCKET"
MAX_REQUEST = 1024 * 1024
MAX_RESPONSE = 32 * 1024 * 1024  # two 1 MiB streams, JSON-escaped at worst 6 bytes a byte
HEADER = struct.Struct(">I")


def send(sock: socket.socket, payload: dict) -> None:  # type: ignore[type-arg]
    data = json.dumps(payload).encode()
    sock.sendall(HEADER.pack(len(data)) + data)


def receive(sock: socket.socket, limit: int) -> dict | None:  # type: ignore[type-arg]
    """One framed JSON object, or None when the peer closed, sent too much or sent garbage."""
    header = _exactly(sock, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > limit:
        return None
    body = _exactly(sock, size)
    if body is None:
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # garbage, or nested deeper than the parser goes
        return None
    return value if isinstance(value, dict) else None


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def request(path: str, payload: dict) -> dict:  # type: ignore[type-arg]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        send(sock, payload)
        answer = receive(sock, MAX_RESPONSE)
    if answer is None:
        raise OSError("the tool socket closed without an answer")
    return answer


HELP = """\
usage: egg tool-call NAME [ARGS...]    call a host tool this sandbox may use
       egg tool-call --list [--json]   the tools it may call, with their parameters

Inside a sandbox whose egg.yaml enables host tools (tools: [NAME, ...]): the tool runs on the
host and its stdout, stderr and exit code are the call's. Each enabled tool is also on PATH by
its own name. A call that leaves out a required parameter, or names a tool not enabled here, is
refused without running (exit 2). On the host, egg tools lists the tools defined."""


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # help needs no socket: it is asked on the host too
        print(HELP)
        return 0
    path = os.environ.get(SOCKET_ENV)
    if not path:
        print(
            f"egg tool-call: no tool socket here ({SOCKET_ENV} is not set: this sandbox has no "
            "tools enabled; egg.yaml's tools: lists them)",
            file=sys.stderr,
        )
        return 2
    if not argv:
        print(
            "usage: egg tool-call NAME [ARGS...] | egg tool-call --list [--json]", file=sys.stderr
        )
        return 2
    try:
        if argv[0] == "--list":
            answer = request(path, {"action": "list"})
            tools = answer.get("tools") or []
            if "--json" in argv[1:]:
                print(json.dumps(tools, indent=2))
            else:
                for tool in tools:
                    params = " ".join(
                        (p["name"] if p.get("required") else f"[{p['name']}]")
                        for p in tool.get("params", [])
                    )
                    line = f"{tool['name']} {params}".rstrip()
                    print(f"{line:30} {tool.get('description', '')}".rstrip())
            return 0
        answer = request(path, {"action": "call", "tool": argv[0], "args": argv[1:]})
    except OSError as exc:
        print(f"egg tool-call: cannot reach the tool socket {path}: {exc}", file=sys.stderr)
        return 2
    if answer.get("error"):
        print(f"egg tool-call: {answer['error']}", file=sys.stderr)
    sys.stdout.write(str(answer.get("stdout") or ""))
    sys.stdout.flush()
    sys.stderr.write(str(answer.get("stderr") or ""))
    code = answer.get("exit_code")
    return code if isinstance(code, int) and 0 <= code < 256 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
