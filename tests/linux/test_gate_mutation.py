"""The socket gate's escape tests can fail: each check of the gate taken out (a mutant loaded
through ``sitecustomize`` into every egg process the tests start), the tests that guard it must
fail. A test that still passed would never have relied on the check it claims to cover."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GATE = "import egg_plugins.platforms.linux.socketgate as gate\nimport os, struct\n"

#: mutant -> (the code that takes the check out, the tests that must then fail)
MUTANTS = {
    "the judge lets every socket through": (
        "gate.Gate._judge = lambda self, target: "
        "struct.pack('=H', 1) + b'/proc/self/fd/%d\\0' % target\n",
        [
            "tests/linux/test_socket_gate.py::test_another_sandboxs_sockets_are_unreachable",
            "tests/linux/test_socket_gate.py::"
            "test_a_host_socket_bound_while_the_sandbox_runs_is_unreachable",
            "tests/linux/test_network.py::test_host_socket_in_home_is_unreachable",
        ],
    ),
    "the kernel re-reads the address (CONTINUE) instead of egg connecting its copy": (
        "def connect(self, listener, ident, sock, target, address):\n"
        "    os.close(sock)\n"
        "    gate.abi.respond(listener, ident, cont=True)\n"
        "gate.Gate._connect = connect\n",
        [
            "tests/linux/test_socket_gate.py::"
            "test_changing_the_address_while_egg_judges_it_never_reaches_the_host",
        ],
    ),
    "binds are not remembered": (
        "gate.Gate._on_bind = lambda self, listener, call: "
        "gate.abi.respond(listener, call.id, cont=True)\n",
        [
            "tests/linux/test_socket_gate.py::test_the_sandbox_reaches_its_own_sockets_however_it_names_them"
        ],
    ),
    "grants are ignored": (
        "gate.Grants.granted = lambda self, key: False\n",
        [
            "tests/linux/test_socket_gate.py::"
            "test_a_socket_a_rule_names_is_reachable_and_its_neighbour_is_not",
        ],
    ),
    "paths are resolved in the host's root": (
        "gate.View.resolve = lambda self, path: "
        "gate.abi.openat2(-100, path, os.O_PATH | os.O_CLOEXEC, 0)\n",
        [
            "tests/linux/test_socket_gate.py::test_the_sandbox_reaches_its_own_sockets_however_it_names_them"
        ],
    ),
    "unix datagram sockets are allowed": (
        "import egg_plugins.platforms.linux.gate_filter as filters\n"
        "filters.UNIX_TYPES = tuple(range(16))\n",
        [
            "tests/linux/test_network.py::test_host_datagram_socket_deep_in_home_is_unreachable",
            "tests/linux/test_socket_gate_attacks.py::"
            "test_a_raw_unix_socket_is_a_datagram_socket_and_is_refused",
        ],
    ),
    "i386 socketcall(SOCKETPAIR) is let through": (
        "import egg_plugins.platforms.linux.gate_filter as filters\nfilters.SYS_SOCKETPAIR = 99\n",
        [
            "tests/linux/test_socket_gate_attacks.py::"
            "test_the_i386_socketcall_makes_no_unix_datagram_socket",
        ],
    ),
    "every rule-named socket is granted, wherever it is": (
        "import egg_plugins.platforms.linux_ns as ns\n"
        "named = ns.named_sockets\n"
        "ns.named_sockets = lambda policy: (sum(named(policy), []), [])\n",
        [
            "tests/linux/test_socket_gate_attacks.py::"
            "test_a_rule_named_socket_the_sandbox_could_put_there_grants_nothing",
        ],
    ),
    "a socket with an address is learnt at bind": (
        "gate._unbound_unix = lambda sock: True\n",
        [
            "tests/linux/test_socket_gate_attacks.py::"
            "test_binding_a_socket_bound_on_the_host_does_not_make_its_file_the_sandboxs",
        ],
    ),
    "binds waiting to show are not bounded": (
        "gate.MAX_PENDING = 10**9\n",
        [
            "tests/linux/test_socket_gate_attacks.py::"
            "test_binds_that_fail_never_use_up_eggs_descriptors",
        ],
    ),
    "connects waiting for a worker are not bounded": (
        "gate.MAX_QUEUED = 10**9\n",
        [
            "tests/linux/test_socket_gate_attacks.py::"
            "test_connects_that_never_end_never_use_up_eggs_descriptors",
        ],
    ),
    "the listener reaches the sandbox": (
        "load = gate.abi.Program.load\n"
        "def leaky(self, flags=0):\n"
        "    fd = load(self, flags)\n"
        "    if fd:\n"
        "        os.set_inheritable(os.dup2(fd, 77), True)\n"
        "    return fd\n"
        "gate.abi.Program.load = leaky\n",
        [
            "tests/linux/test_socket_gate.py::test_no_process_of_the_sandbox_holds_the_gates_listener"
        ],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_each_check_of_the_socket_gate_has_a_test_that_fails_without_it(
    tmp_path: Path, mutant: str
) -> None:
    code, tests = MUTANTS[mutant]
    (tmp_path / "sitecustomize.py").write_text(GATE + code)
    # as root only (-k root): enough to show the tests rely on the check; they run as both
    # users in the suite itself
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "-rf", "-k", "root", *tests],
        cwd=ROOT,
        env={**os.environ, "EGG_TEST_MUTANT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    failed = {
        line.split()[1].split("[")[0]
        for line in result.stdout.splitlines()
        if line.startswith("FAILED")
    }
    survivors = sorted(set(tests) - failed)
    assert not survivors, f"passed with '{mutant}': {survivors}\n{result.stdout[-2000:]}"
