"""Observe, then enforce, for real: a sandboxed run in observe mode through the real proxy
(offline: names resolve through the loopback test seam), ``egg policy suggest`` on its log, the
suggestion written into egg.yaml with mode enforce, and an enforce run that now passes those
hosts and still refuses the metadata address."""

from __future__ import annotations

import json
import socket

import yaml

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


def test_observe_suggest_then_enforce(box: Box, listen: Listen) -> None:
    server = listen(socket.AF_INET, ("127.0.0.1", 0), echo=True)
    names = seam(
        ("listed.example.com", PUBLIC, server.port),
        ("unlisted.example.com", PUBLIC, server.port),
        ("alt.example.com", PUBLIC, server.port),
    )
    log = box.home / "observe.log"
    config = {"network": {"domains": ["listed.example.com"], "mode": "observe"}}
    observed = box.probe(
        PROXY + requests(*TARGETS), config=config, options=["--network-log", str(log)], env=names
    )
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

    enforce = {"network": {"domains": ["listed.example.com", *data["add"]], "mode": "enforce"}}
    box.config(yaml.safe_dump(enforce))
    found = box.probe(PROXY + requests(*TARGETS), env=names)
    assert found["unlisted.example.com:443"] == 200 and found["alt.example.com:8443"] == 200
    assert found["169.254.169.254:80"] == 403 and found["localhost:5432"] != 200
    again = box.run("policy", "suggest", "--log", str(log), "--json")
    assert json.loads(again.stdout)["add"] == []  # applied: nothing left to suggest
