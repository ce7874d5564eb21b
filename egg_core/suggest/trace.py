"""The reading half of ``egg policy suggest`` for files: strace's record of a traced run
(``trace.log``, ``strace -f -tt``) into the path calls the sandbox refused.

A path call that failed with EROFS, EACCES or EPERM is one :class:`Refusal`: the path, the call,
the errno and what the call meant to do to it (``create`` a name in its directory, ``remove``
one, ``write`` the path itself, or only ``read``; an open is decided by its flags). A relative
path is resolved against its process's working directory, which the record's ``chdir``/
``fchdir``, forks and ``execve`` supersessions are followed for (:class:`_Directories`); when
the record does not show it the refusal says so (``cwd_known``). The setup bwrap does before the
command runs (its ``/newroot`` and ``/oldroot``) is not the command's. What the refusals are
worth as rules is :mod:`egg_core.suggest.fs`'s judgement.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterable, Iterator

import attrs

ERRORS = ("EROFS", "EACCES", "EPERM")
#: syscall -> (index of the path among its string arguments, what the call does to it)
#: "create": a new name in the path's directory; "remove": a name taken out of it;
#: "open": decided by the flags; "write": the path itself is changed.
PATH_CALLS: dict[str, tuple[int, str]] = {
    "open": (0, "open"),
    "openat": (0, "open"),
    "openat2": (0, "open"),
    "creat": (0, "create"),
    "mkdir": (0, "create"),
    "mkdirat": (0, "create"),
    "mknod": (0, "create"),
    "mknodat": (0, "create"),
    "symlink": (1, "create"),
    "symlinkat": (1, "create"),
    "link": (1, "create"),
    "linkat": (1, "create"),
    "unlink": (0, "remove"),
    "unlinkat": (0, "remove"),
    "rmdir": (0, "remove"),
    "rename": (0, "remove"),
    "renameat": (0, "remove"),
    "renameat2": (0, "remove"),
    "truncate": (0, "write"),
    "chmod": (0, "write"),
    "fchmodat": (0, "write"),
    "chown": (0, "write"),
    "lchown": (0, "write"),
    "fchownat": (0, "write"),
    "utimensat": (0, "write"),
    "utime": (0, "write"),
    "utimes": (0, "write"),
    "setxattr": (0, "write"),
    "lsetxattr": (0, "write"),
}
#: renames also create their second path
SECOND_PATH_CREATES = ("rename", "renameat", "renameat2")
#: where bwrap assembles the sandbox's root before it runs the command
BWRAP_SETUP = ("/newroot/", "/oldroot/")
#: an open with one of these changes the file (O_APPEND alone, with O_RDONLY, does not)
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
_LINE = re.compile(
    r"^(?P<pid>\d+)\s+(?P<time>\d[\d:.]*)\s+"
    r"(?:(?P<call>\w+)\((?P<args>.*)|<\.\.\. (?P<resumed>\w+) resumed>(?P<rest>.*))$"
)
#: what follows a call's closing ``) = `` (found in the text with strings blanked out)
_RESULT = re.compile(
    r"(?P<value>-?\w+|\?)(?:\s+/\*\s*(?P<nspid>\d+) in strace's PID NS\s*\*/)?"
    r"(?:\s+(?P<errno>E[A-Z0-9]+)\b)?"
)
_UNFINISHED = "<unfinished ...>"
_FORKS = ("clone", "clone3", "fork", "vfork")
#: the calls that move working directories or make processes
_TRACKED = (*_FORKS, "chdir", "fchdir")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')


@attrs.frozen
class Refusal:
    """One write (or read) a traced run was refused."""

    path: str
    call: str
    errno: str
    intent: str  # create | remove | write | read
    time: str
    #: False: a relative path whose directory the trace does not show (the process's working
    #: directory is unknown, or the call named a directory descriptor): ``path`` is as written
    cwd_known: bool = True


def _unescape(text: str) -> str:
    """An strace string (C escapes: ``\\"``, ``\\n``, ``\\x41``, ``\\101``) as a path."""
    raw = codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0]
    assert isinstance(raw, bytes)
    return raw.decode("utf-8", "surrogateescape")


@attrs.frozen
class _Call:
    """One finished syscall line, its strings unescaped, the rest with strings blanked out (a
    program chooses what its string arguments say, never the text around them)."""

    pid: str
    time: str
    name: str
    args: str
    skeleton: str
    spans: list[re.Match[str]]
    value: str
    errno: str | None
    #: the child's pid as strace sees it (``--decode-pids=pidns``), for clone/fork results
    child: str | None


