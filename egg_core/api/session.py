"""What a session watcher builds on, beyond the hook types in :mod:`egg_core.api`
(``RunningSession``, ``HostGuards``, ``SessionInfo``).

- ``Capturer``: one session's conversation capture. It asks the agent's plugin where the
  session's transcript is (``egg_history_capture``), copies it into the session directory when it
  changed (safely: :mod:`egg_core.history`), gives the copy its title, and keeps the agent's own
  id once learnt. :meth:`Capturer.capture` never raises.
"""

from __future__ import annotations

from egg_core.session.conversations import Capturer

__all__ = ["Capturer"]
