"""Threat L: only the descriptors egg means to pass reach the sandbox, on every launch path.

The caller (a shell script, a terminal multiplexer) may hold anything open; a directory
descriptor that crossed into the sandbox would read every file below it with ``openat``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.linux.conftest import EGG, PY, Box

#: opens, as the caller, a directory (the home), a secret file and a connected socket pair at
#: fixed numbers, inheritable, the home again far above them (a seal over a short range would
#: miss it), then becomes ``egg ARGS``
CALLER = r"""
import os, resource, socket, sys
home = os.open(os.environ["HOME"], os.O_RDONLY | os.O_DIRECTORY)
secret = os.open(os.path.join(os.environ["HOME"], ".ssh", "id_ed25519"), os.O_RDONLY)
left, right = socket.socketpair()
high = min(1000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1)
for source, target in ((home, 7), (secret, 8), (left.fileno(), 9), (home, high)):
    os.dup2(source, target, inheritable=True)
os.execv(sys.argv[1], sys.argv[1:])
"""

#: inside: every descriptor the command holds, what it is, and an attempt through fd 7
PROBE = r"""
import json, os
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass
try:
    stolen = os.read(os.open(".ssh/id_ed25519", os.O_RDONLY, dir_fd=7), 200).decode()
except OSError as exc:
    stolen = f"failed: {exc.strerror}"
print(json.dumps({"fds": fds, "stolen": stolen}))
"""


def run_as_caller(box: Box) -> subprocess.CompletedProcess[str]:
    argv = box.identity.wrap([PY, "-I", "-c", CALLER, EGG, "exec", "--", PY, "-I", "-c", PROBE])
    return subprocess.run(
        argv,
        env=box.env({"EGG_EXEC_CACHE": "debug"}),
        cwd=box.workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_callers_descriptors_never_reach_the_sandbox_on_a_cache_miss_or_hit(box: Box) -> None:
    runs = [run_as_caller(box) for _ in range(2)]

    assert "exec cache miss" in runs[0].stderr and "exec cache hit" in runs[1].stderr
    for run in runs:
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout.splitlines()[-1])
        assert box.secret not in run.stdout
        assert seen["stolen"].startswith("failed"), seen
        leaked = {
            fd: target
            for fd, target in seen["fds"].items()
            if int(fd) > 2 and not target.startswith("/proc/")
        }
        assert leaked == {}, f"descriptors crossed into the sandbox: {leaked}"
        targets = set(seen["fds"].values())
        assert str(box.home) not in targets
        assert not any(t.startswith("socket:") for t in targets)


def test_a_callers_descriptors_never_reach_a_session(box: Box) -> None:
    argv = box.identity.wrap([PY, "-I", "-c", CALLER, EGG, "run", "--", PY, "-I", "-c", PROBE])
    run = subprocess.run(
        argv, env=box.env(), cwd=box.workspace, capture_output=True, text=True, timeout=60
    )

    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if '{"fds"' in line)
    seen = json.loads(line[line.index('{"fds"') :])
    assert box.secret not in run.stdout
    assert seen["stolen"].startswith("failed"), seen
    assert [fd for fd in seen["fds"] if int(fd) > 2] == [
        fd for fd, target in seen["fds"].items() if int(fd) > 2 and target.startswith("/proc/")
    ]


#: a cached launch's seal (linux-ns's fastrun._seal) in a fresh process: the caller's two
#: descriptors (one far up), one to pass; close_range as the kernel does it, refused (an older
#: kernel, a container's filter) or faked (a filter answering "done" for what it never did)
SEAL = r"""
import json, os, sys
from egg_plugins.platforms.linux import fastrun, gate_abi
if sys.argv[1] == "refused":
    def refused(first):
        raise OSError(38, "Function not implemented")
    gate_abi.cloexec_from = refused
elif sys.argv[1] == "faked":
    gate_abi.cloexec_from = lambda first: None
callers = [os.dup2(os.open("/", os.O_RDONLY), fd, inheritable=True) for fd in (7, 1000)]
passed = os.open("/dev/null", os.O_RDONLY)
os.set_inheritable(passed, True)
fastrun._seal((passed,))
print(json.dumps({
    "callers": [os.get_inheritable(fd) for fd in callers],
    "passed": os.get_inheritable(passed),
    "standard": [os.get_inheritable(fd) for fd in (0, 1, 2)],
}))
"""


@pytest.mark.parametrize("close_range", ["kernel", "refused", "faked"])
def test_a_cached_launchs_seal_holds_however_close_range_answers(close_range: str) -> None:
    result = subprocess.run(
        [PY, "-c", SEAL, close_range],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert json.loads(result.stdout) == {
        "callers": [False, False],
        "passed": True,
        "standard": [True, True, True],
    }
