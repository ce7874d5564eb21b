"""``egg policy suggest`` for files: the writes a traced run was refused, as ``fs`` rules.

``egg run --trace`` leaves strace's record of every syscall (``trace.log``, ``strace -f -tt``).
A path call that failed with EROFS, EACCES or EPERM while trying to write (create, truncate,
append, remove, rename, link) is what a ``rw:`` rule would have allowed. Each is judged against
the session's policy as egg.yaml gives it now:

- a path under a ``deny``/``deny-write`` rule or one of egg's own protections (the built-in
  credential list, ``$EGG_HOME``, the configs, ``.git/hooks`` and the other git guard paths, an
  agent's code directories) is *refused on purpose*: listed with the rule's reason, never
  proposed;
- a write outside the home directory and the project, or one that would need the home directory
  itself writable, is listed apart (egg does not propose opening system directories or ``~``);
- a read refused with EACCES/EPERM is the host's own permissions (egg hides a denied path, it does
  not refuse it): listed apart, since no rule can grant more than the host allows.

What is left becomes ``rw:DIR`` (the directory a file was to be created or removed in) or
``rw:FILE`` (an existing file written in place), deepest-first duplicates folded into their
ancestors. Paths inside the sandbox are host paths (the Linux platform binds every rule at its own
path); relative paths are resolved against the process's working directory, followed through
``chdir`` and inherited by forked children.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs

from egg_core import pathrules

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
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
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


@attrs.define
class FsUse:
    """One ``fs`` rule proposed, and the refusals behind it."""

    rule: str
    path: str
    count: int = 0
    first: str = ""
    last: str = ""
    examples: list[str] = attrs.Factory(list)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "path": self.path,
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "examples": self.examples,
        }


@attrs.frozen
class FsRefused:
    """A refused path never turned into a rule, and why."""

    path: str
    why: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "why": self.why, "count": self.count}


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


def _calls(lines: Iterable[str]) -> Iterator[tuple[str, str, _Call | None]]:
    """(pid, kind, call) for the lines that matter: "first" when a pid shows up (again, after
    it exited), "exit" when it ends, "call" for a finished chdir/fchdir, fork or refused path
    call. Everything else is dropped here, so a trace of any size is read in one pass."""
    pending: dict[str, tuple[str, str]] = {}  # pid -> (call, args so far), for <unfinished ...>
    alive: set[str] = set()
    for line in lines:
        line = line.rstrip("\n")
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
                continue
        else:
            if pid not in pending or pending[pid][0] != match["resumed"]:
                continue
            name, head = pending.pop(pid)
            args = head + match["rest"]
        if name not in _TRACKED and name not in PATH_CALLS:
            continue
        skeleton = _STRING.sub('""', args)
        end = skeleton.rfind(") = ")
        result = _RESULT.match(skeleton[end + 4 :]) if end >= 0 else None
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


class _Directories:
    """Each traced process's working directory, as far as the record shows it.

    The first process starts in the run's directory. ``chdir`` moves it, ``fchdir`` makes it
    unknown. A child takes its parent's directory at the fork: when the parent's clone/fork
    result names it (``--decode-pids=pidns`` gives the pid strace sees), or — the child's
    lines often come first — the child's lines are held until then. A child cloned with
    CLONE_FS (a thread) shares the directory for good. A pid that exited and shows up again is
    a new process. Whatever never gets a known directory has its relative paths reported with
    ``cwd_known=False``, never guessed.
    """

    def __init__(self, start_cwd: str, found: list[Refusal]) -> None:
        self.start = start_cwd
        self.found = found
        self.cells: dict[str, list[str | None]] = {}
        self.waiting: dict[str, list[_Call]] = {}  # pid -> its calls held until its fork result
        self.began = False

    def first(self, pid: str) -> None:
        if pid in self.cells:
            return  # its fork's result came first and gave it its directory
        if not self.began:
            self.began = True
            self.cells[pid] = [self.start]
        else:
            self.waiting[pid] = []

    def exit(self, pid: str) -> None:
        self.release(pid, [None])
        self.cells.pop(pid, None)

    def call(self, call: _Call) -> None:
        if call.pid in self.waiting:
            self.waiting[call.pid].append(call)
        else:
            self.apply(call, self.cells.setdefault(call.pid, [None]))

    def release(self, pid: str, cell: list[str | None]) -> None:
        """``pid``'s directory is known now (or never will be): play its held calls."""
        held = self.waiting.pop(pid, None)
        if held is None:
            return
        self.cells[pid] = cell
        for call in held:
            self.apply(call, cell)

    def apply(self, call: _Call, cell: list[str | None]) -> None:
        strings = [_unescape(m.group(1)) for m in call.spans]
        if call.name in _FORKS:
            if call.child is not None and call.child in self.waiting:
                shared = "CLONE_FS" in call.skeleton
                self.release(call.child, cell if shared else list(cell))
            elif call.child is not None and call.child not in self.cells:
                self.cells[call.child] = cell if "CLONE_FS" in call.skeleton else list(cell)
            return
        if call.name == "chdir":
            if call.value == "0" and strings:
                if strings[0].startswith("/"):
                    cell[0] = _normalized(strings[0])
                elif cell[0] is not None:
                    cell[0] = _normalized(os.path.join(cell[0], strings[0]))
            return
        if call.name == "fchdir":
            if call.value == "0":
                cell[0] = None
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
                cell[0] is not None and _relative_to_cwd(call.args, call.spans[at])
            )
            path = _normalized(os.path.join(cell[0] or "", written)) if known else written
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
        elif call is not None:
            directories.call(call)
    for pid in list(directories.waiting):
        directories.release(pid, [None])  # its fork is not in the record
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


