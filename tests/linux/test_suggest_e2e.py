"""Observe, then enforce, for real: a sandboxed run in observe mode through the real proxy
(offline: names resolve through the loopback test seam), ``egg policy suggest`` on its log,
``--apply`` writing the suggestion into the commented egg.yaml (comments kept, mode left alone),
and an enforce run that now passes those hosts and still refuses the metadata address. Then a
traced run (``egg run --trace``): its refused writes become an ``rw:`` rule, the protected paths
are "refused on purpose", and after ``--apply`` the same run writes where it needed to."""

from __future__ import annotations

import json
import socket

from tests.linux.conftest import Box, Listen
from tests.linux.test_network import PROXY, PUBLIC, seam

TARGETS = [
    "listed.example.com:443",
    "unlisted.example.com:443",
    "alt.example.com:8443",
    "nowhere.example.com:443",
    "localhost:5432",
    "169.254.169.254:80",
]


def requests(*targets: str) -> str:
    return (
        f"results = {{}}\nfor target in {list(targets)!r}:\n"
        "    results[target] = via_proxy(target, b'hi').get('status')\n"
        "report(**results)\n"
    )


OBSERVE = """\
# egg.yaml of a project: watch first, then enforce
network:
  mode: observe   # everything allowed, every would-be denial logged
  domains:
    - listed.example.com   # the one we knew about
# the end
"""


def test_observe_suggest_apply_then_enforce(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    names = seam(
        ("listed.example.com", PUBLIC, server.port),
        ("unlisted.example.com", PUBLIC, server.port),
        ("alt.example.com", PUBLIC, server.port),
    )
    log = box.home / "observe.log"
    box.config(OBSERVE)
    observed = box.probe(PROXY + requests(*TARGETS), options=["--network-log", str(log)], env=names)
    assert observed["unlisted.example.com:443"] == 200  # observe lets a name through
    # but never the host's loopback nor the metadata address: refused in observe mode too
    assert observed["localhost:5432"] == 403 and observed["169.254.169.254:80"] == 403

    result = box.run("policy", "suggest", "--log", str(log), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["add"] == ["alt.example.com:8443", "nowhere.example.com", "unlisted.example.com"]
    refused = {r["host"]: r["why"] for r in data["refused"]}
    assert refused["169.254.169.254"] == "the cloud metadata address"
    assert refused["localhost"].startswith("loopback") and len(refused) == 2
    assert "+    - unlisted.example.com\n" in data["diff"] and not data["applied"]
    assert (box.workspace / "egg.yaml").read_text() == OBSERVE  # showing writes nothing

    applied = box.run("policy", "suggest", "--log", str(log), "--apply")
    assert applied.returncode == 0, applied.stderr
    assert "next: set network.mode: enforce" in applied.stdout
    written = (box.workspace / "egg.yaml").read_text()
    assert written == OBSERVE.replace(
        "    - listed.example.com   # the one we knew about\n",
        "    - listed.example.com   # the one we knew about\n"
        "    - alt.example.com:8443\n    - nowhere.example.com\n    - unlisted.example.com\n",
    )  # comments, order and indentation kept; mode left as it was
    again = box.run("policy", "suggest", "--log", str(log), "--apply")
    assert "nothing to add" in again.stdout and (box.workspace / "egg.yaml").read_text() == written

    box.config(written.replace("mode: observe", "mode: enforce"))  # the user's step
    found = box.probe(PROXY + requests(*TARGETS), env=names)
    assert found["unlisted.example.com:443"] == 200 and found["alt.example.com:8443"] == 200
    assert found["169.254.169.254:80"] == 403 and found["localhost:5432"] != 200


TRACED = (
    "mkdir -p ~/.local/share/tool/cache 2>/dev/null; echo 1 > ~/.local/share/tool/state; "
    "echo x >> ~/.ssh/known_hosts; echo x > ~/.zshenv; touch /usr/egg-suggest-test; "
    "cd ~/.local/state/app && touch relative; echo ran"  # touch: a child after the chdir
)


def test_a_traced_run_suggests_fs_rules_and_refuses_the_protected_paths(box: Box) -> None:
    box.mkdir(".local/share/tool")
    box.mkdir(".local/state/app")  # written by a forked child through a relative path
    box.config("network: none   # no network\n")
    first = box.run("run", "--trace", "--", "sh", "-c", TRACED)
    assert first.returncode == 0, first.stderr
    assert not (box.home / ".local/share/tool/state").exists()
    shown = box.run("policy", "suggest", "--json")
    assert shown.returncode == 0, shown.stderr
    fs = json.loads(shown.stdout)["fs"]
    assert fs["add"] == ["rw:~/.local/share/tool", "rw:~/.local/state/app"], fs
    why = {r["path"]: r["why"] for r in fs["refused"]}
    assert why[str(box.home / ".ssh/known_hosts")].startswith("refused on purpose: deny:")
    assert why[str(box.home / ".zshenv")].startswith("it would need your home directory")
    assert why["/usr/egg-suggest-test"].startswith("outside your home")

    applied = box.run("policy", "suggest", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert (box.workspace / "egg.yaml").read_text() == (
        "network: none   # no network\n"
        "fs:\n  - 'rw:~/.local/share/tool'\n  - 'rw:~/.local/state/app'\n"
    )
    after = json.loads(box.run("policy", "suggest", "--json").stdout)["fs"]
    assert after["add"] == []  # applied: nothing left to suggest from that trace
    second = box.run("run", "--", "sh", "-c", TRACED)
    assert second.returncode == 0, second.stderr
    assert (box.home / ".local/share/tool/state").read_text() == "1\n"
    assert (box.home / ".local/state/app/relative").exists()
    assert not (box.home / ".zshenv").exists()
    assert not (box.home / ".ssh/known_hosts").exists()


def test_apply_waits_for_a_session_that_is_still_running(box: Box) -> None:
    box.config("network: none\n")
    started = box.run("run", "--detach", "--trace", "--", "sh", "-c", "touch ~/x; sleep 60")
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip().split()[-1]
    try:
        refused = box.run("policy", "suggest", "--apply")
        assert refused.returncode == 2 and "is still running" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        assert (box.workspace / "egg.yaml").read_text() == "network: none\n"
    finally:
        box.run("kill", session)
