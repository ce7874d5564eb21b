"""Clients of a session daemon: the interactive attach, and one-shot requests (status, kill).

Attach puts the terminal in raw mode and relays bytes both ways; the detach key (default Ctrl-\\)
leaves the session running; SIGWINCH becomes a RESIZE. The terminal is restored on every exit
path — detach, session exit, a lost connection, an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import socket
import sys
import termios
import time
import tty
from collections.abc import Iterator
from typing import Any

from egg_core.errors import EggError
from egg_core.sanitize import visible, visible_bytes
from egg_core.session import protocol as p
from egg_core.session.store import SessionPaths, read_token

DEFAULT_DETACH_KEY = b"\x1c"  # Ctrl-\
#: after the detach key, how long a second press has to come to send the key to the program
DETACH_WINDOW = 0.3
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
    raise EggError(f"bad detach key {text!r} (use e.g. ctrl-\\, ctrl-a or ^A)", exit_code=2)


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


class TerminalState:
    """What the program's output has done to the user's terminal, followed as it is written,
    so that leaving can undo it: a detach must not leave the user's shell on vim's alternate
    screen with mouse reporting on and the cursor hidden.

    On the client's hot path, so it follows only the DEC private modes (one regular expression
    with a literal prefix, run in C: ~0.9 GB/s on TUI output, where the daemon's full tracker
    manages 0.2), and :meth:`leave` resets the rest unconditionally: the keypad, the scroll
    region, the kitty keyboard stack, modifyOtherKeys, the cursor style and the pen."""

    _DECSET = re.compile(rb"\x1b\[\?([0-9;]*)([hl])")

    def __init__(self) -> None:
        self.carry = b""
        self.modes: dict[int, bool] = {}

    def feed(self, data: bytes) -> None:
        buf = self.carry + data if self.carry else data
        last_end = 0
        for match in self._DECSET.finditer(buf):
            last_end = match.end()
            on = match.group(2) == b"h"
            for number in match.group(1).split(b";"):
                if number.isdigit():
                    self.modes[int(number)] = on
        escape = buf.rfind(b"\x1b", max(last_end, len(buf) - MAX_CARRY))
        self.carry = buf[escape:] if escape >= 0 else b""

    def leave(self) -> bytes:
        """Escape sequences that put the terminal back as a shell expects it (what tmux leaves
        after a detach): the main screen, no mouse reporting, normal keypad and cursor keys, a
        visible cursor, no bracketed paste or focus events, default pen, charset, margins,
        keyboard protocol and cursor style."""
        out = []
        for screen in (1049, 1047, 47):
            if self.modes.get(screen):
                out.append(b"\x1b[?%dl" % screen)  # 1049 also puts the cursor back
                break
        out.append(b"".join(b"\x1b[?%dl" % n for n in LEAVE_OFF))
        if self.modes.get(6):
            out.append(b"\x1b[?6l")  # (only when on: turning it off homes the cursor)
        # the scroll region's reset homes the cursor: saved and restored around it
        out.append(b"\x1b7\x1b[r\x1b8")
        out.append(b"\x1b[?25h\x1b[?7h\x1b>\x1b[4l\x1b[20l\x1b(B\x0f\x1b[0m")
        out.append(b"\x1b[<u\x1b[>4m\x1b[0 q")
        return b"".join(out)


#: DECSET modes turned off on leaving: cursor keys, mouse (all encodings), focus events,
#: bracketed paste, synchronized output
LEAVE_OFF = (1, 9, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 2004, 2026)
#: an escape sequence cut at a chunk's end is carried into the next if it began this close to it
MAX_CARRY = 32


def status_line(session: str, code: int | None, reason: str | None, detached: bool) -> str:
    """The one line a client prints after it leaves, on a line of its own (the reason may quote
    what the sandbox said: shown through :func:`egg_core.sanitize.visible`)."""
    reason = visible(reason) if reason else reason
    if detached:
        return f"[detached from session {session}; egg attach {session} to return]"
    if code is None:
        return f"[lost the connection to session {session}]"
    if reason in ("killed by egg kill", "idle timeout"):
        return f"[{reason}]"
    said = "exited" if code == 0 else f"exited {code}"
    return f"[{said}: {reason}]" if reason else f"[{said}]"


def attach(
    paths: SessionPaths,
    *,
    read_only: bool = False,
    detach_key: bytes = DEFAULT_DETACH_KEY,
    stdin: int | None = None,
    stdout: int | None = None,
    from_start: bool = False,
    history: int | None = None,
) -> int:
    """Attach the terminal; return the session's exit code, or 0 when detached.

    ``from_start``: ``egg run``'s own client, which gets the program's output from its first
    byte. ``history``: lines of scrollback the repaint gives. The detach key pressed twice in a
    row sends it to the program once. However the client leaves — detach, exit, egg kill, a
    lost connection — the terminal is put back (:meth:`TerminalState.leave`) before the one-line
    status (:func:`status_line`)."""
    in_fd = sys.stdin.fileno() if stdin is None else stdin
    out_fd = sys.stdout.fileno() if stdout is None else stdout
    conn = Connection(paths)
    conn.sock.settimeout(None)
    rows, cols = terminal_size(in_fd if os.isatty(in_fd) else out_fd)
    conn.send(
        p.ATTACH,
        p.pack_attach(read_only, rows, cols, from_start=from_start, history=history),
    )
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)

    def on_winch(_sig: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(wake_w, b"w")

    old_winch = signal.signal(signal.SIGWINCH, on_winch)
    inbox = bytearray(RECV_SIZE)
    inbox_view = memoryview(inbox)
    terminal = TerminalState() if os.isatty(out_fd) else None
    result: int | None = None
    reason: str | None = None
    detached = False
    stdin_open = True
    armed = False  # the detach key was the last thing typed: a second one sends it
    armed_until = 0.0
    try:
        with raw_terminal(in_fd):
            while result is None and not detached:
                watch: list[Any] = [conn.sock, wake_r] + ([in_fd] if stdin_open else [])
                wait = max(armed_until - time.monotonic(), 0.0) if armed else None
                try:
                    ready, _, _ = select.select(watch, [], [], wait)
                except InterruptedError:
                    continue
                if armed and time.monotonic() >= armed_until and in_fd not in ready:
                    detached = True  # the key alone: detach
                    conn.send(p.DETACH)
                    break
                if wake_r in ready:
                    os.read(wake_r, 64)
                    # (a watcher's size only says how the session's screen is drawn for it)
                    rows, cols = terminal_size(in_fd if os.isatty(in_fd) else out_fd)
                    conn.send(p.RESIZE, p.pack_size(rows, cols))
                if in_fd in ready:
                    data = os.read(in_fd, 65536)
                    if not data:
                        stdin_open = False
                    else:
                        was_armed = armed
                        typed, armed, detached = _split_detach(data, detach_key, armed)
                        if armed and not was_armed:
                            armed_until = time.monotonic() + DETACH_WINDOW
                        if typed and not read_only:
                            conn.send(p.INPUT, typed)
                        if detached:
                            conn.send(p.DETACH)
                if conn.sock in ready:
                    try:
                        # recv_into one buffer: a fresh 256 KiB bytes object per recv() is an
                        # mmap, page faults and an munmap each time. Payloads are copied out by
                        # the decoder.
                        received = conn.sock.recv_into(inbox)
                    except OSError:
                        received = 0
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
                            pending.append(notice_bytes(frame.payload))
                    if pending:
                        chunk = pending[0] if len(pending) == 1 else b"".join(pending)
                        _write_all(out_fd, chunk)
                        if terminal is not None:
                            terminal.feed(chunk)
    finally:
        signal.signal(signal.SIGWINCH, old_winch)
        os.close(wake_r)
        os.close(wake_w)
        conn.close()
        if terminal is not None:
            with contextlib.suppress(OSError):
                _write_all(out_fd, terminal.leave())
    line = status_line(paths.id, result, reason, detached)
    print(f"\r\n{line}", file=sys.stderr)
    if detached:
        return 0
    return 1 if result is None else result


def notice_bytes(payload: bytes) -> bytes:
    """A daemon's notice as the client writes it, on a line of its own between the program's
    output: made visible here, where it is printed (it quotes what the sandbox asked for, and
    must not reach the terminal as anything but text, whatever ``clipboard`` says)."""
    text = visible_bytes(payload).encode()
    return b"\r\n[egg] " + text + b"\r\n"


def _split_detach(data: bytes, key: bytes, armed: bool) -> tuple[bytes, bool, bool]:
    """(what to send to the program, armed, detach) for one read of typed input. The detach
    key detaches — unless it is pressed again within DETACH_WINDOW, which sends it once
    (``screen``'s way of sending its prefix), so a program that wants Ctrl-\\ still gets it.
    ``armed``: the key was the last byte, and the caller waits for what comes next."""
    sent = bytearray()
    for index in range(len(data)):
        byte = data[index : index + 1]
        if byte != key:
            if armed:  # the key then something else: it was a detach after all
                return bytes(sent), False, True
            sent += byte
            continue
        if armed:
            sent += key
            armed = False
        else:
            armed = True
    return bytes(sent), armed, False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]
