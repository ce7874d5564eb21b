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
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')


@attrs.frozen
class Refusal:
    """One write (or read) a traced run was refused."""

    path: str
    call: str
    errno: str
    intent: str  # create | remove | write | read
    time: str
    #: False: a relative path from a process whose working directory the trace does not show
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


def _calls(lines: Iterable[str]) -> Iterator[tuple[str, _Call | None]]:
    """(pid, the call finished on this line or None) for every line of a record."""
    pending: dict[str, tuple[str, str]] = {}  # pid -> (call, args so far), for <unfinished ...>
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None:
            continue
        pid = match["pid"]
        if match["call"] is not None:
            name, args = match["call"], match["args"]
            if args.endswith(_UNFINISHED):
                pending[pid] = (name, args[: -len(_UNFINISHED)])
                yield pid, None
                continue
        else:
            if pid not in pending or pending[pid][0] != match["resumed"]:
                yield pid, None
                continue
            name, head = pending.pop(pid)
            args = head + match["rest"]
        skeleton = _STRING.sub('""', args)
        end = skeleton.rfind(") = ")
        result = _RESULT.match(skeleton[end + 4 :]) if end >= 0 else None
        if result is None:
            yield pid, None
            continue
        spans = list(_STRING.finditer(args))
        value, errno = result["value"], result["errno"]
        child = result["nspid"] or (value if value.isdigit() else None)
        yield pid, _Call(pid, match["time"], name, args, skeleton, spans, value, errno, child)


def read_trace(lines: Iterable[str], start_cwd: str) -> list[Refusal]:
    """The path calls in an strace ``-f -tt`` record that failed with EROFS/EACCES/EPERM.

    Relative paths need each process's working directory: the first process starts in
    ``start_cwd``; ``chdir`` changes it (``fchdir`` makes it unknown); a child takes its
    parent's when it first shows up (the parent is inside clone/fork then, so that is the
    directory it forked in — a child's lines can come before its parent's result), and shares
    it with the parent for good when cloned with CLONE_FS (threads). A relative path whose
    directory is unknown is kept with ``cwd_known=False``, never guessed.
    """
    records = list(_calls(lines))
    parent: dict[str, tuple[str, bool]] = {}  # child pid -> (parent pid, shares cwd)
    for pid, call in records:
        if call is not None and call.name in _FORKS and call.child is not None:
            parent[call.child] = (pid, "CLONE_FS" in call.skeleton)
    cells: dict[str, list[str | None]] = {}  # pid -> its working directory (shared by threads)
    found: list[Refusal] = []
    for pid, call in records:
        if pid not in cells:
            if not cells:
                cells[pid] = [start_cwd]
            elif pid in parent and parent[pid][0] in cells:
                source, shared = parent[pid]
                cells[pid] = cells[source] if shared else list(cells[source])
            else:
                cells[pid] = [None]
        if call is None:
            continue
        cell = cells[pid]
        strings = [_unescape(m.group(1)) for m in call.spans]
        if call.name == "chdir" and call.value == "0" and strings:
            if strings[0].startswith("/"):
                cell[0] = os.path.normpath(strings[0])
            elif cell[0] is not None:
                cell[0] = os.path.normpath(os.path.join(cell[0], strings[0]))
            continue
        if call.name == "fchdir" and call.value == "0":
            cell[0] = None
            continue
        if call.errno not in ERRORS or call.name not in PATH_CALLS:
            continue
        index, intent = PATH_CALLS[call.name]
        if intent == "open":
            intent = _open_intent(call.skeleton)
        places = [(index, intent)]
        if call.name in SECOND_PATH_CREATES:
            places.append((1, "create"))
        for at, what in places:
            if len(strings) <= at or not _resolvable(call.args, call.spans[at]):
                continue
            known = strings[at].startswith("/") or cell[0] is not None
            path = os.path.normpath(os.path.join(cell[0] or "", strings[at]))
            if path.startswith(BWRAP_SETUP):
                continue  # bwrap building the sandbox, before the command runs
            found.append(Refusal(path, call.name, str(call.errno), what, call.time, known))
    return found


def _resolvable(args: str, path: re.Match[str]) -> bool:
    """A path argument is known when it is absolute, or relative to the working directory: no
    directory descriptor before it, or AT_FDCWD (strace without ``-y`` does not say which
    directory another descriptor is)."""
    if path.group(1).startswith("/"):
        return True
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
        why = _on_purpose(r.path, rules, protected)
        if why is not None:
            refuse(r.path, f"refused on purpose: {why}")
            continue
        if r.intent == "read":
            refuse(r.path, f"{r.errno} on a read: the host's own permissions (no rule grants more)")
            continue
        target = r.path
        in_place = r.intent == "create" and r.call.startswith("open") and os.path.isfile(r.path)
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
        if not (pathrules.under(target, home) or pathrules.under(target, project)):
            refuse(r.path, "outside your home and this project: egg does not propose that")
            continue
        if target == home:
            refuse(r.path, "it would need your home directory writable: name a subdirectory")
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
