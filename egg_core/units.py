"""Parse the human units egg.yaml uses: CPU durations and memory sizes.

Both parsers reject anything they do not fully understand. The Go original returned zero ("no
limit") for an unparseable value, so a typo silently removed a limit; here it is an error.
"""

from __future__ import annotations

import math
import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")
_DURATION_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_duration(value: str | int) -> float:
    """Seconds in a duration: ``300`` / ``"300"`` (seconds), ``"300s"``, ``"5m"``, ``"1h30m"``.

    Raises ValueError for anything else, and for zero or negative durations.
    """
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 300s, 5m or 1h30m")
    if isinstance(value, int):
        seconds = float(value)
    else:
        text = value.strip()
        if re.fullmatch(r"\d+", text):
            seconds = float(text)
        else:
            pos, seconds = 0, 0.0
            for match in _DURATION_PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _DURATION_SECONDS[match.group(2)]
                pos = match.end()
            if pos != len(text) or not text:
                raise ValueError("expected a duration such as 300s, 5m or 1h30m")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError("a duration must be greater than zero")
    return seconds


def parse_size(value: str | int) -> int:
    """Bytes in a size: ``512MB``, ``2GB``, ``1.5GiB``, ``4096`` (bytes).

    K, M, G and T (with or without ``B`` or ``iB``) are powers of 1024, as memory limits are.

    Raises ValueError for anything else, and for zero or negative sizes.
    """
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512MB or 2GB")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.match(value)
        if not match or (match.group(3).lower() == "i" and not match.group(2)):
            raise ValueError("expected a size such as 512MB or 2GB")
        number, unit = float(match.group(1)), match.group(2).lower()
        size = math.floor(number * 1024 ** _SIZE_POWER[unit])
    if size <= 0:
        raise ValueError("a size must be greater than zero")
    return size
