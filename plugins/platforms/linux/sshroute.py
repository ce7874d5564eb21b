"""ssh inside a sandbox whose network is filtered: the route through egg's proxy, and the host
keys of the allowed hosts.

ssh ignores ``HTTPS_PROXY``, and the sandbox has no resolver, so without this ``ssh`` and ``git``
over SSH fail with "Could not resolve hostname". ssh takes ``~`` from the passwd entry, not
``$HOME``, and the user's ``~/.ssh`` stays denied, so the route cannot live in a user config:
egg binds a system config of its own over ``/etc/ssh/ssh_config`` (which every ``ssh`` reads,
wherever the agent, git or scp calls it from) that sends every connection through
:mod:`.sshconnect` — a CONNECT to the filtering proxy, decided and logged like any request — and
points ssh at a known_hosts file holding only the host user's lines for the hosts the policy
allows (hashed lines, ``@cert-authority`` and ``@revoked`` lines and wildcard patterns matched
as ssh matches them). The user's files are never visible, and nothing the sandbox does reaches
them: the copy is read-only, and the route's directory is egg's (under ``$EGG_HOME``, which the
sandbox cannot see), named by its contents so that every run with the same policy and host keys
binds the same one.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from egg_core.api import EffectivePolicy
from egg_core.api.platform import NetworkRules, observe, split_network_entry

#: where the route's directory appears inside the sandbox
ROUTE_INSIDE = "/run/egg-ssh"
#: the system-wide client config every ssh reads (when the host has one, egg's is bound over it)
SYSTEM_CONFIG = "/etc/ssh/ssh_config"
CONNECT = Path(__file__).with_name("sshconnect.py")
#: the known_hosts files ssh reads by default, the user's (relative to the home) and the system's
USER_KNOWN_HOSTS = (".ssh/known_hosts", ".ssh/known_hosts2")
SYSTEM_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
#: the most of a known_hosts file egg reads
MAX_KNOWN_HOSTS = 4 << 20


def targets(policy: EffectivePolicy) -> list[tuple[str, int]]:
    """The (host, port) pairs the allowlist names exactly: a wildcard entry names no host whose
    hashed known_hosts line could be checked, and an entry without a port allows 80 and 443."""
    found = []
    for entry in policy.domains:
        name, port = split_network_entry(entry)
        name = name.lower().rstrip(".")
        if not name or "*" in name:
            continue
        for number in (int(port),) if port.isdigit() else (80, 443):
            found.append((name, number))
    return list(dict.fromkeys(found))


def ssh_name(host: str, port: int) -> str:
    """How known_hosts names a host: bare on port 22, ``[host]:port`` on any other."""
    return host if port == 22 else f"[{host}]:{port}"


def _matches(pattern: str, name: str) -> bool:
    if pattern.startswith("|1|"):
        try:
            _, _, salt, digest = pattern.split("|")
            key, expected = base64.b64decode(salt), base64.b64decode(digest)
        except (ValueError, TypeError):
            return False
        computed = hmac.new(key, name.encode(), hashlib.sha1).digest()
        return hmac.compare_digest(computed, expected)
    return fnmatch.fnmatchcase(name, pattern.lower())


def line_applies(patterns: str, name: str) -> bool:
    """ssh's reading of a known_hosts host field for ``name``: some pattern matches and no
    negated one does."""
    hit = False
    for pattern in patterns.split(","):
        if pattern.startswith("!"):
            if _matches(pattern[1:], name):
                return False
        elif _matches(pattern, name):
            hit = True
    return hit


def allowed_lines(lines: Iterable[str], policy: EffectivePolicy) -> list[str]:
    """The lines of a known_hosts file that apply to a host the policy allows: one that names
    an exact target of the allowlist (hashed or by pattern), or a plain name the allowlist lets
    through on its port (a ``*.example.com:22`` entry)."""
    rules = NetworkRules(domains=policy.domains, local_ports=policy.local_ports)
    names = [ssh_name(host, port) for host, port in targets(policy)]
    kept = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        marker = fields[0] if fields[0].startswith("@") else None
        if marker not in (None, "@cert-authority", "@revoked") or len(fields) < 3 + bool(marker):
            continue
        patterns = fields[1] if marker else fields[0]
        if any(line_applies(patterns, name) for name in names) or any(
            _plain_allowed(pattern, rules) for pattern in patterns.split(",")
        ):
            kept.append(line)
    return kept


def _plain_allowed(pattern: str, rules: NetworkRules) -> bool:
    if pattern.startswith(("!", "|")) or any(c in pattern for c in "*?"):
        return False
    host, port = pattern, 22
    if pattern.startswith("["):
        host, _, rest = pattern[1:].partition("]")
        if not rest.startswith(":") or not rest[1:].isdigit():
            return False
        port = int(rest[1:])
    return rules.match(host, port)[0]


def known_hosts(policy: EffectivePolicy) -> list[str]:
    """The host user's and the system's known_hosts lines for the allowed hosts. Each file is
    one fact of the launch (its contents): a key learnt on the host changes the copy."""
    sources = [os.path.join(policy.home, name) for name in USER_KNOWN_HOSTS]
    sources += SYSTEM_KNOWN_HOSTS
    lines: list[str] = []
    for path in sources:
        observe.content(path)
        data = _read(path)
        if data:
            lines += allowed_lines(data.decode("utf-8", "replace").splitlines(), policy)
    return list(dict.fromkeys(lines))


def _read(path: str) -> bytes:
    """A known_hosts file's bytes (the first MAX_KNOWN_HOSTS; nothing if it is not a regular
    file: a FIFO must not block the launch)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, MAX_KNOWN_HOSTS)
    except OSError:
        return b""
    finally:
        os.close(fd)


