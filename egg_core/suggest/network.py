"""``egg policy suggest``: what a run needed, from its network log, as egg.yaml allowlist entries.

Run once with ``network: {mode: observe}`` (everything allowed, every request enforce mode would
refuse logged with ``would_deny``), then let egg propose the allowlist. Read from the decision
records of ``network.log`` (:class:`egg_core.netproxy.DecisionLog`): the requests enforce mode
would have refused (``would_deny``, or ``deny`` in an enforce-mode log), grouped by host with the
ports used, how often, first and last time, and which log.

Never suggested, listed apart with the reason: loopback (local ports go in ``local_ports`` only
when the user names them), IP literals (private, link-local, the cloud metadata address, or any
address: name the host), and names that resolved to a loopback or non-public address. A name that
did not resolve is suggested (offline, observe mode still teaches), marked as such.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from egg_core.loopback import is_loopback, parse_address
from egg_core.netrules import DEFAULT_PORTS, NetworkRules

METADATA = ipaddress.ip_address("169.254.169.254")
#: a host name egg.yaml can hold: letters, digits and hyphens in labels of at most 63, at most
#: 253 in all; no wildcard (a name comes from what the sandboxed program asked the proxy for)
HOST_NAME = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
)
#: a log line longer than this is not a decision record
MAX_LINE = 64 * 1024


@attrs.define
class HostUse:
    """One host enforce mode would have refused, as the logs saw it."""

    host: str
    ports: set[int] = attrs.Factory(set)
    count: int = 0
    first: str = ""
    last: str = ""
    sources: list[str] = attrs.Factory(list)
    unresolved: bool = False
    #: the allowlist lets it through now (a suggestion applied since the run): nothing to add
    covered: bool = False

    def entries(self) -> list[str]:
        """The egg.yaml entries that let it through: the name for the default ports, and
        ``host:port`` for each other port (the grammar egg.yaml already accepts)."""
        found = []
        if self.ports & set(DEFAULT_PORTS) or not self.ports:
            found.append(self.host)
        found += [f"{self.host}:{port}" for port in sorted(self.ports - set(DEFAULT_PORTS))]
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "ports": sorted(self.ports),
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "sources": self.sources,
            "resolved": not self.unresolved,
            "covered": self.covered,
        }


@attrs.frozen
class Refused:
    """A destination never suggested, and why."""

    host: str
    port: int
    why: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "why": self.why, "count": self.count}


@attrs.frozen
class Fold:
    """One wildcard proposed in place of several subdomains of one registrable domain."""

    entry: str
    domain: str
    replaces: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "domain": self.domain, "replaces": list(self.replaces)}


@attrs.frozen
class Suggestion:
    hosts: tuple[HostUse, ...]
    refused: tuple[Refused, ...]
    add: tuple[str, ...]
    corrupt_lines: int
    records: int
    folded: tuple[Fold, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "add": list(self.add),
            "folded": [f.to_json() for f in self.folded],
            "hosts": [h.to_json() for h in self.hosts],
            "refused": [r.to_json() for r in self.refused],
            "records": self.records,
            "corrupt_lines": self.corrupt_lines,
        }


def read_log(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The decision records of one log and how many lines were not one (half JSON, binary,
    anything else); OSError when the file cannot be read."""
    records: list[dict[str, Any]] = []
    corrupt = 0
    with open(path, "rb") as handle:
        for raw in handle:
            line = raw.strip()
            if not line:
                continue
            try:
                record = json.loads(line) if len(line) <= MAX_LINE else None
            except (ValueError, UnicodeDecodeError):
                record = None
            if isinstance(record, dict) and record.get("kind") == "ssh-agent":
                continue  # the filtered ssh agent's decisions (egg_core.agentfilter): no host
            if not _is_record(record):
                corrupt += 1
                continue
            assert isinstance(record, dict)
            records.append(record)
    return records, corrupt


def _is_record(record: object) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("host"), str)
        and isinstance(record.get("port"), int)
        and record.get("decision") in ("allow", "deny")
    )


def never_suggested(host: str, reason: str) -> str | None:
    """Why (host, the decision's reason) is never turned into an allowlist entry; None if it
    may be."""
    if is_loopback(host):
        return "loopback: a local port goes in network.local_ports, only when you name it"
    address = parse_address(host)
    if address is not None:
        if address == METADATA:
            return "the cloud metadata address"
        if address.is_link_local:
            return "a link-local address"
        if address.is_private or not address.is_global:
            return "a private or reserved address"
        return "an IP address: name the host instead"
    if "resolves to loopback" in reason or "non-public address" in reason:
        return f"it resolved to a private address ({reason})"
    if "unparseable address" in reason:
        return reason
    if not HOST_NAME.fullmatch(host):
        return "not a host name egg.yaml can hold (only letters, digits, hyphens and dots)"
    return None