_EXIT = re.compile(r"^(?P<pid>\d+)\s+\S+\s+\+\+\+ (exited|killed) ")
#: a thread's execve: the thread group's leader carries on as that thread (its directory too)
_SUPERSEDED = re.compile(r"^(?P<pid>\d+)\s+\S+\s+\+\+\+ superseded by execve in pid (?P<by>\d+) ")
#: the end of a call's arguments and its result; strace pads short calls (``chdir("..")   = 0``)
_RESULT_AT = re.compile(r"\)\s+= ")


def _calls(lines: Iterable[str]) -> Iterator[tuple[str, str, _Call | str | None]]:
    """(pid, kind, call) for the lines that matter: "first" when a pid shows up (again, after
    it exited), "exit" when it ends, "superseded" (with the thread's pid) when a thread's
    execve makes it the leader, "moving" when a chdir/fchdir starts, "call" for a finished
    chdir/fchdir, fork or refused path call. Everything else is dropped here, so a trace of
    any size is read in one pass."""
    pending: dict[str, tuple[str, str]] = {}  # pid -> (call, args so far), for <unfinished ...>
    alive: set[str] = set()
    for line in lines:
        line = line.rstrip("\n")
        replaced = _SUPERSEDED.match(line)
        if replaced is not None:
            pending.pop(replaced["by"], None)
            alive.discard(replaced["by"])
            yield replaced["pid"], "superseded", replaced["by"]
            continue
        gone = _EXIT.match(line)
        if gone is not None:
            alive.discard(gone["pid"])
            pending.pop(gone["pid"], None)
            yield gone["pid"], "exit", None
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        pid = match["pid"]
        if pid not in alive:
            alive.add(pid)
            yield pid, "first", None
        if match["call"] is not None:
            name, args = match["call"], match["args"]
            if args.endswith(_UNFINISHED):
                pending[pid] = (name, args[: -len(_UNFINISHED)])
                if name in ("chdir", "fchdir"):
                    yield pid, "moving", None  # it may take effect before its result is shown
                continue
        else:
            if pid not in pending or pending[pid][0] != match["resumed"]:
                continue
            name, head = pending.pop(pid)
            args = head + match["rest"]
        if name in ("exit_group", "exit") and pid in alive and args.rstrip().endswith("= ?"):
            alive.discard(pid)  # its end, whatever strace's -q says about "+++ exited"
            yield pid, "exit", None
            continue
        if name not in _TRACKED and name not in PATH_CALLS:
            continue
        skeleton = _STRING.sub('""', args)
        ends = list(_RESULT_AT.finditer(skeleton))  # strings are blanked: the last is the result
        result = _RESULT.match(skeleton[ends[-1].end() :]) if ends else None
        if result is None:
            continue
        value, errno = result["value"], result["errno"]
        if name in PATH_CALLS and name not in _TRACKED and errno not in ERRORS:
            continue
        spans = list(_STRING.finditer(args))
        child = result["nspid"] or (value if value.isdigit() else None)
        yield (
            pid,
            "call",
            _Call(pid, match["time"], name, args, skeleton, spans, value, errno, child),
        )


class _Cell:
    """A working directory, shared by the threads of one process (CLONE_FS)."""

    def __init__(self, cwd: str | None, members: int = 1) -> None:
        self.cwd = cwd
        self.members = members

    def copy(self) -> _Cell:
        return _Cell(self.cwd)


