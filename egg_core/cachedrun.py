"""Running an ``egg exec`` cache hit (:mod:`egg_core.execcache` finds it valid): the launch
directory, the last checks while the sandbox is set up (the runner's *admission*), the settings
snapshot and the write window around the run, and what is undone after it.

The facts the spawn rests on are checked before the sandbox is started (bubblewrap's set-up acts
on the paths the entry names: :func:`egg_core.execcache.split_facts`). A platform's runner that
``admits`` (its recipe says so: see ``Prepared.recipe``) starts its sandbox then and asks
:class:`Admission` while the sandbox is set up, on the other core, before letting the command
start (linux-ns's socket gate holds the command at bwrap's last step); any other runner is
called once all is checked.

This module imports only C-level standard modules: it runs on the fast path.
"""

from __future__ import annotations

import os
import sys

from egg_core import execcache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


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


def try_run(args: list[str], environ: Mapping[str, str]) -> int | None:
    """Run ``egg ARGS`` (an ``egg exec``) from the cache; None on a miss, before anything ran,
    or when the cached launch's set-up failed as the host changed under it (the full path then
    prepares it afresh; nothing of the command ran).

    The facts the spawn rests on are checked before the sandbox is started (bubblewrap's set-up
    acts on the paths the entry names: :func:`split_facts`). A runner that ``admits`` (the
    recipe says so) starts its sandbox then, and the rest is done while bubblewrap sets it up,
    on the other core, before the command may start (:func:`admit_run`): the other facts,
    whether a crashed session needs recovery first, the settings snapshot, the write window.
    (The launch directory is made first when the command line names it: the home layer, the
    network's sockets.) Any other runner is called once all that is done."""
    entry = execcache.lookup(args, environ)
    if entry is None:
        return None
    runner = execcache.runner_of(entry)
    if runner is None:  # (its file changed since lookup admitted it)
        return None
    env = {name: environ[name] for name in entry["env_copy"] if name in environ}
    env.update(entry["env_set"])
    from egg_core import rundirs

    home = rundirs.egg_home_of(environ)
    run = _Run(home)
    if entry.get("home_files") or entry.get("network"):
        # the home layer's path is in the command line; the network's sockets are made in
        # the launch directory before the spawn
        entry = _prepare_dir(run, entry)
    admission = Admission(run, entry, environ)
    try:
        if entry.get("admits"):  # the runner asks once its sandbox is being set up
            code = runner(entry, env, admission)
            if code is not None and not run.admitted and not admission.closed:
                # a runner that let a command start unasked: no snapshot, no window was made
                print(
                    f"egg: error: {entry['runner']} ran the command without egg's admission",
                    file=sys.stderr,
                )
                return 70
        elif admission():  # a runner of the plain contract: asked first
            code = runner(entry, env)
        else:
            return None
        return None if code is None else int(code)
    finally:
        if run.window is not None:
            from egg_core import windows

            windows.close_window(home, run.window)
        if run.admitted:  # what the command did: never audited when it did not run (a stale
            # fact found at admission is the host's change, a user's new directory among them)
            git = entry.get("git")
            watch = [path for path in entry.get("code_watch", ()) if os.path.lexists(path)]
            if watch or (git and _watch_changed(git)):
                _audit(git, watch, home)
        if run.dir is not None:
            rundirs.finish(run.dir, home)


