"""The filtering proxy of a cached ``egg exec`` launch, served from a child process.

A launch whose network is an allowlist needs :mod:`egg_core.netproxy` on the host for as long as
its sandbox runs. The full path runs it in a thread; the exec cache's fast path cannot: asyncio
and the proxy cost about 50 ms of imports, ten times bubblewrap's own start. So the fast path's
runner makes the proxy's listening sockets (linux-ns: in the sandbox's own network namespace,
see ``egg_plugins.platforms.linux.fastnet``), and a forked child (:func:`start`) holds them. The
child imports nothing until a connection is waiting on one of them: a command that never uses
the network (``egg exec --agent claude -- true``) costs a fork, and the first connection waits
in the socket's backlog while the proxy loads.

The child lives exactly as long as its launch: :func:`stop` kills it (egg reaps it before it
exits), and should egg die first (SIGKILL), the *lifeline* — a pipe only egg holds open for
writing — reads end-of-file and the child exits. The terminal's Ctrl-C and Ctrl-\\ are ignored
in it, as egg itself ignores them while a sandbox runs. It never reads the terminal (stdin and
stdout are ``/dev/null``); its stderr stays egg's, as the full path's proxy thread's is.

This module imports only C-level standard modules until the child starts serving.
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found,unused-ignore]
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def start(
    rules: dict[str, Any], proxy_fds: list[int], port_fds: dict[int, list[int]], log: str | None
) -> Any:
    """Fork the child serving ``proxy_fds`` (the proxy's listening sockets) and ``port_fds``
    (each local port's forward's) under ``rules`` (``NetworkRules``' fields), logging decisions
    to ``log``; the descriptors are the child's from then on (OSError, and they are still the
    caller's, when no child could be made). Returns what :func:`stop` takes."""
    lifeline, keep_alive = os.pipe()
    served = [*proxy_fds, *(fd for fds in port_fds.values() for fd in fds)]
    try:
        pid = os.fork()
    except OSError:
        os.close(lifeline)
        os.close(keep_alive)
        raise
    if pid == 0:  # pragma: no cover - the child (the tests see it serve, and end)
        code = 1
        try:
            os.close(keep_alive)
            _child(rules, proxy_fds, port_fds, log, lifeline)
            code = 0
        except BaseException as exc:  # the sandbox's connections are refused from now on
            _say(f"egg: error: the network proxy stopped: {type(exc).__name__}: {exc}")
        finally:
            os._exit(code)
    os.close(lifeline)
    for fd in served:
        os.close(fd)
    return (pid, keep_alive)


def stop(handle: Any) -> None:
    """End the child (the sandbox it served is gone); it is reaped when egg exits, so that its
    teardown (an address space shared copy-on-write with egg's: a few milliseconds) overlaps
    what egg still does after the run, instead of delaying it."""
    pid, keep_alive = handle
    os.close(keep_alive)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    import atexit

    atexit.register(_reap, pid)


def _reap(pid: int) -> None:
    while True:
        try:
            os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            pass
        return


def _child(
    rules: dict[str, Any],
    proxy_fds: list[int],
    port_fds: dict[int, list[int]],
    log: str | None,
    lifeline: int,
) -> None:
    """Wait for a connection (or the lifeline's end), then serve until the lifeline ends."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    served = [*proxy_fds, *(fd for fds in port_fds.values() for fd in fds)]
    close_others({0, 1, 2, lifeline, *served})
    import select

    poll = select.poll()
    for fd in (lifeline, *served):
        poll.register(fd, select.POLLIN)
    while True:
        try:
            ready = poll.poll()
        except InterruptedError:
            continue
        break
    if any(fd == lifeline for fd, _ in ready):
        return  # the launch ended before anything connected
    _serve(rules, proxy_fds, port_fds, log, lifeline)


def _say(line: str) -> None:
    """One line on egg's stderr, made visible (egg_core.sanitize)."""
    try:
        from egg_core.sanitize import visible

        os.write(2, (visible(line) + "\n").encode(errors="replace"))
    except BaseException:
        pass


def close_others(keep: set[int]) -> None:
    """Close every descriptor but ``keep`` (in a forked child of egg's: it must hold nothing of
    the launch's — the socket gate's listener, bwrap's pipes — that would keep them open)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        names = [str(fd) for fd in range(3, 1024)]
    for name in names:
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(
    rules: dict[str, Any],
    proxy_fds: list[int],
    port_fds: dict[int, list[int]],
    log: str | None,
    lifeline: int,
) -> None:
    import asyncio
    import socket
    from pathlib import Path

    from egg_core.netproxy import DecisionLog, FilteringProxy
    from egg_core.netrules import NetworkRules

    proxy = FilteringProxy(NetworkRules(**rules), DecisionLog(Path(log) if log else None))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()

        def end() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(lifeline, end)
        await proxy.serve(
            [socket.socket(fileno=fd) for fd in proxy_fds],
            {port: [socket.socket(fileno=fd) for fd in fds] for port, fds in port_fds.items()},
        )
        await ended
        await proxy.close()

    try:
        asyncio.run(main())
    finally:
        proxy.log.close()
