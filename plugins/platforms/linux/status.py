"""bubblewrap's ``--json-status-fd`` records: the command's host pid, then its exit code.

Parsed without the json module: this runs on ``egg exec``'s fast path, and bwrap writes one flat
object per line with integer values.
"""

from __future__ import annotations

import os
import time


def field(text: str, name: str) -> int | None:
    """The integer value of ``"name": N`` in bwrap's status output, if present."""
    key = f'"{name}"'
    at = text.find(key)
    if at < 0:
        return None
    rest = text[at + len(key) :].lstrip().removeprefix(":").lstrip()
    digits = ""
    for char in rest:
        if char.isdigit() or (char == "-" and not digits):
            digits += char
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return None


class StatusReader:
    """Reads the status pipe: the first record early (for the pid), the rest at exit."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.text = ""
        self.closed = False

    def _read(self, until_newline: bool) -> None:
        while not self.closed:
            try:
                chunk = os.read(self.fd, 1 if until_newline else 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return
            self.text += chunk.decode(errors="replace")
            if until_newline and self.text.endswith("\n"):
                return

    def close(self) -> None:
        """Close the pipe once (a second close could hit a reused descriptor)."""
        if not self.closed:
            self.closed = True
            os.close(self.fd)

    def init_pid(self, timeout: float = 5.0) -> int | None:
        """The host pid of bwrap's child, the sandbox's pid 1 (killing it ends every process
        of the sandbox); None when bwrap ended before it made one, or has said nothing within
        ``timeout`` seconds. bwrap reports it before it lets that child set the sandbox up."""
        import select

        deadline = time.monotonic() + timeout
        while field(self.text, "child-pid") is None and not self.text.endswith("\n"):
            left = max(0.0, deadline - time.monotonic())  # (what is there is read, late or not)
            if self.closed or not select.select([self.fd], [], [], left)[0]:
                return None
            self._read(until_newline=True)
        return field(self.text, "child-pid")

    def child_pid(self) -> int | None:
        """The host pid of the sandboxed command: the child of bwrap's pid-1 init, which is what
        bwrap reports (pid 1 ignores signals it has no handler for, so SIGTERM must go to its
        child)."""
        if field(self.text, "child-pid") is None:
            self._read(until_newline=True)
        init = field(self.text, "child-pid")
        if init is None:
            return None
        return init_child(init) or init

    def exit_code(self, returncode: int) -> int | None:
        """The command's exit code; 128+N if bwrap itself was killed; None if it never ran."""
        self._read(until_newline=False)
        code = field(self.text, "exit-code")
        if code is not None:
            return code
        if returncode < 0:
            return 128 - returncode
        return None


def proc_is_ours() -> bool:
    """Whether ``/proc`` shows this process's own pid namespace: the pids egg has (bwrap's
    report, its children's) name the same processes there. Not when egg runs in a pid namespace
    whose ``/proc`` is still its parent's (``unshare --pid --fork`` without ``--mount-proc``)."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (field 4 of /proc/PID/stat); None when there is no such process,
    or when ``/proc`` is not of egg's pid namespace (:func:`proc_is_ours`)."""
    if not proc_is_ours():
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return int(data[data.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def init_child(init: int, attempts: int = 50) -> int | None:
    """The first child of ``init`` (the command), waiting a little for init to fork it; None
    when there is none, or ``/proc`` would name another process (:func:`proc_is_ours`)."""
    import time

    if not proc_is_ours():
        return None
    path = f"/proc/{init}/task/{init}/children"
    for _ in range(attempts):
        try:
            with open(path) as handle:
                children = handle.read().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.002)
    return None
