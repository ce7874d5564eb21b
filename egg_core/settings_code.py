"""Threat H: what an agent's settings can execute is protected like the settings themselves.

A settings file is restored after every run (:mod:`egg_core.snapshot`), but the code it points
at lives beside it in the agent's writable directory — a hook script under ``~/.claude/``, a
Gemini extension's MCP server, a Claude Code plugin — and the next run of the agent on the host,
without egg, executes whatever is there. Two protections, both read-only mounts for the length of
the run (so nothing is ever changed, rather than changed and put back):

- **the agent's code directories** (:attr:`egg_core.profiles.AgentProfile.code_dirs` in the home,
  ``project_code_dirs`` in the workspace): where the agent installs code it runs on its own, or
  finds commands, skills, subagents, command rules and policies it obeys (threat R) —
  ``~/.claude/plugins``, ``~/.claude/skills``, ``~/.codex/rules``, ``~/.gemini/policies``,
  ``~/.config/opencode/tool``, ``./.gemini/extensions``, ``./.claude/commands``. A missing one is
  held by an empty directory, so the sandbox cannot create it either; one whose parent is
  missing too (no ``./.gemini`` yet) cannot be held, so it is looked for after the run and, if
  the sandbox made it, moved to ``$EGG_HOME/quarantine`` (:func:`take_new_code_dirs`);
- **every file the settings name**: the settings files are read (JSON, TOML, whatever the agent
  uses: any path-like word counts, which over-protects rather than misses) and each existing
  regular file the sandbox could write that they name — with ``~``, ``$HOME`` or
  ``$CLAUDE_PROJECT_DIR`` expanded — is read-only, and so is its directory when that is not one
  of the roots the agent must write in (a hook script's helpers usually sit beside it). A named
  symlink cannot be mounted over: it is added to the settings snapshot, so its old target comes
  back after the run.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from egg_core import observe
from egg_core.policy import SEED_DIRECTORY, EffectivePolicy, FsEntry
from egg_core.profiles import AgentProfile
from egg_core.quarantine import Quarantine
from egg_core.safeio import read_text

#: a settings file bigger than this is not read for paths (none of the agents' are)
MAX_SETTINGS_BYTES = 1 << 20
#: how many named files one launch protects at most
MAX_NAMED = 256
_PATH = re.compile(
    r"""(?:^|(?<=[\s"'=:,(\[]))"""
    r"""((?:~|\$\{?HOME\}?|\$\{?CLAUDE_PROJECT_DIR\}?|\.{1,2})?/[^\s"'`;|&<>(){}\[\],\\]+)"""
)


def code_dir_entries(
    profile: AgentProfile, policy: EffectivePolicy, writable: Callable[[str], bool]
) -> tuple[list[FsEntry], list[str]]:
    """The agent's code directories that the sandbox could write: read-only, seeded if missing;
    and those that cannot be held because their parent is missing too (to check afterwards)."""
    entries = []
    watch = []
    wanted = [(p, g.reason) for g in profile.code_dirs if (p := policy.home_path(g.value))]
    wanted += [(os.path.join(policy.cwd, g.value), g.reason) for g in profile.project_code_dirs]
    for path, reason in wanted:
        source = f"egg: {profile.name}: {reason}"
        # by the rules, not by what exists: on a first run the agent's own directory
        # (~/.config/opencode) is made only after planning, and is writable all the same
        if not writable(path):
            continue
        if observe.lexists(path):
            entries.append(FsEntry("deny-write", path, source))
            continue
        parent = _nearest_existing(path)
        if parent == os.path.dirname(path):
            entries.append(FsEntry("deny-write", path, source, seed=SEED_DIRECTORY))
        else:
            watch.append(path)
    return entries, watch


def _nearest_existing(path: str) -> str:
    current = os.path.dirname(path)
    while not observe.lexists(current) and current != "/":
        current = os.path.dirname(current)
    return current


def take_new_code_dirs(
    paths: Iterable[str], egg_home: Any, quarantine: Quarantine | None = None
) -> list[str]:
    """After a run: move each code directory in ``paths`` that now exists (the sandbox made
    it) to the quarantine (``quarantine``'s ``failed`` says what could not be moved); one line
    each."""
    quarantine = quarantine or Quarantine(Path(egg_home), "agent code")
    lines = []
    for path in paths:
        # as the quarantine finds it: a symlink the sandbox put on the way is what is there
        found = quarantine.locate(path)
        if found is None:
            continue
        line = quarantine.take(path, "created in the sandbox; the agent would load it")
        moved = quarantine.destination(found)
        if line.startswith(f"{quarantine.label}: removed ") and _nothing_but_directories(moved):
            # Claude's first run makes ~/.claude/plugins/marketplaces and nothing in it:
            # judged where the sandbox cannot reach (the quarantine), nothing to load, nothing
            # to say — and nothing kept
            from egg_core.hostfs import remove_tree

            remove_tree(str(moved))
            continue
        lines.append(line)
    return lines


#: entries an empty tree may have before it is taken for more than a first run's skeleton
EMPTY_TREE_LIMIT = 256


def _nothing_but_directories(root: Path) -> bool:
    """Whether ``root`` is a directory holding only directories (no file, link or anything
    else, at any depth), with at most EMPTY_TREE_LIMIT of them: a tree with nothing an agent
    could load."""
    pending = [str(root)]
    seen = 0
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return False
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > EMPTY_TREE_LIMIT or not entry.is_dir(follow_symlinks=False):
                        return False
                    pending.append(entry.path)
    except OSError:
        return False
    return True


def named_paths(text: str, home: str, cwd: str) -> list[str]:
    """The absolute paths a settings file's text names (``~``, ``$HOME``, ``$CLAUDE_PROJECT_DIR``
    and ``./`` expanded), in order, without duplicates."""
    found = []
    for match in _PATH.finditer(text):
        word = match.group(1)
        for prefix, value in (
            ("~/", home + "/"),
            ("${HOME}/", home + "/"),
            ("$HOME/", home + "/"),
            ("${CLAUDE_PROJECT_DIR}/", cwd + "/"),
            ("$CLAUDE_PROJECT_DIR/", cwd + "/"),
            ("./", cwd + "/"),
            ("../", os.path.dirname(cwd) + "/"),
        ):
            if word.startswith(prefix):
                word = value + word[len(prefix) :]
                break
        if word.startswith("/"):
            found.append(os.path.normpath(word))
    return list(dict.fromkeys(found))


def named_entries(
    profile: AgentProfile,
    settings: Sequence[str],
    home: str,
    cwd: str,
    writable: Callable[[str], bool],
    roots: Iterable[str],
) -> tuple[list[FsEntry], list[str]]:
    """Read-only entries for the regular files the ``settings`` files name (and their
    directories, unless one is in ``roots``: the directories the agent must write in), and the
    named symlinks, which the caller snapshots instead."""
    keep_writable = {os.path.normpath(r) for r in roots} | {home, cwd, "/"}
    settings_set = {os.path.normpath(s) for s in settings}
    entries: dict[str, FsEntry] = {}
    links: list[str] = []
    for source in settings:
        observe.realpath(source)
        observe.content(source)
        text = read_text(source, MAX_SETTINGS_BYTES)
        if text is None:
            continue
        for path in named_paths(text, home, cwd):
            if len(entries) >= MAX_NAMED:
                break
            if path in settings_set:
                continue
            try:
                st = observe.lstat(path)
            except OSError:
                continue
            reason = f"egg: {profile.name}: {os.path.basename(source)} runs it on the host"
            if stat.S_ISLNK(st.st_mode):
                if writable(os.path.dirname(path)):  # the sandbox could point it elsewhere
                    links.append(path)
            elif stat.S_ISREG(st.st_mode) and writable(path):
                entries.setdefault(path, FsEntry("deny-write", path, reason))
                parent = os.path.dirname(path)
                if parent not in keep_writable and writable(parent):
                    entries.setdefault(parent, FsEntry("deny-write", parent, reason))
    return list(entries.values()), list(dict.fromkeys(links))
