"""``egg exec``'s fast path: a validated cache of fully prepared launches.

Resolving a policy costs imports (attrs, pluggy, PyYAML) and work that dwarf bubblewrap's own start
(about 5 ms). Most ``egg exec`` calls repeat an earlier one exactly — same arguments, directory,
environment, configs, installation and filesystem — so the full path stores what it prepared, and
the next identical call runs it directly.

Correctness rests on two things:
- the **key**: a hash of egg's version, the interpreter, the arguments, the directory, the user and
  groups, the ``sys.path`` directories' modification times (installing anything changes them), and
  the environment variables the full path *read* (names and values; only hashes are stored). Which
  variables those are is learnt when an entry is stored: an index beside it, named by the rest of
  the key, lists them, so ``SHLVL`` or ``_`` changing costs nothing unless the decision read it;
- the **facts**: every host observation the full path's decision rested on, recorded as it was
  made (:mod:`egg_core.observe`): what each path it resolved is, what each file it read holds,
  the entries of each directory it listed, the programs it found on PATH, placeholders, and the
  platform's own kinds (the Linux kernel's table of bound unix sockets). All are re-checked before
  a cached launch runs; any difference falls back to the full path, which stores a fresh entry.

Launches with a tool server are not cached: the cached recipe is an argv, an environment recipe
(names to copy from the current environment, and constant defaults — never a copied value),
files to open, placeholders to remove afterwards, the limits whose cgroups the platform's runner
makes afresh for each run (and watches: the CPU budget), and for an allowlisted network the
proxy's rules (its runner serves them from a child process: :mod:`egg_core.netchild`). The cache
lives in ``$EGG_HOME/cache/exec``, which no sandbox can see. ``EGG_EXEC_CACHE=0`` turns it off;
``EGG_EXEC_CACHE=debug`` says why a call missed.

A hit is run by :mod:`egg_core.cachedrun`: a platform's runner may start its sandbox before the
last checks, and let the command start once they passed (the recipe's ``admits``: see
``Prepared.recipe``); linux-ns's does, the socket gate holding the command at bwrap's last step
until egg lets it go.

This module imports only C-level standard modules: it runs before anything else is loaded.
"""

from __future__ import annotations

import marshal
import os
import sys

from egg_core.facts import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds that this module exists to save
    from collections.abc import Iterable, Mapping
    from typing import Any

    Fact = tuple[Any, ...]

FORMAT = 15  # 7: entries carry the persistence guards (git state, settings, write window)
# 8: and the settings files' command-defining keys; 9: recorded facts, keyed on variables read;
# 10: linux-ns entries name their bwrap (binds are pinned from its options on); 11: an entry's
# runner and its platform's fact checkers are admitted by the file they were recorded from;
# 12: linux-ns entries say whether bwrap leads a process group of its own; 13: the facts the
# spawn rests on apart from the rest (split_facts); 14: linux-ns's bridge runs compiled;
# 15: the contents of files the spawn does not read are checked while bwrap sets up
CACHE_ENV = "EGG_EXEC_CACHE"
KEEP = 64


def cache_dir(environ: Mapping[str, str]) -> str:
    from egg_core.rundirs import egg_home_of

    return os.path.join(egg_home_of(environ), "cache", "exec")


def base_key(args: list[str], cwd: str) -> str:
    """The key without the environment: names the index of the variables to add to it."""
    from egg_core import __version__

    material = (
        FORMAT,
        __version__,
        sys.executable,
        list(args),
        cwd,
        os.getuid(),
        os.getgid(),
        sorted(os.getgroups()),
        installed(),
    )
    return sha256_hex(marshal.dumps(repr(material)))


_installed: list[tuple[str, int, int]] | None = None


def installed() -> list[tuple[str, int, int]]:
    """What is installed where this interpreter imports from: each ``sys.path`` directory with
    its modification time and inode (installing anything changes them), looked at once."""
    global _installed
    if _installed is None:
        found = []
        for entry in sys.path:
            try:
                st = os.stat(entry or ".")
            except OSError:
                continue
            found.append((entry, st.st_mtime_ns, st.st_ino))
        _installed = found
    return list(_installed)


