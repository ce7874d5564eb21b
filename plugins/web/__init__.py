"""``egg web``: the sessions in a browser — a list that follows ``egg ls``, and a real terminal
(xterm.js, served from the package) per session, attached like ``egg attach``; read-only unless
``--allow-input``; every page, the API and the WebSocket behind one token.

A built-in plugin on the ``egg_cli_commands`` hook, like any command a third party adds; it
speaks to session daemons through the same client protocol as ``egg attach`` (a browser is one
more client: the daemon's own auth, repaint and read-only rules). Its modules: :mod:`.command`
(the command line, the token, the listening socket), :mod:`.gate` (who may ask: the token, the
Host and Origin checks, the headers every response carries), :mod:`.app` (the pages and the
API), :mod:`.bridge` (a WebSocket to a session), :mod:`.pages` (the HTML) and ``static/`` (the
scripts, with xterm.js vendored by ``scripts/vendor-xterm``).
"""

from __future__ import annotations

from egg_core.api import Command, RegisterCommand, hookimpl


def _configure(parser: object) -> None:
    from .command import configure

    configure(parser)  # type: ignore[arg-type]


@hookimpl
def egg_cli_commands(register: RegisterCommand) -> None:
    register(
        Command(
            name="web",
            help="watch and drive sessions from a browser (a session list, a terminal each)",
            configure=_configure,
            run="egg_plugins.web.command:run",
        )
    )
