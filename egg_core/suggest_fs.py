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
from collections.abc import Iterable, Sequence
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
_RESULT = re.compile(r"\)\s+=\s+(?P<value>-?\d+|\?)(?:\s+(?P<errno>E[A-Z0-9]+))?")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')


@attrs.frozen
class Refusal:
    """One write (or read) a traced run was refused."""

    path: str
    call: str
    errno: str
    intent: str  # create | remove | write | read
    time: str


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


def read_trace(lines: Iterable[str], start_cwd: str) -> list[Refusal]:
    """The path calls in an strace ``-f -tt`` record that failed with EROFS/EACCES/EPERM."""
    cwd: dict[str, str] = {}
    pending: dict[str, tuple[str, str]] = {}  # pid -> (call, args so far), for <unfinished ...>
    found: list[Refusal] = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None:
            continue
        pid, when = match["pid"], match["time"]
        if match["call"] is not None:
            call, args = match["call"], match["args"]
            if args.endswith("<unfinished ...>"):
                pending[pid] = (call, args[: -len("<unfinished ...>")])
                continue
        else:
            if pid not in pending or pending[pid][0] != match["resumed"]:
                continue
            call, head = pending.pop(pid)
            args = head + match["rest"]
        result = _RESULT.search(args)
        if result is None:
            continue
        here = cwd.get(pid, start_cwd)
        spans = list(_STRING.finditer(args[: result.start()]))
        strings = [_unescape(m.group(1)) for m in spans]
        if call in ("clone", "clone3", "fork", "vfork") and result["value"].isdigit():
            cwd[result["value"]] = here
            continue
        if call == "chdir" and result["value"] == "0" and strings:
            cwd[pid] = os.path.normpath(os.path.join(here, strings[0]))
            continue
        if result["errno"] not in ERRORS or call not in PATH_CALLS:
            continue
        index, intent = PATH_CALLS[call]
        if len(strings) <= index or not _resolvable(args, spans[index]):
            continue
        if intent == "open":
            intent = _open_intent(args)
        path = os.path.normpath(os.path.join(here, strings[index]))
        if path.startswith(BWRAP_SETUP):
            continue  # bwrap building the sandbox, before the command runs
        found.append(Refusal(path, call, result["errno"], intent, when))
        if call in SECOND_PATH_CREATES and len(strings) > 1 and _resolvable(args, spans[1]):
            second = os.path.normpath(os.path.join(here, strings[1]))
            found.append(Refusal(second, call, result["errno"], "create", when))
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