def classify(
    refusals: Sequence[Refusal],
    *,
    home: str,
    project: str,
    rules: Sequence[tuple[str, str, str]],
    protected: Sequence[tuple[str, str, str]],
) -> tuple[list[FsUse], list[FsRefused]]:
    """Rules to propose and paths listed apart. ``rules`` and ``protected`` are the session
    policy's (path, mode, source) entries: its fs rules, and egg's own protections."""
    uses: dict[str, FsUse] = {}
    apart: dict[tuple[str, str], int] = {}

    def refuse(path: str, why: str) -> None:
        apart[(path, why)] = apart.get((path, why), 0) + 1

    for r in refusals:
        if not r.cwd_known:
            refuse(r.path, "relative to a working directory the trace does not show")
            continue
        real_path = os.path.realpath(r.path)
        why = _on_purpose(r.path, rules, protected) or _on_purpose(real_path, rules, protected)
        if why is not None:
            refuse(r.path, f"refused on purpose: {why}")
            continue
        if r.intent == "read":
            refuse(r.path, f"{r.errno} on a read: the host's own permissions (no rule grants more)")
            continue
        target = r.path
        in_place = (
            r.intent == "create"
            and (r.call.startswith("open") or r.call == "creat")
            and os.path.isfile(r.path)
        )
        if r.intent in ("create", "remove") and not in_place:
            # a new name (or one taken away) needs its directory writable; a file that exists
            # and is opened with O_CREAT is written in place
            target = os.path.dirname(r.path) or "/"
        if not expressible(target):
            refuse(
                r.path,
                "egg.yaml cannot hold this path (not UTF-8, a control character, or "
                "spaces at either end)",
            )
            continue
        real = os.path.realpath(target)
        if real != target:
            # bwrap mounts where a link leads: the rule would open that, not what it names
            refuse(r.path, f"reached through a symlink on the host (to {real}): no rule proposed")
            continue
        if r.call in METADATA_CALLS and os.path.isdir(target):
            refuse(
                r.path, "a metadata change (mode, owner, times) of a directory: no rule proposed"
            )
            continue
        if not (pathrules.under(target, home) or pathrules.under(target, project)):
            refuse(r.path, "outside your home and this project: egg does not propose that")
            continue
        broad = too_broad(target, home, project)
        if broad is not None:
            refuse(r.path, broad)
            continue
        if any(p == target and m == "ro" for p, m, _ in rules):
            # at one path the more restrictive rule wins: an rw: beside it would change nothing
            refuse(r.path, f"egg.yaml says ro:{_shown(target, home)}: change that rule by hand")
            continue
        mode = pathrules.governing_mode(target, [(p, m) for p, m, _ in rules])
        if mode in pathrules.WRITABLE_MODES or mode == "cache":
            refuse(
                r.path,
                f"{r.errno}: writable under egg.yaml now (a rule added since the run, "
                "or the host's own permissions refused it)",
            )
            continue
        use = uses.setdefault(target, FsUse(f"rw:{_shown(target, home)}", target))
        use.count += 1
        use.first = min(use.first, r.time) if use.first else r.time
        use.last = max(use.last, r.time)
        example = f"{r.call} {_shown(r.path, home)}: {r.errno}"
        if example not in use.examples and len(use.examples) < 3:
            use.examples.append(example)
    kept = _fold_into_ancestors(uses)
    return kept, [FsRefused(p, why, n) for (p, why), n in sorted(apart.items())]