def env_digest(environ: Mapping[str, str], names: Iterable[str], listed: bool) -> dict[str, str]:
    """name -> hash of its value (or of its absence); with ``listed``, also the set of names."""
    digest = {
        name: sha256_hex(repr(environ.get(name)).encode(errors="surrogateescape"))
        for name in sorted(names)
    }
    if listed:
        digest["\0names"] = sha256_hex("\0".join(sorted(environ)).encode(errors="surrogateescape"))
    return digest


def full_key(base: str, digest: Mapping[str, str]) -> str:
    return sha256_hex(marshal.dumps(repr((base, sorted(digest.items())))))


# --- facts -------------------------------------------------------------------------------------


def facts_hold(entry: Mapping[str, Any], part: str = "spawn_facts") -> Fact | None:
    """The first of an entry's facts (of ``part``: see :func:`split_facts`) that no longer
    holds (None: the launch is still valid)."""
    from egg_core.facts import stale_fact

    return stale_fact(entry[part])


def loaded_code_changed(entry: Mapping[str, Any]) -> Fact | None:
    """The first of the entry's later facts (:func:`split_facts`) about the contents of a file
    this process has loaded as code — egg's, the runner's and what it imports — that no longer
    holds: that code acts before the command is admitted, so it is checked now, before any of
    it does (the runner's own file was checked before it was imported)."""
    loaded = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    code = [fact for fact in entry["facts"] if fact[0] == "c" and fact[1] in loaded]
    return facts_hold({"code": code}, "code")


def split_facts(
    facts: Iterable[Fact], argv: Iterable[str], read_first: Iterable[str] = ()
) -> tuple[list[Fact], list[Fact]]:
    """``facts`` as (``spawn_facts``, ``facts``): what must hold before the sandbox is started,
    and what must hold before its command may (checked while bubblewrap sets the sandbox up:
    :func:`admit_run`). Before: every fact about a path of the command line or a directory
    above one (what bubblewrap's set-up acts on: the mounts' sources and destinations, and the
    mount points it makes), every placeholder (egg plants them before the spawn), and the
    contents of the files the command line names and of ``read_first`` (what the runner reads
    or runs before the spawn: its own code, the filters it hands bwrap). After: the rest —
    whether the paths the decision looked at and did not mount exist, directory listings, what
    the other files hold (the configuration, egg's code: of that, what a hit has loaded by its
    spawn is checked before then, :func:`loaded_code_changed`), a platform's own facts."""
    named = set()
    for arg in argv:
        if not arg.startswith("/"):
            continue
        path = os.path.normpath(arg)
        while path not in named:
            named.add(path)
            path = os.path.dirname(path)
    read = set(read_first)
    before: list[Fact] = []
    after: list[Fact] = []
    for fact in facts:
        kind, subject = fact[0], fact[1]
        early = (
            kind == "s"
            or (kind in ("i", "l") and subject in named)
            or (kind == "c" and (subject in named or subject in read))
        )
        (before if early else after).append(fact)
    return before, after


# --- the cache ---------------------------------------------------------------------------------


def private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else: an entry is a program egg will run."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def load_private(path: str, data_format: int = FORMAT) -> Any:
    """The marshalled data at ``path``, if it and every directory up to ``$EGG_HOME`` are this
    user's own and nobody else's to write (another user's ``EGG_HOME`` could otherwise hand us a
    recipe), and it says it is of ``data_format``; None otherwise."""
    directory = os.path.dirname(path)
    # cache/exec and cache are egg's own (never a link); $EGG_HOME may be the user's symlink
    # to their own directory: what it leads to is judged
    for level, look in (
        (directory, os.lstat),
        (os.path.dirname(directory), os.lstat),
        (os.path.dirname(os.path.dirname(directory)), os.stat),
    ):
        try:
            if not private(look(level)):
                return None
        except OSError:
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not private(os.fstat(fd)):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            # read whole, then decoded: marshal.load on a file reads it an object at a time
            # (0.6 ms for an entry, against 0.03 ms)
            data = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("format") != data_format:
        return None
    return data


def load(path: str) -> dict[str, Any] | None:
    """The entry at ``path`` (see :func:`load_private`), if it names its runner and the file
    that runner was recorded from (:func:`runner_of` admits it)."""
    entry = load_private(path)
    if entry is None or not isinstance(entry.get("runner"), str):
        return None
    if not isinstance(entry.get("runner_file"), str):
        return None
    return dict(entry)


