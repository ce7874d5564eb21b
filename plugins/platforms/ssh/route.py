"""The ssh route of a filtered sandbox, and the host keys of the allowed hosts.

ssh ignores ``HTTPS_PROXY``, and a filtered sandbox has no resolver (linux-ns) or no network
but the proxy's port (macos-seatbelt), so without this ``ssh`` and ``git`` over SSH fail. ssh
takes ``~`` from the passwd entry, not ``$HOME``, and the user's ``~/.ssh`` stays denied, so the
route cannot live in a user config: egg writes a client config of its own that sends every
connection through :mod:`.connect` — a CONNECT to the filtering proxy, decided and logged like
any request — and points ssh at a known_hosts file holding only the host user's lines for the
hosts the policy allows (hashed lines, ``@cert-authority`` and ``@revoked`` lines and wildcard
patterns matched as ssh matches them). The platform puts the config where its ssh reads it.
The user's files are never visible, and nothing the sandbox does reaches them: the copy is
read-only, and the route's directory is egg's (under ``$EGG_HOME``, which the sandbox cannot
see but this directory), named by its contents so that every run with the same policy and host
keys uses the same one.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from egg_core.api import EffectivePolicy
from egg_core.api.platform import NetworkRules, observe, split_network_entry

CONNECT = Path(__file__).with_name("connect.py")
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


def ssh_config(python: str, where: str) -> str:
    """The client config, for the route's directory at ``where`` as the sandbox sees it (a
    path with spaces or ``%`` in it is quoted for ssh's reader and its shell)."""
    connect = _ssh_word(f"{shlex.quote(python)} -I -S {shlex.quote(where + '/connect.py')}")
    quoted = f"{where}/known_hosts".replace("\\", "\\\\").replace('"', '\\"')
    keys = '"' + _ssh_word(quoted) + '"'
    return (
        "# egg: ssh in this sandbox reaches servers through egg's filtering proxy, which decides\n"
        "# and logs each connection like any request (egg explain); the host keys are the host\n"
        "# user's lines for the hosts egg.yaml allows, read-only.\n"
        "Host *\n"
        f"    ProxyCommand {connect} %h %p\n"
        f"    UserKnownHostsFile {keys}\n"
        f"    GlobalKnownHostsFile {keys}\n"
        "    UpdateHostKeys no\n"
        "    CheckHostIP no\n"
    )


def _ssh_word(text: str) -> str:
    """``text`` with ssh's ``%`` tokens escaped (ssh expands them in these options)."""
    return text.replace("%", "%%")


#: the clients a route on PATH wraps, and how each is told which ssh to run
WRAPPED = {"ssh": "-F {config}", "scp": "-S {ssh}", "sftp": "-S {ssh}"}


def wrappers(where: str, search_path: str | None) -> dict[str, bytes]:
    """``bin/ssh``, ``bin/scp``, ``bin/sftp`` of a route found on ``PATH`` (a platform with no
    system config to put egg's in): each runs the host's client (the first on ``search_path``)
    with egg's config, scp and sftp through egg's ssh. A client the host lacks gets none."""
    found: dict[str, bytes] = {}
    for name, option in WRAPPED.items():
        program = shutil.which(name, path=search_path)
        if program is None:
            continue
        program = observe.realpath(program)
        given = option.format(
            config=shlex.quote(f"{where}/ssh_config"), ssh=shlex.quote(f"{where}/bin/ssh")
        )
        found[f"bin/{name}"] = f'#!/bin/sh\nexec {shlex.quote(program)} {given} "$@"\n'.encode()
    return found


def plan(
    egg_home: Path,
    host_keys: Sequence[str],
    inside: str | None = None,
    search_path: str | None = None,
) -> tuple[Path, dict[str, bytes]]:
    """The route's directory and what it holds: the config, the ProxyCommand and
    ``host_keys``, the allowed hosts' known_hosts lines (:func:`known_hosts`).

    ``inside``: where the sandbox sees the directory (linux-ns binds it there); None when it
    sees it where it is (macos-seatbelt), which then also holds the :func:`wrappers` of the
    clients on ``search_path`` (the sandbox's ``PATH``)."""
    python = observe.realpath(sys.executable)
    observe.content(str(CONNECT))
    files = {
        "connect.py": CONNECT.read_bytes(),
        "known_hosts": "".join(line + "\n" for line in host_keys).encode(),
    }
    # a route seen where it is names its own directory: named by what it holds with a
    # stand-in for that name, which is then filled in
    where = inside if inside is not None else _HERE
    files["ssh_config"] = ssh_config(python, where).encode()
    if inside is None:
        files.update(wrappers(where, search_path))
    digest = hashlib.sha256(f"{inside}\0".encode())
    for name, data in sorted(files.items()):
        digest.update(name.encode() + b"\0" + data + b"\0")
    route = egg_home / "cache" / "ssh-route" / digest.hexdigest()[:20]
    if inside is None:
        here = str(route).encode()
        for name in ("ssh_config", *(n for n in files if n.startswith("bin/"))):
            files[name] = files[name].replace(_HERE.encode(), here)
    return route, files


#: the stand-in for a route's own directory while its name is computed
_HERE = "\0egg-ssh-route\0"


def prepare(
    egg_home: Path,
    host_keys: Sequence[str],
    inside: str | None = None,
    search_path: str | None = None,
) -> str:
    """The route's directory (:func:`plan`), made once per contents under egg's cache."""
    route, files = plan(egg_home, host_keys, inside, search_path)
    if not route.is_dir():  # not a fact: egg's own, named by what it holds
        _make(route, files)
    for name in files:  # removed since (a cleaned cache): a cached launch makes it again
        observe.content(str(route / name))
    return str(route)


def _make(route: Path, files: dict[str, bytes]) -> None:
    staging = route.with_name(f".{route.name}.{os.getpid()}")
    (staging / "bin").mkdir(parents=True, mode=0o755)
    for name, data in files.items():
        (staging / name).write_bytes(data)
        if name.startswith("bin/"):
            (staging / name).chmod(0o755)
    try:
        os.rename(staging, route)
    except OSError:  # another launch made it first: the same contents
        shutil.rmtree(staging, ignore_errors=True)


def explain(host_keys: Sequence[str], agent_keys: int | None, config_at: str, keys_at: str) -> str:
    """The ``ssh`` section of ``egg explain``'s platform detail: the route, the host keys and
    the agent (``agent_keys`` host keys and authorities it may sign for; None: no agent)."""
    lines = [
        "hole: ssh goes through egg's filtering proxy (ssh ignores HTTPS_PROXY and "
        f"the sandbox has no other way out): {config_at} sets a ProxyCommand, so an allowed "
        "HOST:PORT reaches its server, decided and logged like any request, and any other is "
        "refused naming the egg.yaml entry that would allow it",
        f"hole: host keys: {len(host_keys)} line(s) of the known_hosts files for the "
        f"allowed hosts, read-only at {keys_at} (the rest of ~/.ssh stays denied)",
    ]
    if agent_keys is None:
        lines.append(
            "no ssh agent inside: the host's agent socket stays unreachable (list "
            "SSH_AUTH_SOCK in env: for a filtered one)"
        )
    else:
        lines.append(
            "hole: SSH_AUTH_SOCK is egg's filtered ssh agent, not the host's: it lists your "
            "keys and signs only logins to a server whose host key is one of the "
            f"{agent_keys} known for the allowed hosts, or a host certificate one of their "
            "certificate authorities signed for it (OpenSSH's session binding, checked); "
            "adding, removing, locking and any other request are refused, each logged in "
            "network.log"
        )
    return "\n".join(lines)
