"""Revert only the parts of an agent's settings that define commands (threat H, narrowly).

An agent's settings file holds two kinds of thing: ordinary state the agent saves as it works
(project trust, the model chosen, a sign-in answer, a start-up counter) and entries that make the
agent run a command on the host later (hooks, MCP servers, a status-line command, a notify
program). Restoring the whole file after every run undoes the first kind too, so the agent asks
the same questions on every start. So a profile names, per settings file, the key paths that
define commands (:attr:`egg_core.profiles.AgentProfile.command_keys`), and after a run only those
are put back as they were before it; every other change stays.

Key paths are dotted (``tools.discoveryCommand``); ``*`` matches every key at its level
(``projects.*.mcpServers`` in ``~/.claude.json``). A path the run added is deleted, one it changed
or removed gets its old value back. JSON, TOML and dotenv files are understood (TOML is edited
with tomlkit, so the agent's own comments and layout survive; a dotenv file's variables are its
top-level keys, and only their lines are rewritten); a file that does not parse, before or after
the run, is restored whole by the caller, as any other settings file.

Answers about one directory (trust) are kept for the run's own workspace only. ``*!cwd`` matches
every key at its level as ``*`` does, except the key that names the run's working directory: a
change under that key is the workspace's own answer and stays; the same change for any other
path (``/``, the user's other projects) is put back. ``projects.*!cwd.hasTrustDialogAccepted``
keeps "trust this folder" for the workspace and takes back trust given to any other folder, which
would loosen the user's later runs there. A pattern may end with ``=`` and a JSON list: at the
workspace's key only a change to one of these values (or a removal) stays, so an answer that
names the workspace but reaches beyond it (Gemini's ``TRUST_PARENT``) is put back too:
``*!cwd=["TRUST_FOLDER", "DO_NOT_TRUST"]``. Planning binds ``*!cwd`` to the workspace
(:func:`bind`: its path and its real path, as a JSON list, ``*!["/w"]``), so the snapshot, the
exec cache and crash recovery carry the bound keys; an unbound ``*!cwd`` keeps nothing (``*``).
The agent's key must equal one of those spellings exactly; any other spelling is put back.

A key the run *added* with an empty value — ``null``, ``""``, ``[]`` or ``{}`` — names no command
and grants nothing, and is the agent's own default written out: it stays, and nothing is said
(Claude writes ``mcpServers: {}``, ``allowedTools: []`` and the like for every new project; a
report of those on every first run teaches users to ignore the report). Only that exact value
counts: a table with anything in it is not empty (``env: {"GIT_SSL_NO_VERIFY": ""}`` sets a
variable whose mere presence turns git's TLS checks off), nor is a change from a value the file
had, nor a removal (``disabledMcpjsonServers: ["x"]`` emptied enables ``x``). ``false`` is not
empty in general — ``security.folderTrust.enabled: false`` turns Gemini's folder trust off, and
that is on by default — so a pattern with no ``*!cwd`` in it names, after ``=``, the further
values a key it adds may take and stay: ``projects.*.hasClaudeMdExternalIncludesApproved=[false]``.
(With ``*!cwd`` the list is the workspace's own, as above; its other keys get the empty values
only.) A dotenv file has no empty values: a variable set to nothing is still set.

Standard library only until a TOML file needs writing: the exec cache's fast path imports this.
"""

from __future__ import annotations

import copy
import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_MISSING = object()
#: the segment that matches every key but the run's working directory (see the module doc)
WORKSPACE = "*!cwd"
_DECODER = json.JSONDecoder()


class Unparseable(ValueError):
    """The file is not a document of its format (or not a table at the top): restore it whole."""


def format_of(path: str) -> str | None:
    """``json`` (comments allowed, as Gemini and opencode allow them), ``toml`` or ``dotenv``
    (``.env``) by the file's name; None for a file restored whole."""
    if path.endswith((".json", ".jsonc")):
        return "json"
    if path.endswith(".toml"):
        return "toml"
    if path.endswith(".env"):
        return "dotenv"
    return None


class _AllBut:
    """A ``*`` that leaves out ``names`` (the workspace's spellings, for ``*!cwd``)."""

    __slots__ = ("names",)

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)


