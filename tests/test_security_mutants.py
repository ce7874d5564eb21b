"""The curated mutation tier: each security check taken out of a copy of egg (a textual mutant of
its source), the tests that guard it must fail. A guarding test that still passed would be one
that never relied on the check it claims to cover (issue: structure, tests proven to catch a
broken check).

How: the checkout's sources and tests are copied, the mutant is applied to the copy (its text
must occur exactly once, so a refactor that moves the check fails this tier until the mutant is
updated), and the guarding tests run from the copy — the copy first on ``sys.path`` for pytest
and, through ``EGG_TEST_MUTANT``, for every egg process the tests start (inside sandboxes too).

The mutants of the socket gate and of the exec cache's fact checks have tiers of their own
(``tests/linux/test_gate_mutation.py``, ``tests/test_cache_mutation.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: what the copy holds: the code egg runs and the tests that run it
COPIED = ("egg_core", "plugins", "tests", "pyproject.toml")


@dataclass(frozen=True)
class Mutant:
    """One check taken out: ``old`` replaced by ``new`` in ``path`` (relative to the checkout)."""

    name: str
    path: str
    old: str
    new: str
    #: the tests that must fail with it (pytest node ids, relative to the checkout)
    tests: tuple[str, ...]


MUTANTS: list[Mutant] = [
    Mutant(
        "a wildcard matches a lookalike (evilexample.com for *.example.com)",
        "egg_core/netrules.py",
        "hit = host.endswith(name[1:]) and host != name[2:]",
        "hit = host.endswith(name[2:]) and host != name[2:]",
        (
            "tests/policy/test_netrules.py::"
            "test_a_wildcard_matches_subdomains_only_at_a_label_boundary",
            "tests/linux/test_network.py::"
            "test_a_wildcard_reaches_subdomains_only_never_a_lookalike_or_the_domain_itself",
        ),
    ),
    Mutant(
        "a wildcard covers the domain itself (example.com for *.example.com)",
        "egg_core/netrules.py",
        "hit = host.endswith(name[1:]) and host != name[2:]",
        "hit = host.endswith(name[1:]) or host == name[2:]",
        ("tests/policy/test_netrules.py::test_a_wildcard_never_covers_the_domain_itself",),
    ),
    Mutant(
        "observe mode lets CONNECT to a host loopback port through",
        "egg_core/netproxy.py",
        "        if is_loopback(host):\n            if port",
        '        if is_loopback(host) and self.rules.mode != "observe":\n            if port',
        (
            "tests/policy/test_proxy_observe.py::"
            "test_a_loopback_port_not_forwarded_is_refused_in_observe_mode_too",
            "tests/linux/test_network.py::"
            "test_observe_mode_refuses_connect_to_a_host_loopback_port_through_the_proxy",
        ),
    ),
    Mutant(
        "the exec cache takes a retargeted symlink for the same one",
        "egg_core/facts.py",
        "st.st_gid, os.readlink(path))",
        "st.st_gid, None)",
        (
            "tests/test_facts_identity.py::"
            "test_a_symlink_retargeted_on_the_same_inode_is_another_identity",
        ),
    ),
    Mutant(
        "the TIOCSTI rule compares all 64 bits (bit 32 set walks past it; the kernel reads 32)",
        "plugins/platforms/linux/seccomp.py",
        'filt.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))',
        'filt.add_rule(eperm, "ioctl", sc.Arg(1, sc.EQ, request))',
        (
            "tests/linux/test_syscalls.py::"
            "test_tiocsti_with_high_bits_set_cannot_inject_into_the_terminal",
        ),
    ),
    Mutant(
        "a container engine's control socket is left unmasked (root on the host)",
        "egg_core/protections.py",
        "control_sockets=[sock for sock in CONTROL_SOCKETS if observe.lexists(sock)],",
        "control_sockets=[],",
        (
            "tests/linux/test_network.py::"
            "test_container_engine_socket_is_unreachable[root-/run/docker.sock]",
            "tests/linux/test_network.py::"
            "test_container_engine_socket_is_unreachable[nobody-/var/lib/incus/unix.socket]",
        ),
    ),
    Mutant(
        "a cached launch runs whatever its runner's name now leads to, not the recorded file",
        "egg_core/facts.py",
        'if located(".".join(parts[: index + 1])) != file:',
        'if located(".".join(parts[: index + 1])) is None:',
        (
            "tests/test_exec_cache_runner.py::"
            "test_an_entry_whose_runner_now_loads_from_another_file_is_a_miss",
            "tests/test_observe.py::"
            "test_a_checker_loaded_from_another_file_than_recorded_never_matches",
            "tests/test_observe.py::test_code_a_name_now_leads_to_in_another_file_never_runs",
        ),
    ),
    Mutant(
        "the filtered ssh agent binds to a host key no allowed host has",
        "egg_core/agentfilter.py",
        "if host_key not in self.allowed_keys:",
        "if False:",
        (
            "tests/test_agent_filter.py::"
            "test_a_binding_to_another_key_or_for_forwarding_is_refused",
            "tests/linux/test_ssh_route.py::test_the_filtered_agent_signs_nothing_for_a_server"
            "_whose_key_is_not_an_allowed_hosts[nobody]",
        ),
    ),
    Mutant(
        "the filtered ssh agent takes a session binding the host key did not sign",
        "egg_core/agentfilter.py",
        "if not verify_signature(signer, signature, session_id):",
        "if False:",
        (
            "tests/test_agent_filter.py::test_a_binding_the_host_key_did_not_sign_is_refused_and_unbinds",
        ),
    ),
    Mutant(
        "egg web serves without the token",
        "plugins/web/gate.py",
        "if not self._allowed(scope, headers, query):",
        "if False:",
        (
            "tests/linux/test_web.py::"
            "test_without_the_token_every_route_and_the_websocket_handshake_is_401[root]",
        ),
    ),
    Mutant(
        "egg web accepts a WebSocket from another origin",
        "plugins/web/gate.py",
        'if websocket and headers.get(b"origin", b"").decode("latin-1").lower() != f"http://{host}":',
        "if False:",
        (
            "tests/linux/test_web.py::"
            "test_a_websocket_from_another_origin_is_refused_before_any_output[root-null]",
        ),
    ),
    Mutant(
        "the session socket never compares the client's token",
        "egg_core/session/serving.py",
        "if first.type != p.AUTH or not hmac.compare_digest(first.payload, self.token):",
        "if first.type != p.AUTH:",
        (
            "tests/session/test_sessions.py::"
            "test_a_wrong_token_followed_by_requests_gets_no_answer_and_has_no_effect",
        ),
    ),
    Mutant(
        "a repaint keeps XTGETTCAP and DECRQSS (the terminal would answer into the program)",
        "egg_core/session/queries.py",
        'return body[:2] in (b"+q", b"$q")',
        "return False",
        (
            "tests/session/test_repaint_strings.py::test_a_repaint_carries_no_xtgettcap_or_decrqss",
            "tests/session/test_sessions.py::"
            "test_a_reattach_repaint_asks_the_terminal_no_xtgettcap_or_decrqss",
        ),
    ),
    Mutant(
        "a filter's loading always goes on at once: a cached command is never held",
        "plugins/platforms/linux/socketgate.py",
        """        if not holding:
            # whatever a process adds to its filters only takes from what it may do""",
        """        if True:
            # whatever a process adds to its filters only takes from what it may do""",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_cached_command_starts_only_when_egg_lets_it_go[root]",
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_held_command_never_runs_when_egg_closes_the_gate[nobody]",
        ),
    ),
    Mutant(
        "a cache hit's gate holds nothing (the command starts before egg's last checks)",
        "plugins/platforms/linux/fastrun.py",
        "gate = socketgate.Gate(programs, grants, hold=held is not None)",
        "gate = socketgate.Gate(programs, grants, hold=False)",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_hits_command_starts_only_once_its_admission_said_yes[nobody]",
        ),
    ),
    Mutant(
        "a held command goes before the sandbox's pid 1 was seen armed",
        "plugins/platforms/linux/socketgate.py",
        "going = bool(self._armed and others)",
        "going = bool(others)",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_command_goes_only_with_a_pid_1_bound_to_a_running_bwrap[root-unbound]",
        ),
    ),
    Mutant(
        "any process that loads a filter while bwrap runs is taken for the sandbox's pid 1",
        "plugins/platforms/linux/socketgate.py",
        "if call.pid == init and running:",
        "if running:",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_command_goes_only_with_a_pid_1_bound_to_a_running_bwrap[root-unbound]",
        ),
    ),
    Mutant(
        "a held command goes once its bwrap has ended",
        "plugins/platforms/linux/socketgate.py",
        "if index or not self._bwrap_runs():",
        "if index:",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_a_command_goes_only_with_a_pid_1_bound_to_a_running_bwrap[nobody-ended-later]",
        ),
    ),
    Mutant(
        "binds go on unlooked at after the command was let go (the sandbox's own sockets refused)",
        "plugins/platforms/linux/socketgate.py",
        """            holding = self._holding
        if holding:""",
        """            holding = self._holding
        if True:""",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_the_sandboxs_own_sockets_are_reachable_on_a_hit[nobody]",
        ),
    ),
    Mutant(
        "a cached launch refused at admission is audited (the user's new directory quarantined)",
        "egg_core/cachedrun.py",
        "        if run.admitted:  # what the command did",
        "        if True:  # what the command did",
        (
            "tests/test_exec_cache.py::"
            "test_a_directory_the_user_made_since_caching_is_no_sandboxs_code",
        ),
    ),
    Mutant(
        "a hit's code is served from a file another user could write",
        "egg_core/hitcode.py",
        "data = execcache.load_private(path, FORMAT)",
        'data = marshal.loads(open(path, "rb").read())',
        (
            "tests/test_hitcode.py::"
            "test_a_file_that_is_not_the_users_own_or_not_one_is_never_served[group-writable]",
        ),
    ),
    Mutant(
        "a hit's code is served though its source changed",
        "egg_core/hitcode.py",
        "        if contents(item[0]) != item[2]:",
        "        if False:",
        ("tests/test_hitcode.py::test_a_changed_source_leaves_the_whole_file_unused",),
    ),
    Mutant(
        "the thread a cached sandbox was started from ends at once (its parent, to the kernel)",
        "plugins/platforms/linux/socketgate.py",
        """            self._spawner.acquire()
            self._spawner.release()""",
        """            pass""",
        (
            "tests/linux/test_socket_gate_cached.py::"
            "test_what_spawn_filtered_starts_outlives_the_thread_that_started_it",
        ),
    ),
    Mutant(
        "a hit seals only the caller's descriptors below 1000 (a short close_range)",
        "plugins/platforms/linux/gate_abi.py",
        "c_uint(first), c_uint(0xFFFFFFFF)",
        "c_uint(first), c_uint(999)",
        (
            "tests/linux/test_descriptors.py::"
            "test_a_callers_descriptors_never_reach_the_sandbox_on_a_cache_miss_or_hit[nobody]",
        ),
    ),
    Mutant(
        "a close_range that says done without doing it is believed (the caller's descriptors pass)",
        "plugins/platforms/linux/fastrun.py",
        "    if probe is None or os.get_inheritable(probe):",
        "    if probe is None:",
        (
            "tests/linux/test_descriptors.py::"
            "test_a_cached_launchs_seal_holds_however_close_range_answers[faked]",
        ),
    ),
]