class _Run:
    """What one cached run made, for :func:`try_run` to undo."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.dir: str | None = None
        self.prepared = False
        self.staged: dict[str, str] = {}  # home files: host path -> its copy in the layer
        self.window: str | None = None
        self.admitted = False  # the command may have run (admit_run said yes)


class Admission:
    """What a runner is given to ask whether the cached command may start (see
    :func:`admit_run`), to say that the cached launch failed closed before it could ask (a
    bind's source swapped, the filters refused: ``failed_closed``), and to say why it is a miss
    after all (``miss``)."""

    def __init__(self, run: _Run, entry: dict[str, Any], environ: Mapping[str, str]) -> None:
        self.run, self.entry, self.environ = run, entry, environ
        self.closed = False

    def __call__(self) -> bool:
        return admit_run(self.run, self.entry, self.environ)

    def failed_closed(self) -> None:
        """The launch was the cache's, and nothing of it ran (the runner says why)."""
        self.closed = True
        _say_hit(self.environ)

    def miss(self, why: str) -> None:
        """The cached launch cannot run as it was cached, for a reason only the runner knows
        (``EGG_EXEC_CACHE=debug`` says it): nothing of it ran, and the full path decides."""
        execcache.say_miss(self.environ, why)


def admit_run(run: _Run, entry: dict[str, Any], environ: Mapping[str, str]) -> bool:
    """Whether the cached command may start now, its sandbox set up (a runner calls it then,
    and starts nothing when it says no): not when one of the facts the spawn did not rest on
    has changed (:func:`split_facts`), nor while a crashed session awaits recovery (the full
    path decides again, recovers it, and says so). The settings are snapshotted and the write
    window opened here, before the command can write anything."""
    fact = execcache.facts_hold(entry, "facts")
    if fact is not None:
        execcache.say_miss(
            environ, f"changed since it was cached: {execcache.kind_name(fact[0])} {fact[1]}"
        )
        return False
    if live_sessions_need_recovery(environ):
        execcache.say_miss(environ, "a crashed session needs recovery")
        return False
    try:
        if not run.prepared:
            _prepare_dir(run, entry)
        _take_snapshot(run, entry)
    except OSError as exc:  # the full path meets it too, and says what to do
        execcache.say_miss(environ, f"cannot prepare the run: {exc.strerror or exc}")
        return False
    from egg_core import windows

    run.window = windows.open_window(run.home, *entry["window"])
    run.admitted = True
    _say_hit(environ)
    _collect_again()
    return True


def _collect_again() -> None:
    """Garbage collection, off for the hit's own work (egg_core.cli.main), back on for the
    command's run, however long: what exists now is never collected (frozen: walking it is the
    cost that was saved), what egg makes while it supervises is, as anywhere."""
    import gc

    gc.freeze()
    gc.enable()


def _say_hit(environ: Mapping[str, str]) -> None:
    if environ.get(execcache.CACHE_ENV) == "debug":
        print("egg: exec cache hit", file=sys.stderr)


def _watch_changed(git: dict[str, Any]) -> bool:
    from egg_core.facts import stale_fact

    return stale_fact(git["watch"]) is not None


def _prepare_dir(run: _Run, entry: dict[str, Any]) -> dict[str, Any]:
    """The launch directory for this run (``run.dir``), when it needs one: for the settings
    snapshot (:func:`_take_snapshot`), the agent's home files staged in a fresh home layer
    (egg_core.homefiles), whose path replaces the cached one in the command line, and the
    network's sockets (the runner makes them there: the entry's ``run_dir``). Returns the entry
    for this run."""
    files = entry.get("settings")
    home_files = entry.get("home_files")
    run.prepared = True
    if not files and not home_files and not entry.get("network"):
        return entry
    from egg_core import rundirs

    run.dir = rundirs.create(run.home)
    entry = {**entry, "run_dir": run.dir}
    if home_files:
        from egg_core import homefiles

        layer = os.path.join(run.dir, homefiles.LAYER)
        run.staged = homefiles.stage(layer, list(home_files))
        old = entry["home_layer"]
        # by its real path, as the entry has the cached one: a bind's source is opened with no
        # symlink on the way (egg_plugins.platforms.linux.bindfds), $EGG_HOME may be below one
        layer = os.path.realpath(layer)
        entry = {**entry, "argv": [layer if arg == old else arg for arg in entry["argv"]]}
    return entry


def _take_snapshot(run: _Run, entry: dict[str, Any]) -> None:
    """The agent's settings copied into the launch directory before the command starts
    (threat H: what the sandbox writes there must not run on the host later), with the home
    layer's staged files to write back after it."""
    files = entry.get("settings")
    if run.dir is None or (not files and not run.staged):
        return
    from egg_core import snapshot

    snapshot.take(
        os.path.join(run.dir, "settings"),
        files or [],
        entry.get("settings_keys"),
        run.staged,
        entry.get("settings_reasons"),
    )


def _audit(git: dict[str, Any] | None, watch: list[str], egg_home: str) -> None:
    """A repository or an agent code directory may have appeared during the run: the full audit
    (rarely needed, so its imports are paid only then; see :func:`egg_core.launch.after_run`)."""
    from egg_core.launch import after_run
    from egg_core.sanitize import visible

    for line in after_run(git, watch, egg_home):
        print(f"egg: {visible(line)}", file=sys.stderr)