def parse(key: str) -> tuple[list[str | _AllBut], tuple[Any, ...] | None]:
    """A key pattern's segments (a name, ``*``, or every key but some) and the values a change
    at the workspace's key may make and stay (None: any). Raises ValueError."""
    segments: list[str | _AllBut] = []
    i, end = 0, len(key)
    while True:
        if key.startswith("*![", i):
            names, i = _DECODER.raw_decode(key, i + 2)
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"{key!r}: *! must be followed by a list of names")
            segments.append(_AllBut(names))
        else:
            stop = min((j for j in (key.find(".", i), key.find("=", i)) if j >= 0), default=end)
            word = key[i:stop]
            if not word:
                raise ValueError(f"{key!r}: an empty segment")
            segments.append(_AllBut(()) if word == WORKSPACE else word)
            i = stop
        if i == end:
            return segments, None
        if key[i] == ".":
            i += 1
            continue
        if key[i] != "=":
            raise ValueError(f"{key!r}: expected . or = after a segment")
        values, i = _DECODER.raw_decode(key, i + 1)
        if i != end or not isinstance(values, list):
            raise ValueError(f"{key!r}: = must be followed by a JSON list, and end the key")
        return segments, tuple(values)


def bind(keys: Sequence[str], workspace: Sequence[str]) -> tuple[str, ...]:
    """``keys`` with each ``*!cwd`` naming ``workspace`` (the spellings of the run's working
    directory): what planning hands the snapshot."""
    names = "*!" + json.dumps(list(dict.fromkeys(workspace)))
    bound = []
    for key in keys:
        segments, values = parse(key)
        if not any(isinstance(s, _AllBut) for s in segments):
            bound.append(key)
            continue
        text = ".".join(
            names if isinstance(s, _AllBut) and not s.names else _render(s) for s in segments
        )
        bound.append(text if values is None else f"{text}={json.dumps(list(values))}")
    return tuple(bound)


def _render(segment: str | _AllBut) -> str:
    return segment if isinstance(segment, str) else "*!" + json.dumps(list(segment.names))


def revert(
    original: bytes | None, current: bytes, keys: Sequence[str], fmt: str
) -> tuple[bytes | None, list[str]]:
    """``current`` with every key path in ``keys`` as it was in ``original`` (None: the file did
    not exist before the run, so those paths are removed).

    Returns (the content to write, or None when ``current`` can stay as it is; the key paths
    put back, as ``a.b.c`` with wildcards expanded). Raises :class:`Unparseable`.
    """
    before = _load(original, fmt) if original is not None else {}
    after = _load(current, fmt)
    actions: list[tuple[list[str], Any]] = []
    for key in keys:
        try:
            segments, values = parse(key)
        except ValueError as exc:
            raise Unparseable(str(exc)) from None
        _differences(
            before, after, segments, [], actions, values, added=_added_ok(segments, values, fmt)
        )
    if not actions:
        return None, []
    if fmt == "dotenv":
        text = _dotenv_revert(original or b"", current, before, after, actions)
        return text.encode("utf-8"), [".".join(p) for p, _ in actions]
    if fmt == "toml":
        import tomlkit

        document: Any = tomlkit.parse(current.decode("utf-8"))
        for path, value in actions:
            _apply(document, path, value)
            _prune(document, before, path, value)
        return tomlkit.dumps(document).encode("utf-8"), [".".join(p) for p, _ in actions]
    document = after
    for path, value in actions:
        _apply(document, path, value)
        _prune(document, before, path, value)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return text.encode("utf-8"), [".".join(p) for p, _ in actions]


def is_empty(data: bytes, fmt: str) -> bool:
    """Whether ``data`` is an empty table (what a new file that held only commands becomes)."""
    try:
        return _load(data, fmt) == {}
    except Unparseable:
        return False


