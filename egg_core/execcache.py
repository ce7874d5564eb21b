"""``egg exec``'s fast path: a validated cache of fully prepared launches.

Resolving a policy costs imports (attrs, pluggy, PyYAML) and work that dwarf bubblewrap's own start
(about 5 ms). Most ``egg exec`` calls repeat an earlier one exactly — same arguments, directory,
environment, configs, installation and filesystem — so the full path stores what it prepared, and
the next identical call runs it directly.

Correctness rests on two things:
- the **key**: a hash of egg's version, the interpreter, the arguments, the directory, the user and
  groups, every environment variable (names and values; only the hash is stored), and the
  ``sys.path`` directories' modification times (installing anything changes them);
- the **facts**: every filesystem observation the full path's decision depended on — config files'
  contents, egg's and the plugins' module files, what each path in the policy resolves to (the
  identity of the path and of each of its ancestors), the contents of directories that were
  scanned (for sockets, for prefix siblings), the kernel's table of bound unix sockets, the
  binaries found on PATH and the directories searched before them. All are re-checked before a
  cached launch runs; any difference falls back to the full path, which stores a fresh entry.

Only launches with no helpers are cached (no network proxy, no cgroups): the cached recipe is an
argv, an environment recipe (names to copy from the current environment, and constant defaults —
never a copied value), files to open, and placeholders to remove afterwards. The cache lives in
``$EGG_HOME/cache/exec``, which no sandbox can see. ``EGG_EXEC_CACHE=0`` turns it off;
``EGG_EXEC_CACHE=debug`` says why a call missed.

This module imports only C-level standard modules: it runs before anything else is loaded.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds that this module exists to save
    from collections.abc import Iterable, Mapping
    from typing import Any

    Fact = tuple[Any, ...]

FORMAT = 8  # 7: entries carry the persistence guards (git state, settings, write window)
# 8: and the settings files' command-defining keys
CACHE_ENV = "EGG_EXEC_CACHE"
KEEP = 64
#: cached launches are run only by egg's own platform code
RUNNER_PREFIX = "egg_plugins.platforms."


def _sha256_hex(data: bytes) -> str:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - other Python builds
        from hashlib import sha256
    return str(sha256(data).hexdigest())


def cache_dir(environ: Mapping[str, str]) -> str:
    from egg_core.rundirs import egg_home_of

    return os.path.join(egg_home_of(environ), "cache", "exec")


def cache_key(args: list[str], environ: Mapping[str, str], cwd: str) -> str:
    from egg_core import __version__

    installed = []
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
        except OSError:
            continue
        installed.append((entry, st.st_mtime_ns, st.st_ino))
    material = (
        FORMAT,
        __version__,
        sys.executable,
        list(args),
        cwd,
        os.getuid(),
        os.getgid(),
        sorted(os.getgroups()),
        sorted(environ.items()),
        installed,
    )
    return _sha256_hex(marshal.dumps(repr(material)))


# --- facts -------------------------------------------------------------------------------------


def identity(path: str) -> tuple[int, ...] | None:
    """What a path *is*: device, inode, type and permissions, owner (not its contents)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)


def contents(path: str) -> tuple[int, ...] | None:
    """What a file *holds*, as far as the cache is concerned: inode, size and change time (the
    ctime, which unlike the mtime no process can set back)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)


def _entry_kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "l"
    if entry.is_dir(follow_symlinks=False):
        return "d"
    return "f" if entry.is_file(follow_symlinks=False) else "o"  # o: socket, fifo, device


def listing(path: str) -> tuple[int, str] | None:
    """A directory's entries: its change time and a digest of the sorted (name, type) pairs."""
    try:
        ctime = os.lstat(path).st_ctime_ns
        with os.scandir(path) as it:
            names = sorted(f"{e.name}\0{_entry_kind(e)}" for e in it)
    except OSError:
        return None
    return ctime, _sha256_hex("\0\0".join(names).encode(errors="surrogateescape"))


def listing_matches(path: str, expected: Any) -> bool:
    """Same entries as recorded. An unchanged change time settles it without listing; a changed
    one (egg's own placeholder files come and go) is settled by the names and types."""
    if expected is None:
        return listing(path) is None
    try:
        if os.lstat(path).st_ctime_ns == expected[0]:
            return True
    except OSError:
        return False
    now = listing(path)
    return now is not None and now[1] == expected[1]