def would_refuse(record: dict[str, Any]) -> bool:
    """A request enforce mode refuses: flagged in observe mode, or denied in enforce mode."""
    return bool(record.get("would_deny")) or record.get("decision") == "deny"


#: ``--fold``: this many subdomains of one registrable domain become one wildcard
FOLD_AT = 3


def registrable_domain(host: str) -> str | None:
    """``host``'s registrable domain by the Public Suffix List (``a.b.example.co.uk`` ->
    ``example.co.uk``; ``x.github.io`` -> itself, github.io being a suffix its users share);
    None for a public suffix or a single label."""
    from publicsuffixlist import PublicSuffixList

    global _PSL
    if _PSL is None:
        _PSL = PublicSuffixList()  # the list shipped inside the package: nothing is downloaded
    found: str | None = _PSL.privatesuffix(host)
    return found


_PSL: Any = None


def fold(entries: Sequence[str]) -> tuple[list[str], list[Fold]]:
    """``entries`` with every :data:`FOLD_AT` or more subdomains of one registrable domain (on
    the same port) replaced by ``*.domain``; a wildcard never covers the domain itself, so an
    entry for it stays."""
    groups: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        host, port = split_entry(entry)
        domain = registrable_domain(host)
        if domain is not None and host != domain and not host.startswith("*."):
            groups.setdefault((domain, port), []).append(entry)
    out: list[str] = []
    folds: list[Fold] = []
    done: set[tuple[str, str]] = set()
    for entry in entries:
        host, port = split_entry(entry)
        domain = registrable_domain(host)
        key = (domain or "", port)
        members = groups.get(key, [])
        if len(members) < FOLD_AT or entry not in members:
            out.append(entry)
            continue
        if key in done:
            continue
        done.add(key)
        wildcard = f"*.{domain}" + (f":{port}" if port else "")
        out.append(wildcard)
        folds.append(Fold(wildcard, str(domain), tuple(members)))
    return list(dict.fromkeys(out)), folds


def split_entry(entry: str) -> tuple[str, str]:
    """An allowlist entry as (host, port text; empty for the default ports)."""
    host, sep, port = entry.rpartition(":")
    return (host, port) if sep and port.isdigit() else (entry, "")


def suggest(
    logs: Sequence[tuple[str, Sequence[dict[str, Any]]]],
    domains: Iterable[str],
    corrupt: int = 0,
    *,
    fold_wildcards: bool = False,
) -> Suggestion:
    """What to add to a network allowlist of ``domains`` for what ``logs`` (name, records) saw;
    with ``fold_wildcards``, subdomains folded (see :func:`fold`)."""
    hosts: dict[str, HostUse] = {}
    refused: dict[tuple[str, int, str], int] = {}
    total = 0
    for source, records in logs:
        for record in records:
            total += 1
            if not would_refuse(record):
                continue
            host = str(record["host"]).lower().rstrip(".")
            port = int(record["port"])
            reason = str(record.get("reason") or "")
            why = never_suggested(host, reason)
            if why is not None:
                refused[(host, port, why)] = refused.get((host, port, why), 0) + 1
                continue
            use = hosts.setdefault(host, HostUse(host))
            use.ports.add(port)
            use.count += 1
            when = str(record.get("time") or "")
            use.first = min(use.first, when) if use.first else when
            use.last = max(use.last, when)
            if source not in use.sources:
                use.sources.append(source)
            if str(record.get("error") or "").startswith("cannot resolve"):
                use.unresolved = True
    rules = NetworkRules(domains=tuple(domains))
    add: list[str] = []
    for use in sorted(hosts.values(), key=lambda u: u.host):
        use.covered = True
        for entry in use.entries():
            host, port_text = split_entry(entry)
            ports = [int(port_text)] if port_text else [p for p in DEFAULT_PORTS if p in use.ports]
            if all(rules.match(host, port)[0] for port in ports or [443]):
                continue  # already on the list (an earlier suggestion applied, say)
            use.covered = False
            if entry not in add:
                add.append(entry)
    folds: list[Fold] = []
    if fold_wildcards:
        add, folds = fold(add)
    return Suggestion(
        hosts=tuple(sorted(hosts.values(), key=lambda u: (-u.count, u.host))),
        refused=tuple(
            Refused(host, port, why, count) for (host, port, why), count in sorted(refused.items())
        ),
        add=tuple(add),
        corrupt_lines=corrupt,
        records=total,
        folded=tuple(folds),
    )
