"""The socket gate (plugins/platforms/linux/socketgate.py): a sandbox reaches its own unix
sockets and egg's, never the host's nor another sandbox's — whenever they were bound, however
the sandbox names them, whatever it does to the address while egg looks. Root and uid 65534."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from tests.linux.conftest import Box, Listen, Result

OWN_SOCKETS = (
    "import threading\n"
    "os.makedirs('sub', exist_ok=True)\n"
    "def serve(path):\n"
    "    s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(8)\n"
    "    def loop():\n"
    "        while True:\n"
    "            c, _ = s.accept(); c.sendall(b'pong'); c.close()\n"
    "    threading.Thread(target=loop, daemon=True).start()\n"
    "def ask(path):\n"
    "    c = socket.socket(socket.AF_UNIX); c.connect(path); data = c.recv(4); c.close()\n"
    "    if data != b'pong': raise OSError(0, 'no answer')\n"
)


#: what every process of the sandbox holds that is a seccomp listener (none may: with it, a
#: sandboxed process could answer its own connect() calls)
LISTENER_HELD = (
    "held = []\n"
    "for pid in os.listdir('/proc'):\n"
    "    if not pid.isdigit(): continue\n"
    "    try: fds = os.listdir(f'/proc/{pid}/fd')\n"
    "    except OSError: continue\n"
    "    for fd in fds:\n"
    "        try: target = os.readlink(f'/proc/{pid}/fd/{fd}')\n"
    "        except OSError: continue\n"
    "        if 'seccomp' in target: held.append(target)\n"
    "report(held=held)"
)


@pytest.mark.parametrize("network", ["none", "*"])
def test_the_sandbox_reaches_its_own_sockets_however_it_names_them(box: Box, network: str) -> None:
    # network "*" shares the host's network namespace: for uid 65534 the gate then learns
    # which file a socket is bound at from the kernel's socket diagnostics
    box.config({"network": [] if network == "none" else ["*"]})
    found = box.probe(
        OWN_SOCKETS + "serve('own.sock'); serve(os.getcwd() + '/sub/abs.sock')\n"
        # /tmp is the sandbox's own: the name is resolved in its root, not the host's
        "serve('/tmp/egg-gate-test.sock')\n"
        "os.symlink('own.sock', 'alias.sock')\n"
        "serve('\\0egg-test-abstract')\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    try: ask('own.sock'); os._exit(0)\n"
        "    except OSError: os._exit(1)\n"
        "_, status = os.waitpid(child, 0)\n"
        # bound by a process that then moved away and exited, served by its child
        "binder = os.fork()\n"
        "if binder == 0:\n"
        "    os.chdir('sub'); s = socket.socket(socket.AF_UNIX); s.bind('handed.sock')\n"
        "    s.listen(8); os.chdir('/')\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            c, _ = s.accept(); c.sendall(b'pong'); c.close()\n"
        "    os._exit(0)\n"
        "os.waitpid(binder, 0)\n"
        "handed = attempt(ask, 'sub/handed.sock')\n"
        "os.chdir('sub')\n"
        "report(relative=attempt(ask, '../own.sock'), absolute=attempt(ask, os.getcwd() + "
        "'/abs.sock'), alias=attempt(ask, '../alias.sock'), abstract=attempt(ask, "
        "'\\0egg-test-abstract'), other_process=status == 0, handed=handed,"
        " private_tmp=attempt(ask, '/tmp/egg-gate-test.sock'))"
    )

    assert found == {
        "relative": "ok",
        "absolute": "ok",
        "alias": "ok",
        "abstract": "ok",
        "other_process": True,
        "handed": "ok",
        "private_tmp": "ok",
    }


def test_a_host_socket_bound_while_the_sandbox_runs_is_unreachable(
    box: Box, listen: Listen
) -> None:
    path = box.workspace / "later.sock"
    ready = box.workspace / "ready"
    proc = subprocess.Popen(
        box.command(
            "exec",
            "--",
            "sh",
            "-c",
            f'while [ ! -e {ready} ]; do sleep 0.05; done; exec "$@"',
            "sh",
            *_python_probe(f"report(connect=attempt(connect, socket.AF_UNIX, {str(path)!r}))"),
        ),
        env=box.env(),
        cwd=box.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)  # the sandbox is up, waiting
    server = listen(socket.AF_UNIX, str(path))
    os.chmod(path, 0o777)
    box.write(ready, "")
    stdout, stderr = proc.communicate(timeout=60)

    assert proc.returncode == 0, stderr
    assert Result(0, stdout, stderr).json() == {"connect": "EACCES"}
    assert server.received_nothing()


def test_another_sandboxs_sockets_are_unreachable(box: Box) -> None:
    # the first sandbox binds 2,000 sockets in its own workspace, in its own network namespace
    # (the host's socket table does not list them), and keeps them listening
    first = box.home / "first"
    box.mkdir(first)
    ready = first / "ready"
    holder = subprocess.Popen(
        box.command(
            "exec",
            "--",
            *_python_probe(
                "import time\nsocks = []\n"
                "for n in range(2000):\n"
                "    s = socket.socket(socket.AF_UNIX); s.bind(f'{n}.sock'); s.listen(1)\n"
                "    socks.append(s)\n"
                "write('ready')\ntime.sleep(120)"
            ),
        ),
        env=box.env(),
        cwd=first,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and holder.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), holder.stderr.read() if holder.stderr else ""
        paths = [str(first / f"{n}.sock") for n in range(0, 2000, 40)]
        found = box.probe(
            f"paths = {paths!r}\n"
            "report(answers=sorted({attempt(connect, socket.AF_UNIX, p) for p in paths}))"
        )
    finally:
        holder.kill()
        holder.wait()

    assert found == {"answers": ["EACCES"]}


def test_changing_the_address_while_egg_judges_it_never_reaches_the_host(
    box: Box, listen: Listen
) -> None:
    # one thread connects again and again with a buffer another thread keeps rewriting between
    # the sandbox's own socket and the host's: egg judges its own copy, so the host's never
    # sees a connection (a check that re-read the caller's memory would be raced)
    host = box.home / "h" / "target.sock"
    box.mkdir(host.parent)
    server = listen(socket.AF_UNIX, str(host))
    os.chmod(host, 0o777)
    own = str(box.workspace / "o" / "target.sock")
    found = box.probe(
        OWN_SOCKETS + f"os.makedirs(os.path.dirname({own!r}), exist_ok=True)\nserve({own!r})\n"
        "import ctypes, threading\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"own, host = {own!r}.encode(), {str(host)!r}.encode()\n"
        "size = 2 + 108\n"
        "buf = ctypes.create_string_buffer(size)\n"
        "buf[0:2] = socket.AF_UNIX.to_bytes(2, 'little')\n"
        "stop = False\n"
        "def flip():\n"
        "    while not stop:\n"
        "        ctypes.memmove(ctypes.addressof(buf) + 2, own + b'\\0', len(own) + 1)\n"
        "        ctypes.memmove(ctypes.addressof(buf) + 2, host + b'\\0', len(host) + 1)\n"
        "threading.Thread(target=flip, daemon=True).start()\n"
        "results = {}\n"
        "for _ in range(1500):\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    rc = libc.connect(s.fileno(), buf, size)\n"
        "    key = 'ok' if rc == 0 else str(ctypes.get_errno())\n"
        "    results[key] = results.get(key, 0) + 1\n"
        "    s.close()\n"
        "stop = True\n"
        "report(results=results)"
    )

    assert sum(found["results"].values()) == 1500
    # both addresses were in the buffer when egg read it: the race was run
    assert found["results"].get("ok", 0) > 0 and found["results"].get("13", 0) > 0, found
    assert server.received_nothing()


def test_no_process_of_the_sandbox_holds_the_gates_listener(box: Box) -> None:
    # with the listener, a sandboxed process could answer its own connect() calls
    found = box.probe(LISTENER_HELD)

    assert found == {"held": []}


def test_a_socket_a_rule_names_is_reachable_and_its_neighbour_is_not(
    box: Box, listen: Listen
) -> None:
    named = box.home / "run" / "agent.sock"
    box.mkdir(named.parent)
    server = listen(socket.AF_UNIX, str(named))
    neighbour = listen(socket.AF_UNIX, str(named.parent / "other.sock"))
    for path in (named, named.parent / "other.sock"):
        os.chmod(path, 0o777)
    box.config({"fs": [f"ro:{named}"]})

    found = box.probe(
        f"report(named=attempt(connect, socket.AF_UNIX, {str(named)!r}),"
        f" neighbour=attempt(connect, socket.AF_UNIX, {str(named.parent / 'other.sock')!r}))"
    )

    assert found == {"named": "ok", "neighbour": "EACCES"}
    assert not server.received_nothing()
    assert neighbour.received_nothing()


def _python_probe(code: str) -> list[str]:
    from tests.linux.conftest import PRELUDE, PY

    return [PY, "-I", "-c", PRELUDE + code]