def path_facts(paths: Iterable[str]) -> list[Fact]:
    """Identity facts for each path and every ancestor (symlinks, existence, type, owner)."""
    seen: set[str] = set()
    facts: list[Fact] = []
    for path in paths:
        current = os.path.normpath(path)
        while current not in seen:
            seen.add(current)
            facts.append(("i", current, identity(current)))
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return facts


def content_facts(paths: Iterable[str]) -> list[Fact]:
    return [("c", path, contents(path)) for path in dict.fromkeys(paths)]


def listing_facts(paths: Iterable[str]) -> list[Fact]:
    return [("l", path, listing(path)) for path in dict.fromkeys(paths)]


def bound_sockets_fact(arguments: tuple[Any, ...], found: tuple[str, ...] | None) -> Fact:
    """What ``unix_sockets.visible_sockets(*arguments)`` returned for a launch: a socket bound
    since (however deep), or moved, may need a mask the cached launch does not have."""
    return ("u", arguments, found)


def seed_facts(seeds: Iterable[tuple[str, str]]) -> list[Fact]:
    """A placeholder's path: missing, or holding exactly its seed (see :mod:`egg_core.seeds`)."""
    return [("s", path, seed) for path, seed in seeds]


def which_facts(name: str, search_path: str) -> list[Fact]:
    """What finding ``name`` on ``search_path`` depended on: each candidate until the hit."""
    if "/" in name:
        return content_facts([name]) + path_facts([name])
    facts: list[Fact] = []
    for directory in search_path.split(os.pathsep):
        if not os.path.isabs(directory):
            continue  # egg never runs its own programs from relative PATH entries
        candidate = os.path.join(directory, name)
        facts.append(("i", candidate, identity(candidate)))
        if facts[-1][2] is not None and os.access(candidate, os.X_OK):
            facts += content_facts([candidate]) + path_facts([os.path.realpath(candidate)])
            break
    return facts


def stale_fact(facts: Iterable[Fact]) -> Fact | None:
    """The first fact that no longer holds, or None when all do."""
    for fact in facts:
        kind, path, expected = fact
        if kind == "l":
            if not listing_matches(path, expected):
                return fact
        elif kind == "u":
            from egg_core import unix_sockets

            if unix_sockets.visible_sockets(*path) != expected:
                return fact
        elif kind == "s":
            from egg_core.seeds import absent_or_seed

            if not absent_or_seed(path, expected):
                return fact
        elif (identity if kind == "i" else contents)(path) != expected:
            return fact
    return None


# --- the cache ---------------------------------------------------------------------------------


def entry_path(environ: Mapping[str, str], key: str) -> str:
    return os.path.join(cache_dir(environ), key)


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else: an entry is a program egg will run."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def load(path: str) -> dict[str, Any] | None:
    """The entry at ``path``, if it and every directory up to ``$EGG_HOME`` are this user's own
    and nobody else's to write (another user's ``EGG_HOME`` could otherwise hand us a recipe)."""
    directory = os.path.dirname(path)
    for level in (
        directory,
        os.path.dirname(directory),
        os.path.dirname(os.path.dirname(directory)),
    ):
        try:
            if not _private(os.lstat(level)):
                return None
        except OSError:
            return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not _private(os.fstat(fd)):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            entry = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        os.close(fd)
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if not str(entry.get("runner", "")).startswith(RUNNER_PREFIX):
        return None
    return entry


def store(environ: Mapping[str, str], key: str, entry: dict[str, Any]) -> None:
    directory = cache_dir(environ)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        tmp = os.path.join(directory, f".{key}.{os.getpid()}")
        with open(tmp, "wb") as handle:
            marshal.dump({**entry, "format": FORMAT}, handle)
        os.replace(tmp, os.path.join(directory, key))
        _prune(directory)
    except (OSError, ValueError):
        pass  # an unwritable cache only costs speed


def _prune(directory: str) -> None:
    entries = []
    with os.scandir(directory) as it:
        for item in it:
            if not item.name.startswith("."):
                entries.append((item.stat().st_mtime_ns, item.path))
    for _, path in sorted(entries)[:-KEEP]:
        try:
            os.unlink(path)
        except OSError:
            pass


