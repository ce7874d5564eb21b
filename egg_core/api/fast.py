"""What a platform's cached-launch runner and fact checkers may use: the standard library's
cheapest modules alone, because ``egg exec``'s cache hit imports them before the sandbox starts
(a hit that imported attrs or the policy would pay tens of milliseconds for it; see
:mod:`egg_core.execcache` and the test that pins a hit's imports).

``netchild`` — the cached launch's proxy child (binds the proxy's sockets, starts and stops the
child that serves them) — is loaded only when asked for: a plain hit has no network to filter.
``Admission`` is what a runner that admits is given (see ``Prepared.recipe``).
"""

from __future__ import annotations

from egg_core.facts import sha256_hex
from egg_core.seeds import DIRECTORY, absent_or_seed, holds_seed
from egg_core.spawn import (
    SANDBOX_FAILED,
    report_exit,
    seal_descriptors,
    setup_errors,
    setup_pipe,
    spawn_ignoring,
    supervise,
    wait_pid,
)

from . import lazily

TYPE_CHECKING = False
if TYPE_CHECKING:
    from egg_core import netchild
    from egg_core.cachedrun import Admission

__all__ = [
    "DIRECTORY",
    "SANDBOX_FAILED",
    "Admission",
    "absent_or_seed",
    "holds_seed",
    "netchild",
    "report_exit",
    "seal_descriptors",
    "setup_errors",
    "setup_pipe",
    "sha256_hex",
    "spawn_ignoring",
    "supervise",
    "wait_pid",
]


__getattr__ = lazily(
    globals(), {"netchild": "egg_core:netchild", "Admission": "egg_core.cachedrun:Admission"}
)
