"""Git configuration a sandbox wrote, kept to what names no program.

A repository the sandbox created (``git init``, a submodule it staged) has a configuration the
sandbox chose, and configuration names commands: ``core.fsmonitor``, ``core.hooksPath``,
``core.sshCommand``, aliases, filters, diff drivers, credential helpers, includes… and whatever a
later git adds. So it is cut down to an allowlist of keys that describe data (:data:`SAFE_KEYS`),
never a denylist. The host's own git parses the file (``git config --file``: includes off,
nothing run), so egg and git cannot disagree on what it says; the original goes to the
quarantine.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from egg_core.quarantine import Quarantine
from egg_core.safeio import read_regular, replace, write_new

MAX_CONFIG_BYTES = 1 << 20


#: configuration keys a repository the sandbox created may keep: (section, has subsection,
#: key), lower case. They describe data (formats, remotes, branches, identity), never a program
#: to run; every other key — core.fsmonitor, core.hooksPath, core.sshCommand, core.pager,
#: alias.*, filter.*, diff.*.textconv, credential.*, include.path, url.*.insteadOf, … and any
#: key a later git adds — is dropped.
SAFE_KEYS = frozenset(
    [
        *(
            ("core", False, key)
            for key in (
                "repositoryformatversion",
                "filemode",
                "bare",
                "logallrefupdates",
                "ignorecase",
                "precomposeunicode",
                "symlinks",
                "autocrlf",
                "eol",
                "safecrlf",
                "quotepath",
                "checkstat",
                "trustctime",
                "sparsecheckout",
                "sparsecheckoutcone",
                "worktree",
                "untrackedcache",
                "splitindex",
                "commitgraph",
                "multipackindex",
                "abbrev",
                "compression",
                "loosecompression",
                "bigfilethreshold",
            )
        ),
        *(
            ("extensions", False, key)
            for key in (
                "objectformat",
                "refstorage",
                "worktreeconfig",
                "preciousobjects",
                "partialclone",
                "noop",
            )
        ),
        *(
            ("remote", True, key)
            for key in (
                "url",
                "pushurl",
                "fetch",
                "push",
                "tagopt",
                "mirror",
                "prune",
                "promisor",
                "partialclonefilter",
                "skipdefaultupdate",
                "skipfetchall",
            )
        ),
        *(
            ("branch", True, key)
            for key in ("remote", "merge", "rebase", "pushremote", "description")
        ),
        *(
            ("submodule", True, key)
            for key in ("url", "active", "branch", "ignore", "fetchrecursesubmodules", "shallow")
        ),
        ("submodule", False, "active"),
        ("user", False, "name"),
        ("user", False, "email"),
        ("init", False, "defaultbranch"),
        ("pull", False, "rebase"),
        ("pull", False, "ff"),
        ("push", False, "default"),
        ("push", False, "autosetupremote"),
        ("fetch", False, "prune"),
        ("gc", False, "auto"),
        ("lfs", False, "repositoryformatversion"),
        ("merge", False, "conflictstyle"),
        ("rerere", False, "enabled"),
        ("color", False, "ui"),
    ]
)


def scrub_config(path: str, quarantine: Quarantine, git: str | None) -> list[str]:
    """Keep only :data:`SAFE_KEYS` in the configuration file at ``path``; the original goes to
    the quarantine. Parsed by the host's git itself (``git config --file``: includes off,
    nothing run), so egg and git cannot disagree on what the file says."""
    if os.path.islink(path) or not os.path.isfile(path):
        return [quarantine.take(path, "not a regular configuration file")]
    entries = read_config(path, git)
    if entries is None:
        return [quarantine.take(path, "a configuration git could not be asked to read")]
    kept = [(key, value) for key, value in entries if safe_key(key)]
    if len(kept) == len(entries):
        return []
    dropped = sorted({key for key, _ in entries if not safe_key(key)})
    target = quarantine.destination(path)
    try:
        original = read_regular(path, MAX_CONFIG_BYTES)
        write_new(str(target), original, 0o600)
        replace(path, render_config(kept))
    except OSError as exc:
        return [quarantine.failure(f"git: could not rewrite {path}: {exc.strerror}")]
    return [
        f"git: dropped {', '.join(dropped)} from {path}: written in the sandbox, it could run "
        f"commands on the host (the original is in {target})"
    ]


def read_config(path: str, git: str | None) -> list[tuple[str, str | None]] | None:
    if git is None:
        return None
    env = {
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": "/nonexistent",
        # no repository is discovered, wherever git starts: only the file named is read
        "GIT_DIR": "/nonexistent",
    }
    try:
        proc = subprocess.run(
            [git, "config", "--no-includes", "--file", path, "--list", "-z"],
            env=env,
            cwd="/",
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    entries: list[tuple[str, str | None]] = []
    for item in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        key, newline, value = item.partition("\n")
        entries.append((key, value if newline else None))
    return entries


def split_key(key: str) -> tuple[str, str | None, str]:
    """``remote.origin.url`` -> (``remote``, ``origin``, ``url``); the subsection may hold dots."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    return section.lower(), (subsection or None), name.lower()


def safe_key(key: str) -> bool:
    section, subsection, name = split_key(key)
    return (section, subsection is not None, name) in SAFE_KEYS


def render_config(entries: Sequence[tuple[str, str | None]]) -> bytes:
    """Write ``entries`` back in git's syntax, every value quoted and escaped."""
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in entries:
        section, subsection, name = split_key(key)
        if (section, subsection) != current:
            current = (section, subsection)
            if subsection is None:
                lines.append(f"[{section}]")
            else:
                escaped = subsection.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'[{section} "{escaped}"]')
        if value is None:
            lines.append(f"\t{name}")
        elif value and value == value.strip() and not any(c in value for c in '#;"\\\n\t\b'):
            lines.append(f"\t{name} = {value}")
        else:
            text = (
                value.replace("\\", "\\\\")
                .replace('"', '\\"')
                .replace("\n", "\\n")
                .replace("\t", "\\t")
                .replace("\b", "\\b")
            )
            lines.append(f'\t{name} = "{text}"')
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") if lines else b""