def live_sessions_need_recovery(environ: Mapping[str, str]) -> bool:
    """A session whose daemon died, or an ``egg exec`` that was killed, is recovered by the
    full path (which says so)."""
    from egg_core import rundirs

    home = rundirs.egg_home_of(environ)
    if rundirs.orphans(home):
        return True
    live = os.path.join(home, "sessions", ".live")
    try:
        names = os.listdir(live)
    except OSError:
        return False
    for name in names:
        try:
            with open(os.path.join(live, name)) as handle:
                pid = int(handle.read().strip() or 0)
            # the daemon of this very session (as the full path checks it): a dead daemon's
            # pid may be a zombie, or already another process's
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except (OSError, ValueError):
            return True
        if os.path.join(home, "sessions", name).encode() not in cmdline:
            return True
    return False


def lookup(args: list[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The valid cache entry for ``egg ARGS`` here and now, or None (a miss: run the full path).

    Anything unexpected is a miss, never an error: the full path decides and reports.
    """
    setting = environ.get(CACHE_ENV)
    if setting == "0":
        return None
    why = None
    try:
        entry = load(entry_path(environ, cache_key(args, environ, os.getcwd())))
        if entry is None:
            why = "no entry for these arguments, directory and environment"
        elif (fact := stale_fact(entry["facts"])) is not None:
            why = f"changed since it was cached: {fact[1]}"
        elif live_sessions_need_recovery(environ):
            why = "a crashed session needs recovery"
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
    if setting == "debug":
        print(f"egg: exec cache {'miss: ' + why if why else 'hit'}", file=sys.stderr)
    return entry if why is None else None


def try_run(args: list[str], environ: Mapping[str, str]) -> int | None:
    """Run ``egg ARGS`` (an ``egg exec``) from the cache; None on a miss, before anything ran,
    or when the cached launch's set-up failed as the host changed under it (the full path then
    prepares it afresh; nothing of the command ran)."""
    entry = lookup(args, environ)
    if entry is None:
        return None
    module_name, _, function = str(entry["runner"]).partition(":")
    import importlib

    runner = getattr(importlib.import_module(module_name), function)
    env = {name: environ[name] for name in entry["env_copy"] if name in environ}
    env.update(entry["env_set"])
    from egg_core import rundirs, windows

    home = rundirs.egg_home_of(environ)
    run_dir, entry = _prepare_run(entry, home)
    window = windows.open_window(home, *entry["window"])
    try:
        code = runner(entry, env)
        return None if code is None else int(code)
    finally:
        windows.close_window(home, window)
        git = entry.get("git")
        watch = [path for path in entry.get("code_watch", ()) if os.path.lexists(path)]
        if watch or (git and stale_fact(git["watch"]) is not None):
            _audit(git, watch, home)
        if run_dir is not None:
            rundirs.finish(run_dir, home)


def _prepare_run(entry: dict[str, Any], egg_home: str) -> tuple[str | None, dict[str, Any]]:
    """The launch directory for this run, when it needs one: the agent's settings copied into
    it before the run (threat H: what the sandbox writes there must not run on the host
    later), and the agent's home files staged in a fresh home layer (egg_core.homefiles),
    whose path replaces the cached one in the command line. (None, entry) when neither."""
    files = entry.get("settings")
    home_files = entry.get("home_files")
    if not files and not home_files:
        return None, entry
    from egg_core import rundirs, snapshot

    run_dir = rundirs.create(egg_home)
    staged: dict[str, str] = {}
    if home_files:
        from egg_core import homefiles

        layer = os.path.join(run_dir, homefiles.LAYER)
        staged = homefiles.stage(layer, list(home_files))
        old = entry["home_layer"]
        entry = {**entry, "argv": [layer if arg == old else arg for arg in entry["argv"]]}
    snapshot.take(
        os.path.join(run_dir, "settings"), files or [], entry.get("settings_keys"), staged
    )
    return run_dir, entry


def _audit(git: dict[str, Any] | None, watch: list[str], egg_home: str) -> None:
    """A repository or an agent code directory may have appeared during the run: the full audit
    (rarely needed, so its imports are paid only then; see :func:`egg_core.launch.after_run`)."""
    from egg_core.launch import after_run

    for line in after_run(git, watch, egg_home):
        print(f"egg: {line}", file=sys.stderr)
