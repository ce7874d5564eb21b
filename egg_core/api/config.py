"""Reading YAML of a plugin's own with egg's errors: every problem one line naming the file, the
line and what was wrong (as egg.yaml's are), durations as egg.yaml writes them.

``decode(data, source)`` is the file's text (UTF-8, else an error naming the offset),
``compose(text, source)`` its one document as position-carrying nodes (None for an empty file),
and ``Reader(source)`` walks them with the checks egg.yaml uses, raising :class:`ConfigError`.
"""

from __future__ import annotations

from egg_core.config.parsing import Reader, compose, decode
from egg_core.errors import ConfigError
from egg_core.units import parse_duration

__all__ = ["ConfigError", "Reader", "compose", "decode", "parse_duration"]
