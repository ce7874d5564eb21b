"""``python -m egg_core.cli`` runs the ``egg`` command line.

``python -m`` puts the current directory first on ``sys.path``. A sandboxed agent can write that
directory, so it is taken off again before anything else is imported: nothing egg loads later
(plugins, PyYAML, the fast path's runner) may come from a workspace. The ``egg`` console script
never has it there.
"""

import os
import sys

if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    del sys.path[0]  # only the entry -m added: the same path may also come from a .pth file

from egg_core.cli import main

sys.exit(main())
