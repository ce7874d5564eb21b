"""Seeds: the harmless content a placeholder holds at a protected path that did not exist.

See :attr:`egg_core.policy.FsEntry.seed` for what they are for. These checks are shared by the
platform that plants placeholders and by the exec cache, which must see that a launch is the same
whether a placeholder is missing (it will be planted) or already there. Standard library only.
"""

from __future__ import annotations

import os
import stat

#: the seed of an empty directory (any other seed is the text of a file)
DIRECTORY = "\0directory"


def holds_seed(path: str, seed: str) -> bool:
    """Whether ``path`` is exactly a placeholder with ``seed``: an empty directory, or a regular
    file with exactly that content (never followed through a symlink)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if seed == DIRECTORY:
        if not stat.S_ISDIR(st.st_mode):
            return False
        try:
            return not os.listdir(path)
        except OSError:
            return False
    data = seed.encode()
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return False
    if not data:
        return True  # (an empty file holds the empty seed: nothing to read)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.read(fd, len(data) + 1) == data
    finally:
        os.close(fd)


def absent_or_seed(path: str, seed: str) -> bool:
    """The exec cache's fact for a placeholder: the launch is the same whether the path is
    missing (it will be planted) or already holds the seed."""
    return not os.path.lexists(path) or holds_seed(path, seed)
