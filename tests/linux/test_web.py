"""``egg web`` in a real browser: Debian's chromium driven by Playwright (no browser download),
against sessions run in the sandbox as root and as uid 65534, egg web running as the same user.

The list matches ``egg ls --json``; a session's page shows its program's banner as text in the
DOM (xterm.js's screen-reader rows); keys reach the program only with ``--allow-input``
(confirmed with ``egg status ID --screen``); the page ends with ``[exited 0]``. Without the token
every route and the WebSocket handshake is 401, a WebSocket from another origin is refused before
any output, the pages carry the security headers, and no request leaves egg's origin.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import launch as browser_launch
from tests.linux.conftest import Box


class Web:
    """A running ``egg web`` of the box's user: its URL with the token, and its base."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.base, _, self.token = url.partition("/?token=")
        self.port = int(self.base.rsplit(":", 1)[1])


@pytest.fixture
def web(box: Box) -> Iterator[Callable[..., Web]]:
    started: list[Web] = []

    def start(*options: str) -> Web:
        proc = subprocess.Popen(
            box.command("web", "--listen", "127.0.0.1:0", *options),
            env=box.env(), cwd=box.workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(r"egg web: open (http://127\.0\.0\.1:\d+/\?token=\S+)\n", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        started.append(Web(proc, match.group(1)))
        return started[-1]

    yield start
    for server in started:
        server.proc.terminate()
        server.proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = browser_launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def session(box: Box) -> Iterator[Callable[[str], str]]:
    """Start detached sessions running ``sh -c SCRIPT`` (each call gives an id); the ones still
    running at the end are killed."""
    started: list[str] = []

    def start(script: str) -> str:
        result = box.run("run", "--detach", "--", "sh", "-c", script)
        assert result.returncode == 0, result.stderr
        started.append(result.stdout.strip().split()[-1])
        return started[-1]

    yield start
    for ident in started:
        box.run("kill", ident)


def size(box: Box, ident: str) -> tuple[int, int]:
    data = json.loads(box.run("status", ident, "--json").stdout)
    return data["rows"], data["cols"]


def screen(box: Box, ident: str) -> str:
    result = box.run("status", ident, "--screen")
    return result.stdout


def wait_for(check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def terminal_text(page: Any) -> str:
    """The terminal's rows as the DOM holds them for screen readers."""
    return str(page.locator(".xterm-accessibility-tree").inner_text())


def test_the_list_is_egg_ls_json_and_a_page_shows_the_banner_read_only(
    box: Box, web: Callable[..., Web], browser: Any, session: Callable[[str], str]
) -> None:
    ident = session("echo BANNER-$((6*7)); cat")
    server = web()
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    page.goto(server.url)
    page.wait_for_selector(f'tr[data-session="{ident}"]')
    listed = json.loads(box.run("ls", "--json").stdout)
    key = page.evaluate("() => localStorage.getItem('egg-web-key')")
    bearer = {"Authorization": f"Bearer {key}"}
    api = page.request.get(f"{server.base}/api/sessions", headers=bearer).json()
    assert page.url == f"{server.base}/"  # the token and the page key left the address bar
    assert page.request.get(f"{server.base}/api/sessions").status == 401  # the cookie alone
    assert [row["id"] for row in api] == [row["id"] for row in listed] == [ident]
    assert all(api[0][key] == value for key, value in listed[0].items())
    assert {"clients", "idle"} <= api[0].keys()
    assert ident in page.locator("#sessions").inner_text()

    page.click(f'a[href="/s/{ident}"]')
    wait_for(lambda: "BANNER-42" in terminal_text(page), "the banner in the page")
    page.locator("#terminal").click()
    page.keyboard.type("typed-in-the-browser\n")
    time.sleep(1)

    assert "typed-in-the-browser" not in screen(box, ident)  # read-only: nothing reached it
    assert size(box, ident) == (24, 80)  # a watcher's page does not size the session
    assert "read-only" in page.locator("#mode").inner_text()
    assert requests and all(url.startswith(server.base + "/") for url in requests), requests
    page.close()


def test_with_allow_input_keys_reach_the_program_and_the_end_shows_exited_0(
    box: Box, web: Callable[..., Web], browser: Any, session: Callable[[str], str]
) -> None:
    ident = session("echo READY; read line; echo got:$line; exit 0")
    server = web("--allow-input")
    page = browser.new_page()
    page.goto(server.url)
    page.goto(f"{server.base}/s/{ident}")
    wait_for(lambda: "READY" in terminal_text(page), "the program's first line")
    # the page's terminal (the browser's 1280x720 window, fitted) sizes the session
    wait_for(lambda: size(box, ident) != (24, 80), "the page's size")
    rows, cols = size(box, ident)
    assert rows > 24 and cols > 80, (rows, cols)

    page.locator("#terminal").click()
    page.keyboard.type("from-chromium\n")

    wait_for(lambda: "[exited 0]" in page.locator("#status").inner_text(), "[exited 0]")
    # (the screen-reader rows follow the screen a moment later)
    wait_for(lambda: "got:from-chromium" in terminal_text(page), "the program's answer")
    wait_for(lambda: "[exited 0]" in terminal_text(page), "the end line in the terminal")
    page.close()


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, directly
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def handshake(server: Web, ident: str, key: str = "", **headers: str) -> tuple[str, bytes]:
    """A WebSocket handshake by hand (with ``key``: the page key in the query): the status line,
    and what came after the answer's head within a second (a refused socket gets nothing)."""
    fields = {
        "Host": f"127.0.0.1:{server.port}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        **headers,
    }
    query = f"rows=24&cols=80&key={key}" if key else "rows=24&cols=80"
    head = f"GET /ws/{ident}?{query} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in fields.items()
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall((head + "\r\n").encode())
        data = b""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
    status = data.split(b"\r\n", 1)[0].decode("latin-1")
    return status, data.partition(b"\r\n\r\n")[2]


def test_without_the_token_every_route_and_the_websocket_handshake_is_401(
    box: Box, web: Callable[..., Web], session: Callable[[str], str]
) -> None:
    ident = session("echo SECRET-BANNER; sleep 60")
    server = web()
    wait_for(lambda: "SECRET-BANNER" in screen(box, ident), "the banner")

    for path in ("/", "/api/sessions", f"/s/{ident}", "/static/term.js", "/static/vendor/xterm.js"):
        status, headers, body = _get(server.base + path)
        assert status == 401, (path, status)
        assert b"SECRET" not in body and ident.encode() not in body
    assert _get(f"{server.base}/?token=wrong-token-of-some-length")[0] == 401
    assert _get(f"{server.base}/api/sessions", Authorization="Bearer wrong")[0] == 401
    status, after = handshake(server, ident, Origin=server.base)
    assert status.startswith("HTTP/1.1 401"), status
    assert b"SECRET-BANNER" not in after
    # with the token: the same requests succeed (what the refusals are measured against)
    bearer = {"Authorization": f"Bearer {server.token}"}
    assert _get(f"{server.base}/api/sessions", **bearer)[0] == 200
    status, after = handshake(server, ident, Origin=server.base, **bearer)
    assert status.startswith("HTTP/1.1 101"), status
    assert b"SECRET-BANNER" in after


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1:{port}.evil.example", "null", "http://localhost:{port}", ""]
)
def test_a_websocket_from_another_origin_is_refused_before_any_output(
    box: Box, web: Callable[..., Web], session: Callable[[str], str], origin: str
) -> None:
    ident = session("echo SECRET-BANNER; sleep 60")
    server = web()
    wait_for(lambda: "SECRET-BANNER" in screen(box, ident), "the banner")
    bearer = {"Authorization": f"Bearer {server.token}"}
    headers = {**bearer, **({"Origin": origin.format(port=server.port)} if origin else {})}

    status, after = handshake(server, ident, **headers)

    assert status.startswith("HTTP/1.1 403"), status
    assert b"SECRET-BANNER" not in after


def test_pages_carry_the_security_headers(
    box: Box, web: Callable[..., Web], session: Callable[[str], str]
) -> None:
    ident = session("sleep 60")
    server = web()
    bearer = {"Authorization": f"Bearer {server.token}"}

    for path in ("/", f"/s/{ident}", "/api/sessions"):
        status, headers, _ = _get(server.base + path, **bearer)
        lowered = {k.lower(): v for k, v in headers.items()}
        assert status == 200, path
        policy = lowered["content-security-policy"]
        scripts = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
        assert scripts.split() == ["script-src", "'self'"], policy
        assert lowered["x-content-type-options"] == "nosniff"
        assert lowered["cache-control"] == "no-store"


def test_bad_options_are_one_line_and_serve_nothing(box: Box, web: Callable[..., Web]) -> None:
    server = web()
    busy = box.run("web", "--listen", f"127.0.0.1:{server.port}", timeout=30)
    open_to_all = box.run("web", "--listen", "0.0.0.0:0", timeout=30)
    elsewhere = box.run("web", "--listen", "192.0.2.1:0", timeout=30)  # refused before a bind
    token = box.write(box.home / "token", "a-token-of-sufficient-length\n", mode=0o644)
    shared = box.run("web", "--token-file", str(token), "--listen", "127.0.0.1:0", timeout=30)
    garbled = box.run("web", "--listen", "no-port", timeout=30)

    for result in (busy, open_to_all, elsewhere, shared, garbled):
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and result.stdout == "", result.stderr
    assert "--listen" in busy.stderr and "in use" in busy.stderr
    assert "name the address" in open_to_all.stderr
    assert "--token-file" in elsewhere.stderr
    assert "group or others may read" in shared.stderr
    kept = box.egg_home / "web-token"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_text().strip() == server.token
    assert os.stat(kept).st_uid == box.identity.uid


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_the_token_in_the_url_becomes_a_strict_httponly_cookie_and_leaves_the_url(
    box: Box, web: Callable[..., Web]
) -> None:
    server = web()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    try:
        opener.open(server.url, timeout=10)
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as answer:
        status, headers = answer.code, answer.headers

    assert status == 303
    location = headers["Location"]
    assert location.startswith("/#key=") and server.token not in location
    key = location.removeprefix("/#key=")
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert server.token not in cookie and key not in cookie
    value = cookie.split(";")[0]
    # the cookie opens the pages; the sessions need the key, which the cookie is not: a
    # browser sends the cookie to every port of 127.0.0.1, another user's server's too
    assert _get(f"{server.base}/", Cookie=value)[0] == 200
    assert _get(f"{server.base}/static/term.js", Cookie=value)[0] == 200
    assert _get(f"{server.base}/api/sessions", Cookie=value)[0] == 401
    other = "1" if value.endswith("0") else "0"  # another cookie (1 in 16 already ended in 0)
    assert _get(f"{server.base}/", Cookie=value[:-1] + other)[0] == 401
    # another site's odd cookie beside it does not lock the user out
    odd = f'theme=dark mode; q="a; {value}; a=\xe9'
    assert _get(f"{server.base}/", Cookie=odd)[0] == 200
    assert _get(f"{server.base}/api/sessions", Authorization=f"Bearer {key}")[0] == 200


def test_a_cookie_alone_reaches_no_session(
    box: Box, web: Callable[..., Web], session: Callable[[str], str]
) -> None:
    """What another port's server would get from the browser (the cookie) lists no session and
    opens no terminal: the WebSocket needs the page key."""
    ident = session("echo SECRET-BANNER; sleep 60")
    server = web()
    wait_for(lambda: "SECRET-BANNER" in screen(box, ident), "the banner")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    try:
        opener.open(server.url, timeout=10)
    except urllib.error.HTTPError as answer:
        cookie = answer.headers["Set-Cookie"].split(";")[0]
        key = answer.headers["Location"].removeprefix("/#key=")

    status, after = handshake(server, ident, Origin=server.base, Cookie=cookie)
    assert status.startswith("HTTP/1.1 401"), status
    assert b"SECRET-BANNER" not in after
    status, after = handshake(server, ident, Origin=server.base, Cookie=cookie, key=key)
    assert status.startswith("HTTP/1.1 101"), status
    assert b"SECRET-BANNER" in after


def test_a_request_for_another_host_name_is_refused(box: Box, web: Callable[..., Web]) -> None:
    """A page of another site whose name now points here (DNS rebinding) is not served, token
    or not; this machine's own names for the address are."""
    server = web()
    bearer = {"Authorization": f"Bearer {server.token}"}

    assert (
        _get(f"{server.base}/api/sessions", Host=f"evil.example:{server.port}", **bearer)[0] == 421
    )
    assert _get(f"{server.base}/api/sessions", Host=f"localhost:{server.port}", **bearer)[0] == 200


def test_keys_a_client_sends_to_a_read_only_server_never_reach_the_program(
    box: Box, web: Callable[..., Web], session: Callable[[str], str]
) -> None:
    """Not the page (which sends nothing when read-only) but a client of its own: the server
    attaches it read-only and drops its keys; with --allow-input the same keys arrive."""
    from websockets.sync.client import connect

    for options, arrives in (((), False), (("--allow-input",), True)):
        ident = session("echo READY; cat")
        server = web(*options)
        wait_for(lambda ident=ident: "READY" in screen(box, ident), "the program")
        headers = {"Authorization": f"Bearer {server.token}"}
        url = f"ws://127.0.0.1:{server.port}/ws/{ident}?rows=24&cols=80"
        with connect(url, additional_headers=headers, origin=server.base) as socket_:
            socket_.send(b"keys-from-a-client\r")
            time.sleep(1.5)
        assert ("keys-from-a-client" in screen(box, ident)) is arrives, options


#: the README's screenshot of a session's page (written with EGG_UPDATE_SCREENSHOT=1)
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "egg-web.png"


@pytest.mark.parametrize("identity", ["root"], indirect=True)
def test_the_list_follows_sessions_and_a_sessions_page_is_the_readmes_screenshot(
    box: Box, web: Callable[..., Web], browser: Any, session: Callable[[str], str], tmp_path: Path
) -> None:
    """The list gains a session that starts and loses one that ends, without a reload; the
    screenshot is of a page as a user sees it (the README shows it: EGG_UPDATE_SCREENSHOT=1
    writes it there)."""
    first = session(
        "printf '\\033[1;32m$\\033[0m ls -l /usr\\n'; ls -l /usr; "
        "printf '\\033[1;32m$\\033[0m echo a session in the browser\\n'; "
        "echo a session in the browser; sleep 60"
    )
    server = web()
    page = browser.new_page(viewport={"width": 900, "height": 420})
    page.goto(server.url)
    page.wait_for_selector(f'tr[data-session="{first}"]')
    second = session("echo second; sleep 60")
    page.wait_for_selector(f'tr[data-session="{second}"]')
    box.run("kill", second)
    page.wait_for_selector(f'tr[data-session="{second}"]', state="detached")

    page.goto(f"{server.base}/s/{first}")
    wait_for(lambda: "a session in the browser" in terminal_text(page), "the session's output")
    shot = tmp_path / "egg-web.png"
    page.screenshot(path=str(shot))

    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("EGG_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        SCREENSHOT.write_bytes(shot.read_bytes())
    assert SCREENSHOT.exists(), "run with EGG_UPDATE_SCREENSHOT=1 to take the README's screenshot"
    page.close()


def test_the_list_shows_a_sandboxs_text_made_visible(
    box: Box, web: Callable[..., Web], session: Callable[[str], str]
) -> None:
    """A session's command (its argv: text the agent chose) with a right-to-left override and
    an escape sequence is listed with both made visible, as egg prints them."""
    session("true \u202eevil\x1b[2J; sleep 60")
    server = web()

    rows = json.loads(
        _get(f"{server.base}/api/sessions", Authorization=f"Bearer {server.token}")[2]
    )

    shown = rows[0]["command"][-1]
    assert "\u202e" not in shown and "\x1b" not in shown
    assert "evil" in shown and "\\u202e" in shown and "\\x1b" in shown


def test_a_token_file_another_user_owns_is_refused(box: Box, web: Callable[..., Web]) -> None:
    other = 65534 if box.identity.uid == 0 else 0
    token = box.write(box.root / "their-token", "a-token-of-sufficient-length\n", mode=0o600)
    os.chown(token, other, other)

    result = box.run("web", "--token-file", str(token), "--listen", "127.0.0.1:0", timeout=30)

    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "--token-file" in result.stderr
