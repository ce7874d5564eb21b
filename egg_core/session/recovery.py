"""Runs whose egg died: any egg command puts their agents' settings back and sweeps what their
platforms left (cgroups). Never raises: one broken session must not make every egg command
fail; what it did goes to the guard log (``egg doctor``)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def recover_crashed_sessions(egg_home: Path) -> list[str]:
    """Restore the settings snapshots of sessions whose daemon died without restoring them, and
    of ``egg exec`` runs that were killed. Never raises: one broken session must not make every
    egg command fail."""
    from egg_core import windows

    messages = []
    for recover in (_recover_sessions, _recover_exec_runs):
        try:
            messages += recover(egg_home)
        except Exception as exc:
            messages.append(f"recovering crashed runs failed: {type(exc).__name__}: {exc}")
    windows.close_orphans(str(egg_home))
    return messages


def _recover_exec_runs(egg_home: Path) -> list[str]:
    from egg_core import guardlog, rundirs, snapshot

    messages = []
    for run_dir in rundirs.orphans(str(egg_home)):
        settings = os.path.join(run_dir, "settings")
        if snapshot.pending(settings):
            changed = snapshot.restore(settings)
            guardlog.record(egg_home, snapshot.failures(changed))
            detail = "; ".join(changed) if changed else "nothing had changed"
            messages.append(f"an egg exec was killed; settings restored ({detail})")
        rundirs.remove(run_dir)
    return messages


def _recover_sessions(egg_home: Path) -> list[str]:
    from egg_core import guardlog, hostfs, snapshot
    from egg_core.session.store import (
        SessionPaths,
        clear_live,
        daemon_alive,
        sessions_root,
        update_meta,
    )

    live = sessions_root(egg_home) / ".live"
    try:
        names = sorted(os.listdir(live))
    except OSError:
        return []
    messages = []
    crashed = False
    for name in names:
        paths = SessionPaths(sessions_root(egg_home) / name)
        if daemon_alive(paths):
            continue
        crashed = True
        if paths.directory.is_dir():
            changed = snapshot.restore(str(paths.settings))
            hostfs.remove_tree(str(paths.directory / "home"))  # egg_core.homefiles.LAYER
            guardlog.record(egg_home, snapshot.failures(changed))
            update_meta(paths, state="crashed", ended=time.time())
            paths.sock.unlink(missing_ok=True)
            detail = "; ".join(changed) if changed else "nothing had changed"
            messages.append(f"session {name}: its daemon died; settings restored ({detail})")
        clear_live(paths)
    if crashed:
        _sweep_platforms()
    return messages


def _sweep_platforms() -> None:
    """What the dead daemons' platforms left on the host (cgroups): removed, and logged for
    ``egg doctor`` rather than printed (it is housekeeping, not news)."""
    from egg_core import guardlog, registry
    from egg_core.paths import egg_home
    from egg_core.plugins import get_plugin_manager

    for registered in registry.platforms(get_plugin_manager()).values():
        guardlog.record(egg_home(), registered.obj.sweep())
