"""The bearer token a network front (``egg mcp --http``, ``egg web``) takes from ``--token-file``:
the file must be the user's alone, as ssh refuses a key others may read, because the token is all
a client needs."""

from __future__ import annotations

import os


def read_token(path: str) -> str:
    """The token in ``path`` (one line); ValueError naming what is wrong. A file that group or
    others may read (or write), or that another user owns, is refused, as ssh refuses such a
    key: the token is all a client needs."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = os.fstat(handle.fileno())
            mode = info.st_mode
            if info.st_uid != os.geteuid():  # another user made it: that user knows the token
                raise ValueError(
                    f"--token-file {path}: it belongs to uid {info.st_uid}, not to you "
                    f"(uid {os.geteuid()}); make a token file of your own"
                )
            if mode & 0o077:
                can = (
                    " or ".join(
                        word for bits, word in ((0o044, "read"), (0o022, "write")) if mode & bits
                    )
                    or "open"
                )
                raise ValueError(
                    f"--token-file {path}: group or others may {can} it "
                    f"(mode {mode & 0o777:04o}); chmod 600 {path}"
                )
            token = handle.read().strip()
    except OSError as exc:
        raise ValueError(f"--token-file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"--token-file {path}: not UTF-8 text") from exc
    if len(token) < 16 or any(c.isspace() for c in token):
        raise ValueError(
            f"--token-file {path}: the token must be one word of 16 characters or more"
        )
    return token
