"""The packages egg's distribution holds, found on disk rather than listed (the rest of the
project's metadata is in pyproject.toml).

``egg_plugins`` is the ``plugins/`` directory (``package-dir`` in pyproject.toml).
setuptools' ``packages.find`` names a package after its path below ``where``, so it cannot find
``plugins/`` as ``egg_plugins``; finding it through the ``egg_plugins`` symlink at the top of the
checkout works there but not from the sdist, which holds no symlink (a wheel built from it had no
``egg_plugins`` at all). So every package below ``egg_core/``, and every package below
``plugins/`` under ``egg_plugins.``: a new package directory ships without editing a list
(a hand-kept one once left out ``egg_plugins.tools``). A directory of data files (``egg web``'s
``static/``) is listed too, as setuptools asks of package data in a directory of its own.
tests/installed/ checks the built wheel.
"""

from setuptools import find_namespace_packages, setup

NOT_PACKAGES = ["*__pycache__", "*.egg-info", "build", "build.*"]

setup(
    packages=[
        *find_namespace_packages(include=["egg_core", "egg_core.*"], exclude=NOT_PACKAGES),
        "egg_plugins",
        *(
            f"egg_plugins.{package}"
            for package in find_namespace_packages("plugins", exclude=NOT_PACKAGES)
        ),
    ]
)
