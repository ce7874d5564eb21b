"""A stand-in for egg's cache hit around the socket gate's hold, run by
``tests/linux/test_socket_gate_cached.py`` as root or as uid 65534: bwrap started by
``Gate.spawn_filtered`` with a hold on its command, then let go, or not, as MODE says.

    python hold_helper.py MODE WORK

MODE: ``lets-go`` (release once bwrap holds the command), ``early`` (release at once, while
bwrap's set-up still waits for this helper), ``closed`` (close the gate, never release),
``killed`` (say ``held`` on stdout, then wait to be killed). The command inside touches
WORK/ran and writes ``command-stderr`` on its stderr. The last line on stdout is a JSON
report: bwrap's exit code, whether the command had run before the release, whether it ran, and
what reached the command's stderr (a pipe of this helper's) and bwrap's own (another).

MODE ``stand-in-bound``, ``stand-in-ended``, ``stand-in-ended-later`` or ``stand-in-unbound``
starts, in bwrap's place, a process shaped as bwrap's are (:data:`STAND_IN`): a "pid 1" child
that loads a filter and a "command" grandchild that loads one, then touches WORK/ran — with
bwrap's stand-in running, or ended at once, or ended once its pid 1 began to load its filter,
or with a pid 1 that loads no filter (so is never seen to arm anything). None of them arms a
parent-death signal, as bwrap's do. It is released once the grandchild is held, and the gate is closed after
a while.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

from egg_plugins.platforms.linux import gate_filter, socketgate
from egg_plugins.platforms.linux.status import StatusReader

#: a seccomp program that allows everything (BPF_RET | BPF_K, SECCOMP_RET_ALLOW): bwrap loads
#: it as its last step before running the command, which is where the gate holds it
ALLOW_ALL = bytes([6, 0, 0, 0, 0, 0, 0xFF, 0x7F])


#: bwrap's processes, as the gate sees them: the spawned process ("bwrap"), its child (the
#: sandbox's pid 1, which loads a filter after it armed its parent-death signal) and that
#: child's child (the command's, which loads a filter, then runs the command: here, a touch)
STAND_IN = """
import ctypes, os, sys, time
mode, marker = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
prog = ctypes.create_string_buffer(bytes([6, 0, 0, 0, 0, 0, 0xFF, 0x7F]))
fprog = ctypes.create_string_buffer(
    (1).to_bytes(2, sys.byteorder) + bytes(6) + ctypes.addressof(prog).to_bytes(8, sys.byteorder)
)

def load_filter():  # prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog), as bwrap does
    word = ctypes.c_ulong
    if libc.prctl(word(22), word(2), word(ctypes.addressof(fprog)), word(0), word(0)) != 0:
        os._exit(9)

status = int(sys.argv[3])  # where the stand-in says its pid 1, as bwrap's --json-status-fd
loaded_read, loaded_write = os.pipe()
init = os.fork()
if init == 0:  # the sandbox's pid 1
    if os.fork() == 0:  # the command's process
        time.sleep(0.2)
        load_filter()
        open(marker, "w").close()
        os._exit(0)
    os.write(loaded_write, b"x")  # (its loading is held until the release: said before)
    if mode != "unbound":
        load_filter()
    os.wait()
    os._exit(0)
os.write(status, str(init).encode())
os.close(status)
if mode == "ended":
    os._exit(0)
if mode == "ended-later":  # once the gate has seen its pid 1 load its filter
    os.read(loaded_read, 1)
    time.sleep(0.1)
    os._exit(0)
os.wait()
"""


def stand_in(mode: str, work: str) -> int:
    marker = os.path.join(work, "ran")
    gate = socketgate.Gate(gate_filter.programs(None), socketgate.Grants(), hold=True)
    status_read, status_write = os.pipe()
    os.set_inheritable(status_write, True)
    shape = mode.removeprefix("stand-in-")
    argv = [sys.executable, "-I", "-c", STAND_IN, shape, marker, str(status_write)]
    pid = gate.spawn_filtered(lambda: os.posix_spawn(argv[0], argv, {}))()
    os.close(status_write)
    init = int(os.read(status_read, 20))
    os.close(status_read)
    held = _until(lambda: gate.command_held(init))
    gate.release(2, init)
    time.sleep(0.5)
    ran_before_close = os.path.exists(marker)
    gate.close()
    os.waitpid(pid, 0)
    time.sleep(0.3)  # (the grandchild of an ended stand-in is nobody's to wait for)
    report = {"held": held, "ran_before_close": ran_before_close, "ran": os.path.exists(marker)}
    print(json.dumps(report))
    return 0


def _pipe_with(data: bytes) -> int:
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    return read


def _drain(fd: int) -> str:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")


def _until(check: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return False


def main(mode: str, work: str) -> int:
    if mode.startswith("stand-in-"):
        return stand_in(mode, work)
    marker = os.path.join(work, "ran")
    seccomp = _pipe_with(ALLOW_ALL)
    status_read, status_write = os.pipe()
    said_read, said_write = os.pipe()  # bwrap's own stderr
    stderr_read, stderr_write = os.pipe()  # what egg gives the command as its stderr
    delay_read, delay_write = os.pipe()  # (early) bwrap reads it for --file, until its end
    for fd in (seccomp, status_write, delay_read):
        os.set_inheritable(fd, True)
    bwrap = shutil.which("bwrap") or "bwrap"
    argv = [
        bwrap,
        "--ro-bind", "/", "/",
        "--bind", work, work,
        "--chdir", work,
        "--unshare-all",
        "--die-with-parent",
        "--tmpfs", "/tmp",
        "--seccomp", str(seccomp),
        "--json-status-fd", str(status_write),
        *(["--file", str(delay_read), "/tmp/delayed"] if mode == "early" else []),
        "--",
        "/bin/sh", "-c", f"echo command-stderr >&2; touch {marker}",
    ]  # fmt: skip
    actions = [(os.POSIX_SPAWN_DUP2, said_write, 2)]
    gate = socketgate.Gate(gate_filter.programs(None), socketgate.Grants(), hold=True)
    env = {"PATH": "/usr/bin:/bin"}
    pid = gate.spawn_filtered(
        lambda: os.posix_spawn(bwrap, argv, env, file_actions=actions, setsigdef=(13, 25))
    )()
    for fd in (seccomp, status_write, said_write, delay_read):
        os.close(fd)
    status = StatusReader(status_read)
    ran_before = False
    if mode == "early":
        gate.release(stderr_write, status.init_pid())
        time.sleep(0.3)  # bwrap waits for the end of --file's pipe meanwhile
        ran_before = os.path.exists(marker)
        os.close(delay_write)
    else:
        os.close(delay_write)
        init = status.init_pid()
        if init is None or not _until(lambda: gate.command_held(init)):
            print("the command was never held", file=sys.stderr)
            return 2
        time.sleep(0.2)  # held: nothing runs however long it waits
        ran_before = os.path.exists(marker)
        if mode == "lets-go":
            gate.release(stderr_write, init)
        elif mode == "closed":
            gate.close()
        elif mode == "killed":
            print("held", flush=True)
            time.sleep(60)
            return 3
    _, wait_status = os.waitpid(pid, 0)
    gate.close()
    os.close(stderr_write)
    status.close()
    report = {
        "exit": os.waitstatus_to_exitcode(wait_status),
        "ran_before": ran_before,
        "ran": os.path.exists(marker),
        "command_stderr": _drain(stderr_read),
        "bwrap_said": _drain(said_read),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
