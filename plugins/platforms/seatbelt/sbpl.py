"""Writing SBPL (Seatbelt's Scheme-based profile language) safely.

Every user-controlled value — a path, a comment's source text — goes through one of these
functions, so that no path can end its string, open a new form or turn into a comment:

- :func:`quote` writes a string literal. The profile reader is TinyScheme's: inside ``"..."`` only
  a backslash and a double quote are special, so those two are escaped and every other character
  (spaces, parentheses, semicolons, newlines, non-ASCII as UTF-8) is written as it is. A NUL cannot
  be passed in an argv and is refused.
- :func:`regex_escape` makes a path a literal POSIX extended regular expression (the dialect of
  the ``regex`` filter) by escaping every character that is special outside a bracket expression;
  ``]`` and ``}`` are ordinary there, and escaping them is undefined in POSIX, so they are left
  alone. The result is then written with :func:`quote` like any string (a plain string, not the
  ``#"..."`` form, which has no way to contain a double quote).
- :func:`comment` writes a ``;`` comment, escaping every non-printable character so that a newline
  in the text cannot end the comment early and start a rule.
"""

from __future__ import annotations

from collections.abc import Sequence

#: characters with a meaning in a POSIX ERE outside brackets
REGEX_SPECIAL = frozenset(".[\\()*+?{|^$")


def quote(text: str) -> str:
    """``text`` as an SBPL string literal."""
    if "\x00" in text:
        raise ValueError(f"a NUL byte cannot be part of a sandbox profile: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def regex_escape(text: str) -> str:
    """A regular expression matching ``text`` literally."""
    return "".join("\\" + c if c in REGEX_SPECIAL else c for c in text)


def prefix_regex(path: str) -> str:
    """Matches ``path`` and every path that starts with it: ``~/.claude`` also covers
    ``~/.claude.json`` and ``~/.claude/...`` (and, by design, any other same-prefix sibling)."""
    return "^" + regex_escape(path)


def comment(text: str) -> str:
    """A one-line ``;`` comment with every non-printable character escaped."""
    safe = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )
    return f"; {safe}" if safe else ";"


def form(*parts: str) -> str:
    """``(part part ...)``: the caller passes atoms already quoted or built with this function."""
    return "(" + " ".join(parts) + ")"


def rule(action: str, operations: Sequence[str], filters: Sequence[str] = ()) -> str:
    """``(allow|deny op... filter...)``; several filters in one rule match if any one does.

    Rules with more than one filter put each on its own line, so a long path list stays readable
    in ``egg explain``.
    """
    if action not in ("allow", "deny"):
        raise ValueError(f"unknown SBPL action {action!r}")
    head = f"({action} {' '.join(operations)}"
    if not filters:
        return head + ")"
    if len(filters) == 1:
        return f"{head} {filters[0]})"
    return head + "".join(f"\n  {f}" for f in filters) + ")"