#: calls that change only a path's metadata: never a reason to make a directory writable
METADATA_CALLS = frozenset(
    {"chmod", "fchmodat", "chown", "lchown", "fchownat", "utimensat", "utime", "utimes"}
    | {"setxattr", "lsetxattr"}
)
#: directories under $HOME whose contents the host runs or reads as configuration of what it
#: runs (git's global config and hooks path, desktop autostart and launchers, user units, shell
#: and editor start-up, commands first on PATH): a sandbox that wrote there would run on the
#: host later. The user may still write such a rule by hand; egg never proposes one.
HOST_RUNS_FROM = (
    ".config/git",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/fish",
    ".config/nvim",
    ".config/direnv",
    ".local/bin",
    ".local/share/applications",
    ".local/share/systemd",
    ".vim",
    ".emacs.d",
)
#: how many entries of a proposed directory are looked at for repositories and egg.yaml files
SCAN_LIMIT = 500


def too_broad(target: str, home: str, project: str) -> str | None:
    """Why making ``target`` writable would give the sandbox more than the write it was
    refused, or None: the home directory or anything above it, a directory holding this
    project, anything at the top of the home (shells and tools read their start-up files there),
    a place the host runs code from (:data:`HOST_RUNS_FROM`), or a directory holding a
    repository or an egg.yaml (their hooks and policy would become writable)."""
    if pathrules.under(home, target):
        return "it would need your home directory (or one above it) writable"
    if pathrules.under(project, target) and target != project:
        return "it holds this project (and maybe others): name a directory inside it"
    inside_project = pathrules.under(target, project)
    if os.path.dirname(target) == home and not inside_project:
        return (
            "at the top of your home, where shells and tools read their start-up files: "
            "egg does not propose it"
        )
    for place in HOST_RUNS_FROM:
        where = os.path.join(home, place)
        if pathrules.under(target, where) or pathrules.under(where, target):
            return f"refused on purpose: the host runs what is in ~/{place}"
    # (the project's own .git and egg.yaml are guarded by egg whatever the rule says)
    holds = None if inside_project else _holds_policy_or_repository(target)
    if holds is not None:
        return f"it holds {holds}: its hooks or policy would become writable"
    return None


def _holds_policy_or_repository(directory: str) -> str | None:
    """A ``.git`` or ``egg.yaml`` in ``directory`` or one level below it (bounded)."""
    names = (".git", "egg.yaml")
    for name in names:
        if os.path.lexists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= SCAN_LIMIT:
                    return f"more than {SCAN_LIMIT} entries (not all looked at)"
                if not entry.is_dir(follow_symlinks=False):
                    continue
                for name in names:
                    if os.path.lexists(os.path.join(entry.path, name)):
                        return os.path.join(entry.path, name)
    except OSError:
        return None
    return None


def expressible(path: str) -> bool:
    """A path an fs rule can name: UTF-8 text (strace's escapes of other bytes decode to lone
    surrogates), printable, no spaces at either end (egg.yaml strips them)."""
    return (
        path.isprintable()
        and path == path.strip()
        and not any("\udc80" <= ch <= "\udcff" for ch in path)
    )


def _on_purpose(
    path: str, rules: Sequence[tuple[str, str, str]], protected: Sequence[tuple[str, str, str]]
) -> str | None:
    """The reason of the deny/deny-write rule or protection that governs ``path``, if any."""
    for where, mode, source in protected:
        if mode in ("deny", "deny-write") and pathrules.under(path, where):
            return f"{mode}:{where} ({source})"
    best: tuple[int, int, str, str, str] | None = None
    for where, mode, source in rules:
        if pathrules.under(path, where):
            key = (pathrules.depth(where), pathrules.MODE_RANK.get(mode, 0), mode, source, where)
            if best is None or key[:2] >= best[:2]:
                best = key
    if best is not None and best[2] in ("deny", "deny-write"):
        return f"{best[2]}:{best[4]} ({best[3] or 'egg.yaml'})"
    return None


def _fold_into_ancestors(uses: dict[str, FsUse]) -> list[FsUse]:
    kept: list[FsUse] = []
    for path in sorted(uses):
        parent = next((k for k in kept if pathrules.under(path, k.path)), None)
        if parent is None:
            kept.append(uses[path])
            continue
        child = uses[path]
        parent.count += child.count
        parent.first = min(parent.first, child.first)
        parent.last = max(parent.last, child.last)
        parent.examples = (parent.examples + child.examples)[:3]
    return kept


def _shown(path: str, home: str) -> str:
    if pathrules.under(path, home) and path != home:
        return "~/" + os.path.relpath(path, home)
    return path
