"""What a front that shows and drives sessions builds on (``egg web`` is one): the sessions as
``egg ls --json`` lists them, a session's directory and token, the wire protocol a client speaks
to its daemon, and the one function that makes a sandbox's text safe to show.

- ``session_records(egg_home, ended=False)``, ``session_row(record)`` (the keys of ``egg ls
  --json``), ``live_status(record)`` (clients, idle);
- ``session_by_id(egg_home, id)`` (an exact id, nothing searched) and ``find_session(egg_home,
  ident)`` (a name or prefix too) -> ``SessionPaths`` (``.sock``, ``.id``), ``read_token``;
- ``protocol``: frames (``encode``, ``Decoder``, ``AUTH`` … ``EXIT``, ``pack_attach``,
  ``pack_size``, ``unpack_exit``, ``CLIENT_TYPES``/``SERVER_TYPES``, the size limits);
- ``visible``: a name, a notice, a reason as text that cannot act on a terminal or a page's text;
- ``egg_home_of(environ)``; ``read_token_file(path)`` (a ``--token-file`` the user's alone).
"""

from __future__ import annotations

from egg_core.rundirs import egg_home_of
from egg_core.sanitize import visible
from egg_core.session import protocol
from egg_core.session.listing import live_status
from egg_core.session.listing import records as session_records
from egg_core.session.listing import row as session_row
from egg_core.session.store import SessionPaths, find_session, read_token, session_by_id
from egg_core.tokenfile import read_token as read_token_file

__all__ = [
    "SessionPaths",
    "egg_home_of",
    "find_session",
    "live_status",
    "protocol",
    "read_token",
    "read_token_file",
    "session_by_id",
    "session_records",
    "session_row",
    "visible",
]
