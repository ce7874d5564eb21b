"""Plain aligned text tables for human-readable command output."""

from __future__ import annotations

from collections.abc import Sequence

from egg_core.sanitize import visible


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Every cell through :func:`egg_core.sanitize.visible`: a name chosen inside a sandbox (a
    host it asked for, a path it tried, a session's directory) must not forge lines or send
    escape sequences to the user's terminal."""
    rows = [[visible(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = [_line(headers, widths)]
    lines += [_line(row, widths) for row in rows]
    return "\n".join(lines)


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
