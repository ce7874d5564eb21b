"""Observe, then enforce, for real: a sandboxed run in observe mode through the real proxy
(offline: names resolve through the loopback test seam), ``egg policy suggest`` on its log,
``--apply`` writing the suggestion into the commented egg.yaml (comments kept, mode left alone),
and an enforce run that now passes those hosts and still refuses the metadata address. Then a
traced run (``egg run --trace``): its refused writes become ``rw:`` rules and the protected paths
are "refused on purpose"; ``--apply`` writes the project's rule by itself while the rules outside
the project (beside IPython's startup/ among them) are shown for review and not written, so the
next run writes in the project and still not there; ``--apply --include`` writes a named one."""

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
    "echo 1 > out/result; "  # the project, read-only in this egg.yaml
    "echo x > ~/.ipython/profile_default/history.sqlite; "  # beside startup/, which IPython runs
    'echo \'open("/tmp/pwned", "w")\' > ~/.ipython/profile_default/startup/00-egg.py; '
    "cd ~/.local/state/app && touch relative; echo ran"  # touch: a child after the chdir
)
CONFIG = "network: none   # no network\nfs:\n  - ro:.   # the project: read, not written\n"
STARTUP = ".ipython/profile_default/startup/00-egg.py"


def test_a_traced_run_suggests_fs_rules_and_refuses_the_protected_paths(box: Box) -> None:
    box.mkdir(".local/share/tool")
    box.mkdir(".local/state/app")  # written by a forked child through a relative path
    box.mkdir(".ipython/profile_default/startup")
    box.mkdir(box.workspace / "out")
    box.config(CONFIG)
    first = box.run("run", "--trace", "--", "sh", "-c", TRACED)
    assert first.returncode == 0, first.stderr
    assert not (box.home / ".local/share/tool/state").exists()
    assert not (box.workspace / "out/result").exists()
    shown = box.run("policy", "suggest", "--json")
    assert shown.returncode == 0, shown.stderr
    fs = json.loads(shown.stdout)["fs"]
    outside = ["rw:~/.ipython/profile_default", "rw:~/.local/share/tool", "rw:~/.local/state/app"]
    assert fs["add"] == [*outside, "rw:~/project/out"], fs
    assert fs["automatic"] == ["rw:~/project/out"] and fs["review"] == outside
    assert {r["rule"]: r["apply"] for r in fs["rules"]}["rw:~/.local/share/tool"] == "review"
    why = {r["path"]: r["why"] for r in fs["refused"]}
    assert why[str(box.home / ".ssh/known_hosts")].startswith("refused on purpose: deny:")
    assert why[str(box.home / ".zshenv")].startswith("it would need your home directory")
    assert why["/usr/egg-suggest-test"].startswith("outside your home")
    assert why[str(box.home / STARTUP)].endswith("a startup/ directory")

    # --apply writes the project's rule; a write outside the project is left for review
    applied = box.run("policy", "suggest", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert (box.workspace / "egg.yaml").read_text() == CONFIG + "  - 'rw:~/project/out'\n"
    assert "review by hand" in applied.stdout
    for rule in outside:
        assert f"  {rule}: outside the project ({box.workspace})\n" in applied.stdout
        assert f"        - '{rule}'\n" in applied.stdout  # the line to add, as it would read
    second = box.run("run", "--", "sh", "-c", TRACED)
    assert second.returncode == 0, second.stderr
    assert (box.workspace / "out/result").read_text() == "1\n"
    assert not (box.home / ".local/share/tool/state").exists()
    assert not (box.home / ".ipython/profile_default/history.sqlite").exists()
    assert not (box.home / STARTUP).exists()  # the payload the host would run

    # named once read, a rule outside the project is written
    include = ["--include", "rw:~/.local/share/tool", "--include", "rw:~/.local/state/app"]
    named = box.run("policy", "suggest", "--apply", *include)
    assert named.returncode == 0, named.stderr
    assert (box.workspace / "egg.yaml").read_text() == CONFIG + (
        "  - 'rw:~/project/out'\n  - 'rw:~/.local/share/tool'\n  - 'rw:~/.local/state/app'\n"
    )
    after = json.loads(box.run("policy", "suggest", "--json").stdout)["fs"]
    assert after["add"] == after["review"] == ["rw:~/.ipython/profile_default"]
    third = box.run("run", "--", "sh", "-c", TRACED)
    assert third.returncode == 0, third.stderr
    assert (box.home / ".local/share/tool/state").read_text() == "1\n"
    assert (box.home / ".local/state/app/relative").exists()
    assert not (box.home / ".zshenv").exists()
    assert not (box.home / ".ssh/known_hosts").exists()
    assert not (box.home / STARTUP).exists()


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