class _Directories:
    """Each traced process's working directory, as far as the record shows it.

    The first process starts in the run's directory. ``chdir`` moves it, ``fchdir`` makes it
    unknown. A child takes its parent's directory at the fork: when the parent's clone/fork
    result names it (``--decode-pids=pidns`` gives the pid strace sees), or — the child's
    lines often come first — the child's lines are held until then. A child cloned with
    CLONE_FS (a thread) shares the directory; a directory that moves while threads share it
    becomes unknown (which thread's call came first is not in the record). A thread's execve
    hands its directory to the leader. A pid that exited and shows up again is a new process.
    Whatever never gets a known directory has its relative paths reported with
    ``cwd_known=False``, never guessed.
    """

    def __init__(self, start_cwd: str, found: list[Refusal]) -> None:
        self.start = start_cwd
        self.found = found
        self.cells: dict[str, _Cell] = {}
        self.waiting: dict[str, list[_Call]] = {}  # pid -> its calls held until its fork result
        self.gone_waiting: set[str] = set()  # exited before its fork's result was shown
        self.began = False

    def first(self, pid: str) -> None:
        if pid in self.cells:
            return  # its fork's result came first and gave it its directory
        if not self.began:
            self.began = True
            self.cells[pid] = _Cell(self.start)
        else:
            self.waiting[pid] = []

    def exit(self, pid: str) -> None:
        if pid in self.waiting:
            self.gone_waiting.add(pid)
            self.release(pid, _Cell(None))
        cell = self.cells.pop(pid, None)
        if cell is not None:
            cell.members -= 1

    def superseded(self, leader: str, thread: str) -> None:
        if thread in self.waiting:
            self.release(thread, _Cell(None))
        cell = self.cells.pop(thread, None)
        old = self.cells.pop(leader, None)
        if old is not None and old is not cell:
            old.members -= 1
        self.cells[leader] = cell if cell is not None else _Cell(None)

    def moving(self, pid: str) -> None:
        cell = self.cells.get(pid)
        if cell is not None and cell.members > 1:
            cell.cwd = None  # another thread may resolve a path before or after it: unknown

    def call(self, call: _Call) -> None:
        if call.pid in self.waiting:
            self.waiting[call.pid].append(call)
        else:
            self.apply(call, self.cells.setdefault(call.pid, _Cell(None)))

    def release(self, pid: str, cell: _Cell) -> None:
        """``pid``'s directory is known now (or never will be): play its held calls."""
        held = self.waiting.pop(pid, None)
        if held is None:
            return
        self.cells[pid] = cell
        for call in held:
            self.apply(call, cell)

    def adopt(self, call: _Call, cell: _Cell) -> None:
        """A fork's result: the child gets the parent's directory (shares it for a thread)."""
        child = call.child
        if child is None:
            return
        if child in self.gone_waiting:
            self.gone_waiting.discard(child)  # its lines were played already; it is gone
            return
        shared = "CLONE_FS" in call.skeleton
        if shared:
            cell.members += 1
        given = cell if shared else cell.copy()
        if child in self.waiting:
            self.release(child, given)
        elif child not in self.cells:
            self.cells[child] = given

    def apply(self, call: _Call, cell: _Cell) -> None:
        strings = [_unescape(m.group(1)) for m in call.spans]
        if call.name in _FORKS:
            self.adopt(call, cell)
            return
        if call.name == "chdir":
            if call.value == "0" and strings:
                if cell.members > 1:
                    cell.cwd = None
                elif strings[0].startswith("/"):
                    cell.cwd = _normalized(strings[0])
                elif cell.cwd is not None:
                    cell.cwd = _normalized(os.path.join(cell.cwd, strings[0]))
            return
        if call.name == "fchdir":
            if call.value == "0":
                cell.cwd = None
            return
        index, intent = PATH_CALLS[call.name]
        if intent == "open":
            intent = _open_intent(call.skeleton)
        places = [(index, intent)]
        if call.name in SECOND_PATH_CREATES:
            places.append((1, "create"))
        for at, what in places:
            if len(strings) <= at:
                continue
            written = strings[at]
            known = written.startswith("/") or (
                cell.cwd is not None and _relative_to_cwd(call.args, call.spans[at])
            )
            path = _normalized(os.path.join(cell.cwd or "", written)) if known else written
            if path.startswith(BWRAP_SETUP):
                continue  # bwrap building the sandbox, before the command runs
            self.found.append(Refusal(path, call.name, str(call.errno), what, call.time, known))


def _normalized(path: str) -> str:
    """``os.path.normpath``, and ``//x`` (which POSIX lets it keep) as ``/x``."""
    path = os.path.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def read_trace(lines: Iterable[str], start_cwd: str) -> list[Refusal]:
    """The path calls in an strace ``-f -tt`` record that failed with EROFS/EACCES/EPERM, each
    with the path resolved against its process's working directory (see :class:`_Directories`)."""
    found: list[Refusal] = []
    directories = _Directories(start_cwd, found)
    for pid, kind, call in _calls(lines):
        if kind == "first":
            directories.first(pid)
        elif kind == "exit":
            directories.exit(pid)
        elif kind == "moving":
            directories.moving(pid)
        elif kind == "superseded" and isinstance(call, str):
            directories.superseded(pid, call)
        elif isinstance(call, _Call):
            directories.call(call)
    for pid in list(directories.waiting):
        directories.release(pid, _Cell(None))  # its fork is not in the record
    return found


def _relative_to_cwd(args: str, path: re.Match[str]) -> bool:
    """A relative path argument is relative to the working directory: no directory descriptor
    before it, or AT_FDCWD (strace without ``-y`` does not say which directory another
    descriptor is)."""
    before = args[: path.start()].rstrip().rstrip(",").rstrip()
    return before == "" or before.endswith(("AT_FDCWD", '"'))


def _open_intent(args: str) -> str:
    if "O_CREAT" in args:
        return "create"
    return "write" if any(flag in args for flag in _WRITE_FLAGS) else "read"
