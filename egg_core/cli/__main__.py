"""``python -m egg_core.cli`` runs the ``egg`` command line."""

import sys

from egg_core.cli import main

sys.exit(main())
