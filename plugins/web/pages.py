"""The two pages' HTML: a shell each, with no script or style of its own (the policy allows
scripts from this origin only); what varies is in ``data-`` attributes, escaped."""

from __future__ import annotations

from html import escape

_HEAD = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="/static/egg.css">
{extra}</head>
"""


def session_list() -> str:
    return (
        _HEAD.format(title="egg sessions", extra="")
        + """<body>
<h1>egg sessions</h1>
<table id="sessions" aria-live="polite">
<thead><tr><th>ID</th><th>NAME</th><th>AGENT</th><th>STATE</th><th>DIRECTORY</th>
<th>CLIENTS</th><th>IDLE</th></tr></thead>
<tbody></tbody>
</table>
<p id="empty" hidden>no running sessions</p>
<script src="/static/key.js"></script>
<script src="/static/list.js"></script>
</body>
</html>
"""
    )


def terminal(session_id: str, allow_input: bool) -> str:
    """A session's page: its id only (the page opens with the cookie alone; what the session
    shows comes over the WebSocket, which needs the page key)."""
    title = f"egg {session_id}"
    extra = (
        '<link rel="stylesheet" href="/static/vendor/xterm.css">\n'
        '<script src="/static/vendor/xterm.js"></script>\n'
        '<script src="/static/vendor/addon-fit.js"></script>\n'
    )
    mode = "input" if allow_input else "read-only"
    return (
        _HEAD.format(title=escape(title), extra=extra)
        + f"""<body class="terminal-page">
<header><a href="/">sessions</a> <span id="title">{escape(title)}</span>
<span id="mode">{mode}</span> <span id="status" role="status"></span></header>
<div id="terminal" data-session="{escape(session_id, quote=True)}"
 data-input="{1 if allow_input else 0}"></div>
<script src="/static/key.js"></script>
<script src="/static/term.js"></script>
</body>
</html>
"""
    )
