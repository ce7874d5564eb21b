"""attrs converters shared by the data classes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def to_tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    """Lists in, tuples stored: frozen classes stay hashable and immutable."""
    return tuple(value)
