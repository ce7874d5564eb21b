"""``egg web [--listen HOST:PORT] [--token-file PATH] [--allow-input]``: the command line, the
token, the listening socket; then the app (:mod:`.app`) is served on it until interrupted.

The socket is bound here, before anything is served, so that a busy port is one line naming
``--listen`` (not a server's traceback), and ``--listen 127.0.0.1:0`` serves on a free port the
printed URL names. A non-loopback address needs ``--token-file``: a token egg made up and kept
in ``$EGG_HOME`` is for this machine's own browser.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

from egg_core.api import EggError, UsageError

DEFAULT_LISTEN = "127.0.0.1:7681"
#: the token egg keeps when no --token-file is given (0600, in $EGG_HOME, which no sandbox sees)
TOKEN_NAME = "web-token"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve (default {DEFAULT_LISTEN}; port 0: a free one)",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="the token browsers and API clients must give (needed off loopback); default: "
        f"one egg keeps in $EGG_HOME/{TOKEN_NAME}",
    )
    p.add_argument(
        "--allow-input",
        action="store_true",
        help="let browsers type into sessions and size them (default: they only watch)",
    )


def parse_listen(text: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT`` (``[::1]:PORT`` for IPv6); UsageError naming the flag."""
    host, _, port_text = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port_text.isascii() or not port_text.isdigit():
        raise UsageError(f"--listen {text}: expected HOST:PORT (e.g. {DEFAULT_LISTEN})")
    if not 0 <= int(port_text) < 65536:
        raise UsageError(f"--listen {text}: the port must be below 65536")
    try:
        if ipaddress.ip_address(host).is_unspecified:
            raise UsageError(
                f"--listen {text}: name the address browsers will use, not every address "
                "(egg web answers only requests for its own address: DNS rebinding)"
            )
    except ValueError:
        pass  # a name
    return host, int(port_text)


def is_loopback_address(host: str) -> bool:
    """Whether listening on ``host`` serves this machine alone: a loopback address or
    ``localhost`` — not 0.0.0.0 or ::, which listen on every interface."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def kept_token(egg_home: Path) -> str:
    """The token egg generated for this user's browsers (made once, 0600)."""
    from egg_core.api.client import read_token_file

    path = egg_home / TOKEN_NAME
    egg_home.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
    try:
        return read_token_file(str(path))
    except ValueError as exc:
        raise EggError(str(exc).replace("--token-file ", "the kept token ", 1)) from None


def listening_socket(host: str, port: int, listen: str) -> socket.socket:
    """A socket bound and listening at (host, port); one line naming ``--listen`` otherwise."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--listen {listen}: cannot resolve {host} ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise UsageError(
            f"--listen {listen}: cannot listen there ({why}); choose another with "
            "--listen HOST:PORT"
        ) from None
    sock.set_inheritable(False)
    return sock


def run(ns: argparse.Namespace, ctx: Any) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn
        import websockets  # noqa: F401
    except ImportError:
        raise EggError(
            "egg web needs Starlette, uvicorn and websockets: pip install 'egg-sandbox[web]'"
        ) from None
    from egg_core.api.client import egg_home_of, read_token_file

    from .app import Settings, build_app

    host, port = parse_listen(ns.listen)
    loopback = is_loopback_address(host)
    if not loopback and not ns.token_file:
        raise UsageError(
            f"--listen {ns.listen} is not a loopback address: serving sessions beyond this "
            "machine needs --token-file PATH (a token of your own, chmod 600)"
        )
    egg_home = Path(egg_home_of(ctx.environ))
    if ns.token_file:
        try:
            token = read_token_file(ns.token_file)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        token = kept_token(egg_home)
    sock = listening_socket(host, port, ns.listen)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    settings = Settings(
        token=token,
        egg_home=egg_home,
        allow_input=ns.allow_input,
        hosts=frozenset(_host_names(shown, loopback, bound)),
    )
    print(f"egg web: open http://{shown}:{bound}/?token={token}", flush=True)
    config = uvicorn.Config(
        build_app(settings),
        log_level="warning",
        lifespan="off",
        ws="websockets-sansio",
        access_log=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    print("egg web: stopped", file=sys.stderr)
    return 0


def _host_names(shown: str, loopback: bool, port: int) -> list[str]:
    """The ``Host`` headers a page of this server may come with: its own address, and on
    loopback this machine's own names for it (a page reached by another name — a DNS
    rebinding — is refused)."""
    names = [shown]
    if loopback:
        names += ["localhost", "127.0.0.1", "[::1]"]
    hosts = [f"{name}:{port}" for name in dict.fromkeys(names)]
    if port == 80:  # a browser leaves the default port out of Host
        hosts += list(dict.fromkeys(names))
    return hosts
