"""Resolve a 10-deep base chain (11 files, each with masks-free bases) — target: under 20 ms.

Baseline in the same run: ``yaml.safe_load`` of the same 11 files (the floor any YAML-based
resolution pays). Reported: median milliseconds and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, median_seconds, write_section

from egg_core.config.files import resolve_config_file

TEMPLATE = """\
base: {base}
fs:
  - rw:./work{i}
  - deny:~/.secret{i}
  - deny-write:./egg{i}.yaml
network:
  domains: [api{i}.example.com, '*.cdn{i}.example.net']
  local_ports: [{port}]
env: [VAR_{i}, HOME, PATH]
resources:
  cpu: {i}m
  memory: {i}GB
agent_settings:
  agent{i}: ~/.agent{i}/settings.json
"""


def build_chain(root: Path, depth: int) -> Path:
    for i in range(depth + 1):
        base = f"./c{i + 1}.yaml" if i < depth else "none"
        (root / f"c{i}.yaml").write_text(TEMPLATE.format(base=base, i=i + 1, port=8000 + i))
    return root / "c0.yaml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        top = build_chain(root, 10)
        env = {"HOME": tmp, "EGG_HOME": tmp}
        config, files = resolve_config_file(top, env)
        assert len(files) == 11 and len(config.fs) == 33
        paths = sorted(root.glob("c*.yaml"))

        def baseline() -> None:
            for path in paths:
                yaml.safe_load(path.read_text())

        egg = median_seconds(lambda: resolve_config_file(top, env), args.runs)
        floor = median_seconds(baseline, args.runs)
    body = (
        f"Machine: {machine()}. Median of {args.runs} runs.\n\n"
        "| what | median | ratio |\n|---|---|---|\n"
        f"| yaml.safe_load of the 11 files (baseline) | {floor * 1000:.2f} ms | 1.00x |\n"
        f"| egg: resolve the 10-deep chain (validate + merge) | {egg * 1000:.2f} ms | "
        f"{egg / floor:.2f}x |\n\n"
        f"Target: under 20 ms — {'met' if egg < 0.020 else 'NOT met'}."
    )
    print(body)
    if args.write:
        write_section("Config: 10-deep base chain", body)


if __name__ == "__main__":
    main()