def runner_of(entry: Mapping[str, Any]) -> Any:
    """The function that runs ``entry``: the one its platform named when the launch was
    prepared, from the file it was loaded from then (whose contents are one of the entry's
    facts); None when the name now leads elsewhere."""
    from egg_core.facts import code_at

    return code_at(entry["runner"], entry["runner_file"])


def _write(directory: str, name: str, data: dict[str, Any]) -> None:
    write_private(os.path.join(directory, name), {**data, "format": FORMAT})


def write_private(path: str, data: Any) -> None:
    """``data`` marshalled into ``path``, this user's alone (0600, whatever the umask: a file
    another could write is one :func:`load_private` refuses), whole or not at all."""
    tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # (a leftover of an earlier egg with this pid may be another mode)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            marshal.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)


def store(
    environ: Mapping[str, str],
    base: str,
    entry: dict[str, Any],
    env_read: Iterable[str] = (),
    env_listed: bool = False,
) -> str | None:
    """Keep ``entry`` for the arguments behind ``base``, keyed on the values the variables in
    ``env_read`` have in ``environ`` (and the set of names, when ``env_listed``); what went
    wrong if it could not be kept (an unwritable cache only costs speed)."""
    directory = cache_dir(environ)
    digest = env_digest(environ, env_read, env_listed)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        # the index first: an entry no index leads to is only dead weight
        _write(directory, base + ".env", {"digest": digest, "listed": env_listed})
        _write(directory, full_key(base, digest), entry)
        prune(directory, KEEP, spare=".env")  # (an index: its entries go, it stays)
    except (OSError, ValueError) as exc:
        return f"cannot write {directory}: {getattr(exc, 'strerror', None) or exc}"
    return None


def prune(directory: str, keep: int, spare: str = "") -> None:
    """Keep the ``keep`` newest files of a cache ``directory`` (those it is writing, named with
    a leading dot, and those named ending in ``spare`` aside)."""
    entries = []
    with os.scandir(directory) as it:
        for item in it:
            if item.name.startswith(".") or (spare and item.name.endswith(spare)):
                continue
            entries.append((item.stat(follow_symlinks=False).st_mtime_ns, item.path))
    for _, path in sorted(entries)[:-keep]:
        try:
            os.unlink(path)
        except OSError:
            pass


def lookup(args: list[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The valid cache entry for ``egg ARGS`` here and now, or None (a miss: run the full path).

    Anything unexpected is a miss, never an error: the full path decides and reports.
    """
    setting = environ.get(CACHE_ENV)
    if setting == "0":
        return None
    why = None
    entry = None
    try:
        directory = cache_dir(environ)
        base = base_key(args, os.getcwd())
        index = load_private(os.path.join(directory, base + ".env"))
        if index is None:
            why = "no entry for these arguments and directory"
        else:
            digest = env_digest(
                environ, [n for n in index["digest"] if n != "\0names"], bool(index["listed"])
            )
            entry = load(os.path.join(directory, full_key(base, digest)))
            if entry is None:
                changed = sorted(n for n, v in index["digest"].items() if digest.get(n) != v)
                names = ", ".join("the set of variables" if n == "\0names" else n for n in changed)
                why = f"the environment it read changed: {names or '?'}"
            elif (fact := facts_hold(entry)) is not None:
                why = f"changed since it was cached: {kind_name(fact[0])} {fact[1]}"
            elif runner_of(entry) is None:
                why = f"its runner {entry['runner']} is not the code it was cached with"
            elif (fact := loaded_code_changed(entry)) is not None:
                why = f"changed since it was cached: {kind_name(fact[0])} {fact[1]}"
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
    if why is not None:
        say_miss(environ, why)
    return entry if why is None else None


def say_miss(environ: Mapping[str, str], why: str) -> None:
    """``EGG_EXEC_CACHE=debug``: why this call was not a hit."""
    if environ.get(CACHE_ENV) == "debug":  # the reason names paths and variables: sanitized
        from egg_core.sanitize import visible

        print(visible(f"egg: exec cache miss: {why}"), file=sys.stderr)


def kind_name(kind: str) -> str:
    from egg_core.facts import KIND_NAMES

    return KIND_NAMES.get(kind, kind)