def _load(data: bytes, fmt: str) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
        if fmt == "toml":
            import tomllib

            value: Any = tomllib.loads(text)
        elif fmt == "dotenv":
            value = {m.group(1): m.group(2) or "" for m in _dotenv_matches(text)}
        else:
            value = _json_with_comments(text) if text.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        # (a document nested deeper than Python's parsers go is one the agent may still read:
        # restored whole, like any other that does not parse here)
        raise Unparseable(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(value, dict):
        raise Unparseable(f"the top level is a {type(value).__name__}, not a table")
    return value


def _json_with_comments(text: str) -> Any:
    """JSON, or JSON with ``//`` and ``/* */`` comments (JSONC: what the agents' own loaders
    accept). A file whose commands must be reverted is written back as plain JSON."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    out, i, quoted = [], 0, False
    while i < len(text):
        char = text[i]
        if quoted:
            out.append(char)
            if char == "\\":
                out.append(text[i + 1 : i + 2])
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            out.append(char)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment")
            i = end + 2
            continue
        else:
            out.append(char)
        i += 1
    return json.loads("".join(out))


#: what a key the run adds may hold and stay, unsaid (see the module doc); types compared too
EMPTY_VALUES: tuple[Any, ...] = (None, "", [], {})


def _added_ok(
    segments: Sequence[str | _AllBut], values: tuple[Any, ...] | None, fmt: str
) -> tuple[Any, ...]:
    """The values a key this pattern guards may be added with and stay (outside the
    workspace's own key): the empty ones, and a pattern's own ``=[values]`` unless they are
    the workspace's (``*!cwd``); none in a dotenv file."""
    if fmt == "dotenv":
        return ()
    if values is None or any(isinstance(s, _AllBut) for s in segments):
        return EMPTY_VALUES
    return (*EMPTY_VALUES, *values)


def _differences(
    before: Any,
    after: Any,
    parts: Sequence[str | _AllBut],
    at: list[str],
    actions: list[tuple[list[str], Any]],
    values: tuple[Any, ...] | None = None,
    workspace: bool = False,
    added: tuple[Any, ...] = (),
) -> None:
    """Append (path, old value or _MISSING) for each place under ``parts`` where ``after``
    differs from ``before``, except the workspace's own answers (``*!cwd``: below its key, a
    change stays when ``values`` is None, or is a removal or one of ``values``) and a key the
    run added with one of the ``added`` values (nothing to revert: see the module doc)."""
    old_table = before if isinstance(before, dict) else {}
    new_table = after if isinstance(after, dict) else {}
    head, rest = parts[0], parts[1:]
    every = head == "*" or isinstance(head, _AllBut)
    names = list(dict.fromkeys([*new_table, *old_table])) if every else [str(head)]
    for name in names:
        here = workspace or (isinstance(head, _AllBut) and name in head.names)
        if here and values is None:
            continue  # the workspace's own answer: the agent's to keep
        old = old_table.get(name, _MISSING)
        new = new_table.get(name, _MISSING)
        if not rest:
            kept = here and (new is _MISSING or _one_of(new, values or ()))
            inert = not here and old is _MISSING and _one_of(new, added)
            if old != new and not kept and not inert:
                actions.append(([*at, name], old))
            continue
        if isinstance(new, dict) or isinstance(old, dict):
            if new is not _MISSING and not isinstance(new, dict):
                # a table turned into something else: give the whole table back
                actions.append(([*at, name], old))
                continue
            _differences(old, new, rest, [*at, name], actions, values, here, added)


def _one_of(value: Any, allowed: Sequence[Any]) -> bool:
    """Whether ``value`` is one of ``allowed``, of the same type (``True`` is not ``1``)."""
    return any(type(value) is type(a) and value == a for a in allowed)


def _apply(document: Any, path: list[str], value: Any) -> None:
    """Set ``path`` in ``document`` to ``value`` (tables made on the way), or delete it."""
    table = document
    for name in path[:-1]:
        if name not in table:
            if value is _MISSING:
                return
            table[name] = {}
        table = table[name]
    leaf = path[-1]
    if value is _MISSING:
        if leaf in table:
            del table[leaf]
    else:
        table[leaf] = copy.deepcopy(value)


def _prune(document: Any, before: Any, path: list[str], value: Any) -> None:
    """After deleting ``path``: the tables on the way that the run added and that are empty
    now go too (``security: {}`` is not left behind when the run added only ``security.x``)."""
    if value is not _MISSING:
        return
    for depth in range(len(path) - 1, 0, -1):
        prefix = path[:depth]
        table, old = document, before
        for name in prefix:
            table = table.get(name) if isinstance(table, dict) else None
            old = old.get(name, _MISSING) if isinstance(old, dict) else _MISSING
        if not isinstance(table, dict) or table or old is not _MISSING:
            return
        parent = document
        for name in prefix[:-1]:
            parent = parent[name]
        del parent[prefix[-1]]


# --- dotenv -------------------------------------------------------------------------------------

#: JavaScript's ``\s``, ``^`` and ``$`` (multiline) and ``.``, spelt out: the dotenv package's
#: LINE expression (dotenv/lib/main.js, as Gemini CLI 0.61 bundles it) is scanned over the whole
#: text, not line by line, so a value may start on a later line; this is the same expression,
#: so what counts as a variable, and which text is its value, is what the agent reads
_JS_SPACE = "[\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_JS_EOL = "\n\r\u2028\u2029"
_DOTENV_LINE = re.compile(
    rf"(?:\A|(?<=[{_JS_EOL}])){_JS_SPACE}*(?:export{_JS_SPACE}+)?([A-Za-z0-9_.\-]+)"
    rf"(?:{_JS_SPACE}*={_JS_SPACE}*?|:{_JS_SPACE}+?)"
    rf"({_JS_SPACE}*'(?:\\'|[^'])*'|{_JS_SPACE}*\"(?:\\\"|[^\"])*\"|{_JS_SPACE}*`(?:\\`|[^`])*`"
    rf"|[^#\r\n]+)?{_JS_SPACE}*(?:#[^{_JS_EOL}]*)?(?=[{_JS_EOL}]|\Z)"
)


def _dotenv_matches(text: str) -> list[re.Match[str]]:
    """Every assignment dotenv reads in ``text`` (the last of a name wins). A file with a
    carriage return is one this module does not rewrite: restored whole."""
    if "\r" in text:
        raise ValueError("carriage returns")
    return list(_DOTENV_LINE.finditer(text))


def _dotenv_line(text: str, match: re.Match[str]) -> tuple[int, int]:
    """The lines of one assignment: from the start of the line that names the variable to the
    end of the line its value ends on, newline included (a comment on the lines after it,
    which the expression also takes in, stays)."""
    start = text.rfind("\n", 0, match.start(1)) + 1
    anchor = match.end(2) if match.start(2) >= 0 else match.end(1)
    end = text.find("\n", anchor)
    return start, len(text) if end < 0 else end + 1


def _dotenv_revert(
    original: bytes,
    current: bytes,
    before: dict[str, Any],
    after: dict[str, Any],
    actions: Sequence[tuple[list[str], Any]],
) -> str:
    """``current`` with each variable in ``actions`` as in ``original``: the run's lines of it
    removed and, where it was there before, its old assignment put where the first one stood
    (or at the end). The result is read again and must hold exactly the variables expected,
    or it is :class:`Unparseable` and the caller restores the file whole."""
    old_text, text = original.decode("utf-8"), current.decode("utf-8")
    expected = dict(after)
    for path, value in actions:
        name = path[0]
        spans = [_dotenv_line(text, m) for m in _dotenv_matches(text) if m.group(1) == name]
        at = spans[0][0] if spans else len(text)
        for start, end in reversed(spans):
            text = text[:start] + text[end:]
        if value is _MISSING:
            expected.pop(name, None)
            continue
        expected[name] = before[name]
        [*_, last] = [m for m in _dotenv_matches(old_text) if m.group(1) == name]
        start, end = _dotenv_line(old_text, last)
        line = old_text[start:end].rstrip("\n") + "\n"
        at = min(at, len(text))
        if at == len(text) and text and not text.endswith("\n"):
            text, at = text + "\n", at + 1
        text = text[:at] + line + text[at:]
    if _load(text.encode("utf-8"), "dotenv") != expected:
        raise Unparseable("the variables could not be put back line by line")
    return text