def ssh_config(python: str) -> str:
    return (
        "# egg: ssh in this sandbox reaches servers through egg's filtering proxy, which decides\n"
        "# and logs each connection like any request (egg explain); the host keys are the host\n"
        "# user's lines for the hosts egg.yaml allows, read-only.\n"
        "Host *\n"
        f"    ProxyCommand {python} -I -S {ROUTE_INSIDE}/sshconnect.py %h %p\n"
        f"    UserKnownHostsFile {ROUTE_INSIDE}/known_hosts\n"
        f"    GlobalKnownHostsFile {ROUTE_INSIDE}/known_hosts\n"
        "    UpdateHostKeys no\n"
        "    CheckHostIP no\n"
    )


def prepare(egg_home: Path, host_keys: Sequence[str]) -> str:
    """The route's directory (made once per contents, under egg's cache): the config, the
    ProxyCommand and ``host_keys``, the allowed hosts' known_hosts lines (:func:`known_hosts`)."""
    python = observe.realpath(sys.executable)
    observe.content(str(CONNECT))
    files = {
        "ssh_config": ssh_config(python).encode(),
        "sshconnect.py": CONNECT.read_bytes(),
        "known_hosts": "".join(line + "\n" for line in host_keys).encode(),
    }
    digest = hashlib.sha256()
    for name, data in sorted(files.items()):
        digest.update(name.encode() + b"\0" + data + b"\0")
    route = egg_home / "cache" / "ssh-route" / digest.hexdigest()[:20]
    if not route.is_dir():  # not a fact: egg's own, named by what it holds
        staging = route.with_name(f".{route.name}.{os.getpid()}")
        staging.mkdir(parents=True, mode=0o755)
        for name, data in files.items():
            (staging / name).write_bytes(data)
        try:
            os.rename(staging, route)
        except OSError:  # another launch made it first: the same contents
            for name in files:
                (staging / name).unlink()
            staging.rmdir()
    for name in files:  # removed since (a cleaned cache): a cached launch makes it again
        observe.content(str(route / name))
    return str(route)


def mounts_for(route: str) -> Sequence[tuple[str, str]]:
    """(source, destination) of the route's read-only binds: its directory, and its config over
    the system's when the host has one (every ssh reads it; without one, ssh is not there)."""
    binds = [(route, ROUTE_INSIDE)]
    if observe.isfile(SYSTEM_CONFIG):
        binds.append((os.path.join(route, "ssh_config"), SYSTEM_CONFIG))
    return binds
