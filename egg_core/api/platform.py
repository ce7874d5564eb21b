"""What a sandbox platform builds on, beyond the base types in :mod:`egg_core.api`.

- ``observe``: every host observation a launch decision rests on goes through it (``lstat``,
  ``realpath``, ``listdir``, ``content``, ``custom``…), because the exec cache re-checks exactly
  what was recorded; a platform that looks at the host with ``os`` directly makes cached launches
  wrong when that part of the host changes.
- ``capabilities``: the capability names a platform enforces (``FS_DENY_READ``, ``NET_FILTERED``…,
  ``CAPABILITIES`` the set of all).
- path rules (``under``, ``depth``, ``writable_under``, ``governing_mode``, ``MODE_RANK``) and the
  policy's network needs (``NEED_NONE`` … ``NEED_FULL``), as the policy itself judges them.
- the filtered ssh agent (``AgentFilter``, the host keys it binds to: ``agent_key_blobs``, the
  keys it never binds to: ``agent_revoked_blobs``, and each known_hosts line's marker, patterns
  and key: ``agent_key_lines``);
- the filtering proxy (``FilteringProxy`` in a ``ProxyThread``, its ``DecisionLog``, the
  ``NetworkRules`` it enforces, ``NO_PROXY_INSIDE``) for a platform that serves one.
- where things are: ``sandbox_cache_dir``, ``host_which`` (a program from the trusted system
  directories only), ``untrusted_candidates``; ``process_alive`` for a platform's own crash
  recovery.
"""

from __future__ import annotations

from egg_core import capabilities, observe
from egg_core.pathrules import MODE_RANK, depth, governing_mode, under, writable_under
from egg_core.paths import host_which, untrusted_candidates
from egg_core.policy import NEED_FILTERED, NEED_FULL, NEED_LOCAL, NEED_NONE, sandbox_cache_dir
from egg_core.rundirs import alive as process_alive

from . import lazily

TYPE_CHECKING = False
if TYPE_CHECKING:
    from egg_core.agentfilter import AgentFilter
    from egg_core.agentfilter import key_blobs as agent_key_blobs
    from egg_core.agentfilter import key_lines as agent_key_lines
    from egg_core.agentfilter import revoked_blobs as agent_revoked_blobs
    from egg_core.netproxy import NO_PROXY_INSIDE, DecisionLog, FilteringProxy, ProxyThread
    from egg_core.netrules import NetworkRules
    from egg_core.netrules import split_entry as split_network_entry

#: the proxy's names, imported when first asked for (asyncio: only launches that filter pay it)
_PROXY = {
    "NO_PROXY_INSIDE": "egg_core.netproxy",
    "DecisionLog": "egg_core.netproxy",
    "FilteringProxy": "egg_core.netproxy",
    "ProxyThread": "egg_core.netproxy",
    "NetworkRules": "egg_core.netrules",
    "split_network_entry": "egg_core.netrules:split_entry",
    "AgentFilter": "egg_core.agentfilter",
    "agent_key_blobs": "egg_core.agentfilter:key_blobs",
    "agent_key_lines": "egg_core.agentfilter:key_lines",
    "agent_revoked_blobs": "egg_core.agentfilter:revoked_blobs",
}

__all__ = [
    "MODE_RANK",
    "NEED_FILTERED",
    "NEED_FULL",
    "NEED_LOCAL",
    "NEED_NONE",
    "NO_PROXY_INSIDE",
    "AgentFilter",
    "DecisionLog",
    "FilteringProxy",
    "NetworkRules",
    "ProxyThread",
    "agent_key_blobs",
    "agent_key_lines",
    "agent_revoked_blobs",
    "capabilities",
    "depth",
    "governing_mode",
    "host_which",
    "observe",
    "process_alive",
    "sandbox_cache_dir",
    "split_network_entry",
    "under",
    "untrusted_candidates",
    "writable_under",
]


__getattr__ = lazily(globals(), _PROXY)
