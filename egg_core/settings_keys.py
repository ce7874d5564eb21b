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
or removed gets its old value back. JSON and TOML files are understood (TOML is edited with
tomlkit, so the agent's own comments and layout survive); a file that does not parse, before or
after the run, is restored whole by the caller, as any other settings file.

Standard library only until a TOML file needs writing: the exec cache's fast path imports this.
"""

from __future__ import annotations

import copy
import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_MISSING = object()


class Unparseable(ValueError):
    """The file is not a document of its format (or not a table at the top): restore it whole."""


def format_of(path: str) -> str | None:
    """``json`` (comments allowed, as Gemini and opencode allow them) or ``toml`` by the file's
    extension; None for a file restored whole."""
    if path.endswith((".json", ".jsonc")):
        return "json"
    if path.endswith(".toml"):
        return "toml"
    return None


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
        _differences(before, after, key.split("."), [], actions)
    if not actions:
        return None, []
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


def _differences(
    before: Any, after: Any, parts: list[str], at: list[str], actions: list[tuple[list[str], Any]]
) -> None:
    """Append (path, old value or _MISSING) for each place under ``parts`` where ``after``
    differs from ``before``."""
    old_table = before if isinstance(before, dict) else {}
    new_table = after if isinstance(after, dict) else {}
    head, rest = parts[0], parts[1:]
    names = list(dict.fromkeys([*new_table, *old_table])) if head == "*" else [head]
    for name in names:
        old = old_table.get(name, _MISSING)
        new = new_table.get(name, _MISSING)
        if not rest:
            if old != new:
                actions.append(([*at, name], old))
            continue
        if isinstance(new, dict) or isinstance(old, dict):
            if new is not _MISSING and not isinstance(new, dict):
                # a table turned into something else: give the whole table back
                actions.append(([*at, name], old))
                continue
            _differences(old, new, rest, [*at, name], actions)


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
