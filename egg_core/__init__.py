"""egg: run AI coding agents inside a real OS sandbox, in a session you can detach from.

This package is the framework. It imports no plugin: agents and platforms arrive through the
``egg`` entry-point group (see :mod:`egg_core.plugins`), built-in ones included. Importing it is
deliberately cheap, because ``egg exec`` pays for every import on every call.
"""

__version__ = "0.1.0"
