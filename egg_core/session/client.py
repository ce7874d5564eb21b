"""Clients of a session daemon: the interactive attach, and one-shot requests (status, kill).

Attach puts the terminal in raw mode and relays bytes both ways; the detach key (default Ctrl-\\)
leaves the session running; SIGWINCH becomes a RESIZE. The terminal is restored on every exit
path — detach, session exit, a lost connection, an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import termios
import tty
from collections.abc import Iterator
from typing import Any

from egg_core.errors import EggError
from egg_core.session import protocol as p
from egg_core.session.store import SessionPaths, read_token

DEFAULT_DETACH_KEY = b"\x1c"  # Ctrl-\
RECV_SIZE = 1 << 18


def parse_detach_key(text: str) -> bytes:
    """``ctrl-\\``, ``ctrl-a``, ``^A`` or a single character -> the byte the terminal sends."""
    value = text.strip()
    lowered = value.lower()
    for prefix in ("ctrl-", "ctrl+", "c-", "^"):
        if lowered.startswith(prefix) and len(value) == len(prefix) + 1:
            char = value[-1]
            code = ord(char.upper()) ^ 0x40 if char.isalpha() else ord(char) ^ 0x40
            if 0 <= code < 32 or code == 127:
                return bytes([code])
    if len(value.encode()) == 1:
        return value.encode()
    raise EggError(f"bad detach key {text!r} (use e.g. ctrl-\\\\, ctrl-a or ^A)", exit_code=2)


class Connection:
    """An authenticated connection to a session daemon."""

    def __init__(self, paths: SessionPaths, timeout: float = 5.0) -> None:
        self.paths = paths
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(paths.sock))
            token = read_token(paths)
        except OSError as exc:
            self.sock.close()
            raise EggError(f"session {paths.id} is not running ({exc.strerror})") from exc
        self.decoder = p.Decoder(p.SERVER_TYPES, p.MAX_SERVER_FRAME)
        self.send(p.AUTH, token)

    def send(self, frame_type: int, payload: bytes = b"") -> None:
        try:
            self.sock.sendall(p.encode(frame_type, payload))
        except OSError as exc:
            raise EggError(
                f"lost the connection to session {self.paths.id} ({exc.strerror})"
            ) from exc

    def frames(self) -> Iterator[p.Frame]:
        """Frames as they arrive, until the daemon closes the connection."""
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError as exc:
                raise EggError(f"session {self.paths.id} did not answer") from exc
            if not data:
                return
            yield from self.decoder.feed(data)

    def request_status(self, screen: bool = False) -> dict[str, Any]:
        self.send(p.STATUS, p.STATUS_WITH_SCREEN if screen else b"")
        for frame in self.frames():
            if frame.type == p.STATUS_REPLY:
                data = json.loads(frame.payload)
                return data if isinstance(data, dict) else {}
        raise EggError(f"session {self.paths.id} closed the connection")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


DEFAULT_SIZE = (24, 80)


def terminal_size(fd: int) -> tuple[int, int]:
    """(rows, columns) of the terminal; 24x80 when it has none or reports a zero side (a serial
    console, some CI runners), which the daemon would refuse as a size."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return DEFAULT_SIZE
    if size.lines <= 0 or size.columns <= 0:
        return DEFAULT_SIZE
    return size.lines, size.columns


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def attach(
    paths: SessionPaths,
    *,
    read_only: bool = False,
    detach_key: bytes = DEFAULT_DETACH_KEY,
    stdin: int | None = None,
    stdout: int | None = None,
) -> int:
    """Attach the terminal; return the session's exit code, or 0 when detached."""
    in_fd = sys.stdin.fileno() if stdin is None else stdin
    out_fd = sys.stdout.fileno() if stdout is None else stdout
    conn = Connection(paths)
    conn.sock.settimeout(None)
    rows, cols = terminal_size(in_fd if os.isatty(in_fd) else out_fd)
    conn.send(p.ATTACH, p.pack_attach(read_only, rows, cols))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)

    def on_winch(_sig: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(wake_w, b"w")

    old_winch = signal.signal(signal.SIGWINCH, on_winch)
    inbox = bytearray(RECV_SIZE)
    inbox_view = memoryview(inbox)
    result: int | None = None
    reason: str | None = None
    detached = False
    stdin_open = True
    try:
        with raw_terminal(in_fd):
            while result is None and not detached:
                watch: list[Any] = [conn.sock, wake_r] + ([in_fd] if stdin_open else [])
                try:
                    ready, _, _ = select.select(watch, [], [])
                except InterruptedError:
                    continue
                if wake_r in ready:
                    os.read(wake_r, 64)
                    if not read_only:
                        rows, cols = terminal_size(in_fd if os.isatty(in_fd) else out_fd)
                        conn.send(p.RESIZE, p.pack_size(rows, cols))
                if in_fd in ready:
                    data = os.read(in_fd, 65536)
                    if not data:
                        stdin_open = False
                    elif detach_key in data:
                        before = data.split(detach_key, 1)[0]
                        if before and not read_only:
                            conn.send(p.INPUT, before)
                        conn.send(p.DETACH)
                        detached = True
                    elif not read_only:
                        conn.send(p.INPUT, data)
                if conn.sock in ready:
                    # recv_into one buffer: a fresh 256 KiB bytes object per recv() is an mmap,
                    # page faults and an munmap each time. Payloads are copied out by the decoder.
                    received = conn.sock.recv_into(inbox)
                    if not received:
                        break
                    # The output of one recv() goes to the terminal in one write, however many
                    # frames carried it: the terminal, not this loop, should be what limits.
                    pending: list[bytes] = []
                    for frame in conn.decoder.feed(inbox_view[:received]):
                        if frame.type == p.OUTPUT:
                            pending.append(frame.payload)
                        elif frame.type == p.EXIT:
                            result, reason = p.unpack_exit(frame.payload)
                        elif frame.type == p.NOTICE:
                            pending.append(b"\r\n[egg] " + frame.payload + b"\r\n")
                    if pending:
                        _write_all(out_fd, pending[0] if len(pending) == 1 else b"".join(pending))
    finally:
        signal.signal(signal.SIGWINCH, old_winch)
        os.close(wake_r)
        os.close(wake_w)
        conn.close()
    if detached:
        print(
            f"\r\n[detached from session {paths.id}; egg attach {paths.id} to return]",
            file=sys.stderr,
        )
        return 0
    if result is None:
        raise EggError(f"lost the connection to session {paths.id}")
    if reason:
        print(f"\r\negg: session {paths.id}: {reason}", file=sys.stderr)
    return result


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]
