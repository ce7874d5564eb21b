"""``egg policy suggest`` from network logs: what enforce mode would refuse becomes allowlist
entries; loopback, addresses and names that resolved to private ones never do; bad input is one
line and exit 2. The end-to-end run through a real proxy is tests/linux/test_suggest_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from egg_core.suggest.network import read_log, suggest

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]


def record(host: str, port: int = 443, **extra: object) -> dict[str, object]:
    base = {"time": extra.pop("time", "2026-12-01T10:00:00Z"), "host": host, "port": port}
    return {**base, "decision": "allow", "reason": "host not on the allowlist", **extra}


OBSERVED = [
    record("api.example.com", would_deny=True, listed=False, time="2026-12-01T10:00:01Z"),
    record("api.example.com", would_deny=True, listed=False, time="2026-12-01T10:00:05Z"),
    record("git.example.com", 8443, would_deny=True, listed=False),
    record("offline.example.com", would_deny=True, listed=False, error="cannot resolve x"),
    record("listed.example.com", listed=True, reason="allowed by listed.example.com"),
    record("169.254.169.254", 80, would_deny=True, reason="host not on the allowlist"),
    record("10.0.0.5", would_deny=True),
    record("localhost", 5432, would_deny=True, reason="loopback port 5432 is not forwarded"),
    record(
        "intranet.example.com", would_deny=True, reason="x resolves to non-public address 10.1.1.1"
    ),
    # an enforce-mode log of old (no listed, no would_deny): a deny is what enforce refused
    {"time": "2026-12-01T09:00:00Z", "host": "old.example.com", "port": 443, "decision": "deny"},
]


def test_what_enforce_would_refuse_becomes_entries_and_the_rest_is_listed_apart():
    found = suggest([("run.log", OBSERVED)], domains=["listed.example.com"])
    assert found.add == (
        "api.example.com",
        "git.example.com:8443",
        "offline.example.com",
        "old.example.com",
    )
    api = next(h for h in found.hosts if h.host == "api.example.com")
    assert (api.count, api.first, api.last, api.sources) == (
        2,
        "2026-12-01T10:00:01Z",
        "2026-12-01T10:00:05Z",
        ["run.log"],
    )
    assert next(h for h in found.hosts if h.host == "offline.example.com").unresolved
    why = {r.host: r.why for r in found.refused}
    assert why["169.254.169.254"] == "the cloud metadata address"
    assert why["10.0.0.5"] == "a private or reserved address"
    assert why["localhost"].startswith("loopback")
    assert why["intranet.example.com"].startswith("it resolved to a private address")


def test_applying_the_suggestion_leaves_nothing_to_suggest():
    first = suggest([("run.log", OBSERVED)], domains=["listed.example.com"])
    again = suggest([("run.log", OBSERVED)], domains=["listed.example.com", *first.add])
    assert again.add == ()


def test_corrupt_lines_are_skipped_and_counted(tmp_path: Path):
    log = tmp_path / "network.log"
    lines = [json.dumps(r).encode() for r in OBSERVED[:2]]
    log.write_bytes(
        b"\n".join([lines[0], b'{"host": "half', b"\x00\xff\xfe binary", b"[1, 2]", lines[1]])
    )
    records, corrupt = read_log(log)
    assert len(records) == 2 and corrupt == 3


def egg(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EGG, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_the_command_reads_logs_and_says_what_to_add(tmp_path: Path, egg_home: Path):
    env = {**os.environ, "EGG_HOME": str(egg_home)}
    log = tmp_path / "network.log"
    log.write_text("".join(json.dumps(r) + "\n" for r in OBSERVED) + "garbage\n")
    (tmp_path / "egg.yaml").write_text("network: {domains: [listed.example.com], mode: observe}\n")
    shown = egg(env, tmp_path, "policy", "suggest", "--log", str(log))
    assert shown.returncode == 0, shown.stderr
    added = "+network: {domains: [listed.example.com, api.example.com, git.example.com:8443"
    assert added in shown.stdout and "next: set network.mode: enforce" in shown.stdout
    assert "169.254.169.254:80 (1x): the cloud metadata address" in shown.stdout
    assert "skipped 1 lines" in shown.stderr
    second = tmp_path / "second.log"
    second.write_text(json.dumps(record("api.example.com", would_deny=True)) + "\n")
    both = egg(env, tmp_path, "policy", "suggest", "--log", str(log), "--log", str(second))
    assert "LOG" in both.stdout.splitlines()[3]  # which log each host came from
    assert f"{log}, {second}" in both.stdout
    data = json.loads(egg(env, tmp_path, "policy", "suggest", "--log", str(log), "--json").stdout)
    assert data["add"][:2] == ["api.example.com", "git.example.com:8443"]
    assert data["corrupt_lines"] == 1 and data["config"] == str(tmp_path / "egg.yaml")
    assert {
        "host": "10.0.0.5",
        "port": 443,
        "why": "a private or reserved address",
        "count": 1,
    } in data["refused"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, egg_home: Path):
    env = {**os.environ, "EGG_HOME": str(egg_home)}
    log = tmp_path / "network.log"
    log.write_text(json.dumps(OBSERVED[0]) + "\n")
    (tmp_path / "shared.yaml").write_text("network: {mode: observe}\n")
    (tmp_path / "egg.yaml").write_text("base: ./shared.yaml\n")
    for args, said in [
        (
            ["policy", "suggest", "--log", str(tmp_path / "missing.log")],
            "cannot read the network log",
        ),
        (["policy", "suggest"], "no session here has a network log"),
        (["policy", "suggest", "nosuchsession"], "nosuchsession"),
        (["policy", "nonsense"], "one command: suggest"),
        (
            ["policy", "suggest", "--trace", str(tmp_path / "missing.trace")],
            "cannot read the trace",
        ),
        (["policy", "suggest", "--log", str(log), "--config", "nope.yaml"], "no such config"),
        (["policy", "suggest", "--log", str(log), "--apply"], "comes from the base"),
        (["policy", "suggest", "s1", "--trace", str(log)], "not both"),
    ]:
        result = egg(env, tmp_path, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_names_the_sandbox_made_up_are_never_suggested():
    """A host name comes from what the sandboxed program asked the proxy for: a wildcard, an
    injected YAML fragment or a name egg.yaml cannot hold is listed apart, never proposed."""
    made_up = ["*", "*.com", "_dmarc.example.com", "a.com\n- '*'", "x" * 64 + ".example.com"]
    found = suggest([("run.log", [record(h, would_deny=True) for h in made_up])], domains=[])
    assert found.add == ()
    assert {r.host for r in found.refused} == {h.lower() for h in made_up}
    assert all(r.why.startswith("not a host name egg.yaml can hold") for r in found.refused)


def test_config_is_relative_to_where_the_user_is(tmp_path: Path, egg_home: Path):
    env = {**os.environ, "EGG_HOME": str(egg_home)}
    (tmp_path / "egg.yaml").write_text("network: [listed.example.com]\n")
    log = tmp_path / "network.log"
    log.write_text(json.dumps(OBSERVED[0]) + "\n")
    here = tmp_path / "elsewhere"
    here.mkdir()
    shown = egg(
        env, here, "policy", "suggest", "--log", str(log), "--config", "../egg.yaml", "--json"
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["config"] == str(tmp_path / "egg.yaml")


def test_a_path_from_the_sandbox_prints_on_an_ascii_terminal(tmp_path: Path, egg_home: Path):
    env = {**os.environ, "EGG_HOME": str(egg_home), "PYTHONIOENCODING": "ascii"}
    (tmp_path / "egg.yaml").write_text("network: none\n")
    trace = tmp_path / "trace.log"
    trace.write_text('1 10:00:00.1 mkdir("/srv/caf\\303\\251/y", 0777) = -1 EROFS (Read-only)\n')
    shown = egg(env, tmp_path, "policy", "suggest", "--trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    assert "/srv/caf\\xe9/y (1x): " in shown.stdout  # escaped, not a crash


def test_a_log_already_applied_prints_only_nothing_to_add(tmp_path: Path, egg_home: Path):
    """Its hosts are all in egg.yaml now: no table of them, no heading, one line."""
    env = {**os.environ, "EGG_HOME": str(egg_home)}
    log = tmp_path / "network.log"
    log.write_text("".join(json.dumps(r) + "\n" for r in OBSERVED[:4]))
    (tmp_path / "egg.yaml").write_text("network: {domains: [listed.example.com], mode: observe}\n")
    applied = egg(env, tmp_path, "policy", "suggest", "--log", str(log), "--apply")
    assert applied.returncode == 0 and "wrote " in applied.stdout, applied
    again = egg(env, tmp_path, "policy", "suggest", "--log", str(log))
    assert again.returncode == 0, again.stderr
    assert again.stdout == "nothing to add: egg.yaml already covers what the run needed\n"
    data = json.loads(egg(env, tmp_path, "policy", "suggest", "--log", str(log), "--json").stdout)
    assert data["add"] == [] and all(h["covered"] for h in data["hosts"]) and data["hosts"]
    # what egg.yaml does not cover yet is still shown, and only that
    log.write_text(log.read_text() + json.dumps(record("new.example.com", would_deny=True)) + "\n")
    shown = egg(env, tmp_path, "policy", "suggest", "--log", str(log)).stdout
    table = shown.split("enforce mode would have refused:\n", 1)[1].split("\n\n", 1)[0]
    assert [row.split()[0] for row in table.splitlines()[1:]] == ["new.example.com"], shown


def test_a_trace_already_applied_prints_only_nothing_to_add(tmp_path: Path, egg_home: Path):
    home = tmp_path / "home"
    project = home / "project"
    (project / "out").mkdir(parents=True)
    env = {**os.environ, "EGG_HOME": str(egg_home), "HOME": str(home)}
    (project / "egg.yaml").write_text("fs: [ro:./]\n")
    trace = project / "trace.log"
    trace.write_text(f'1 10:00:00.1 mkdir("{project}/out/x", 0777) = -1 EROFS (Read-only)\n')
    applied = egg(env, project, "policy", "suggest", "--trace", str(trace), "--apply")
    assert applied.returncode == 0 and "rw:~/project/out" in (project / "egg.yaml").read_text()
    again = egg(env, project, "policy", "suggest", "--trace", str(trace))
    assert again.returncode == 0, again.stderr
    assert again.stdout == "nothing to add: egg.yaml already covers what the run needed\n"
