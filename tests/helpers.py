"""Helpers shared by egg's own tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_dist(
    root: Path, dist: str, version: str, entry_points: dict[str, str], modules: dict[str, str]
) -> Path:
    """Write an installed-looking distribution (dist-info + modules) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    eps = "[egg]\n" + "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(eps)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root