def mutated_copy(mutant: Mutant | None, parent: Path) -> Path:
    """A copy of the checkout with ``mutant`` applied (None: as it is), readable by every test
    identity."""
    copy = Path(tempfile.mkdtemp(prefix="egg-mutant-", dir=parent))
    copy.chmod(0o755)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, copy / name)
    # egg_plugins is plugins/ under its import name (a symlink at the top of the checkout)
    (copy / "egg_plugins").symlink_to("plugins")
    subprocess.run(["chmod", "-R", "a+rX", str(copy)], check=True)
    if mutant is None:
        return copy
    target = copy / mutant.path
    text = target.read_text()
    assert text.count(mutant.old) == 1, (
        f"{mutant.name}: the mutated text occurs {text.count(mutant.old)} times in {mutant.path}"
        " (the check moved: update the mutant)"
    )
    target.write_text(text.replace(mutant.old, mutant.new))
    return copy


@pytest.fixture
def mutants_parent() -> Iterator[Path]:
    """Where the copies go: not /tmp, which every sandbox has private, and traversable by
    uid 65534 (the tests run egg as that user too)."""
    base = Path(os.path.realpath(os.environ.get("EGG_LINUX_TEST_DIR", "/var/tmp")))
    parent = Path(tempfile.mkdtemp(prefix="egg-mutants-", dir=base))
    parent.chmod(0o755)
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


