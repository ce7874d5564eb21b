"""Built-in session watchers: ordinary plugins on the session hooks (``egg_session_started``,
``egg_session_tick``, ``egg_session_ended``), each keeping its own state per session — the
conversation capture, the periodic git audit and browser-open requests."""
