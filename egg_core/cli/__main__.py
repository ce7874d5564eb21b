"""``python -P -m egg_core.cli`` runs the ``egg`` command line.

Use ``-P`` (or the ``egg`` command): plain ``python -m`` puts the current directory first on
``sys.path``, and a sandboxed agent can write that directory — Python would import a planted
``egg_core`` from it before this module runs. Without ``-P`` the entry is at least taken off here,
so nothing egg imports later (plugins, PyYAML, the fast path's runner) comes from a workspace.
"""

import os
import sys

if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    del sys.path[0]  # only the entry -m added: the same path may also come from a .pth file

from egg_core.cli import main

sys.exit(main())