def run_tests(copy: Path, tests: list[str]) -> tuple[set[str], str]:
    """Run ``tests`` from ``copy`` (in one process: this tier is one test of a worker already);
    the node ids that failed, and the output."""
    env = {**os.environ, "EGG_TEST_MUTANT": str(copy), "PYTHONPATH": str(copy)}
    options = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=", "-rfE"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *tests],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    failed = {
        line.split()[1]
        for line in result.stdout.splitlines()
        if line.startswith(("FAILED", "ERROR"))
    }
    return failed, result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_tests_guarding_a_security_check_fail_without_it(
    mutant: Mutant, mutants_parent: Path
) -> None:
    failed, output = run_tests(mutated_copy(mutant, mutants_parent), list(mutant.tests))
    survivors = [test for test in mutant.tests if not any(f.startswith(test) for f in failed)]
    assert not survivors, (
        f"{mutant.name}: passed with the check taken out: {survivors}\n{output[-2000:]}"
    )


@pytest.mark.slow
def test_the_guarding_tests_pass_in_an_unmutated_copy(mutants_parent: Path) -> None:
    """The control: a copy that does not run (a file it lacks, a path it cannot read) would
    fail every guarding test and make every mutant look caught."""
    tests = sorted({test for mutant in MUTANTS for test in mutant.tests})
    failed, output = run_tests(mutated_copy(None, mutants_parent), tests)
    assert not failed, output[-3000:]
    assert " passed" in output.splitlines()[-1], output[-3000:]


def test_every_mutant_names_tests_that_exist() -> None:
    """A mutant's guarding tests are real node ids (a renamed test would make the tier pass
    vacuously: a test that is not collected does not fail)."""
    for mutant in MUTANTS:
        assert (ROOT / mutant.path).is_file(), mutant.path
        assert (ROOT / mutant.path).read_text().count(mutant.old) == 1, mutant.name
        for test in mutant.tests:
            file, _, name = test.partition("::")
            assert (ROOT / file).is_file(), test
            function = name.split("[")[0].split("::")[-1]
            assert f"def {function}(" in (ROOT / file).read_text(), test
