"""The pytest plugin behind the ``pytest11`` entry point ``egg``: egg's fixtures for any suite."""

from __future__ import annotations

import pytest

# Editable installs skip pytest's automatic rewriting of plugin modules; ask for it explicitly so
# contract failures show the values involved.
pytest.register_assert_rewrite("egg_core.testing.contracts")

from egg_core.testing.fixtures import (  # noqa: E402
    egg_cli,
    egg_home,
    egg_plugin_manager,
    egg_user_home,
)

__all__ = ["egg_cli", "egg_home", "egg_plugin_manager", "egg_user_home"]
