"""The agent's own files at the top of $HOME, replaced atomically without a writable $HOME.

Claude Code keeps its state in ``~/.claude.json`` and updates it the safe way: a temporary file
beside it (``~/.claude.json.tmp.<pid>.<hex>``), renamed over it. Both steps need the directory
writable, and a writable $HOME is a persistence hole (``~/.bash_profile``, ``~/.profile``,
``~/.zshenv``, ``~/.npmrc``, ``~/.gitconfig`` all run or steer code on the host later). A bind
mount of the file itself does not help: nothing can be renamed over a mount point.

So a sandbox whose home is read-only gets a *layer*: a per-run directory on the host (in the
run's own directory, which no sandbox sees) bound over $HOME, with every entry of the real home
bound back into it read-only (symlinks recreated as symlinks), and a copy of each of the agent's
home files (:attr:`egg_core.profiles.AgentProfile.home_files`) as a plain file in it. Inside,
the agent replaces its file as it always does; whatever else the command creates at the top of
$HOME lands in the layer and is thrown away with it. After the run, egg writes back exactly the
named files (:func:`egg_core.snapshot.restore`, which every launch path and crash recovery
already call), and the settings guard then reverts any command-defining keys in them.

Platforms that can let the sandbox write exactly those names in place (Seatbelt matches paths by
pattern) do not need a layer; a platform asks for one with ``stages_home_files``.
"""

from __future__ import annotations

import os
import stat

from egg_core.safeio import read_regular, write_new

TYPE_CHECKING = False
if TYPE_CHECKING:
    from egg_core.policy import EffectivePolicy

#: a home file larger than this is not staged (it stays as the root mount shows it)
MAX_HOME_FILE = 64 << 20
#: the layer's name in the run's directory
LAYER = "home"


def to_stage(policy: EffectivePolicy) -> list[str]:
    """The home files of this policy that need a layer: none when the home is not read-only
    (jail mode hides it; ``rw: ~`` already lets the agent write there), and only regular files
    or missing ones (a symlinked ``~/.claude.json`` is the user's dotfile layout: it stays bound
    where it points, as before)."""
    from egg_core import observe, pathrules  # the decision's, not the exec cache's (stage)

    if not policy.home_files or policy.jail:
        return []
    ruled = pathrules.mounted_rules((e.path, e.mode) for e in policy.fs)
    home = observe.realpath(policy.home)
    if pathrules.governing_mode(home, ruled) not in (None, "ro"):
        return []
    staged = []
    for path in policy.home_files:
        if os.path.dirname(path) != policy.home:
            continue  # only files directly in the home need this
        try:
            st = observe.lstat(path)
        except FileNotFoundError:
            staged.append(path)
            continue
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            staged.append(path)
    return staged


def stage(layer: str, files: list[str]) -> dict[str, str]:
    """Make the layer directory (0700) and copy each home file into it; return host path ->
    staged path (for a missing file too: the agent may create it)."""
    os.makedirs(layer, mode=0o700, exist_ok=True)
    staged = {}
    for path in files:
        target = os.path.join(layer, os.path.basename(path))
        try:
            data = read_regular(path, MAX_HOME_FILE)
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            data = None
        except OSError:
            continue  # not something to copy (grew too big, turned into a FIFO): not staged
        if data is not None:
            write_new(target, data, mode)
        staged[path] = target
    return staged
