"""What git over SSH through egg costs: ``git clone`` of a small repository from a real ``sshd``
on loopback, on the host and inside ``egg exec`` (ssh through egg's route: the ProxyCommand, a
CONNECT to the filtering proxy, the allowed host's known_hosts line), in one run.

The server's name resolves through egg's test network seam (``EGG_TEST_NETWORK``: a
public-looking address whose connections go to the sshd's loopback port), so the proxy decides
as in production; the host's clone goes to the loopback port directly. Both use the same key
file (``-i``) and strict host key checking. The table gives medians of interleaved rounds, and
``egg exec -- true`` beside them: the part of the gap that is the launch, not the route.

Run from a clean clone after ./scripts/setup, as root (the test sshd lets root in):
    .venv/bin/python bench/ssh_clone.py [--write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import machine, write_section

from tests.sshd import keygen, start

HOST = "git.example.test"
PUBLIC = "93.184.216.40"


def small_repository(root: Path, files: int) -> Path:
    """A bare repository of ``files`` text files in one commit (about 4 KiB each)."""
    seed = root / "seed"
    seed.mkdir()
    for number in range(files):
        (seed / f"file{number:04}.txt").write_text(f"line {number}\n" * 400)
    git = ["git", "-C", str(seed), "-c", "user.name=b", "-c", "user.email=b@example.test"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "seed"], check=True)
    bare = root / "served.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    return bare


def timed(argv: list[str], env: dict[str, str], cwd: Path, target: Path) -> float:
    shutil.rmtree(target, ignore_errors=True)
    start_at = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start_at
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {result.stderr[-800:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    egg = shutil.which("egg", path=str(Path(sys.executable).parent)) or "egg"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp)
        home, work = root / "home", root / "work"
        (home / ".ssh").mkdir(parents=True)
        work.mkdir()
        key = work / "client_key"
        keygen(key)
        server = start(root / "sshd", key.with_suffix(".pub").read_text())
        try:
            repo = small_repository(root, args.files)
            (home / ".ssh" / "known_hosts").write_text(f"{HOST} {server.public_key}\n")
            host_known = root / "host_known_hosts"
            host_known.write_text(f"[127.0.0.1]:{server.port} {server.public_key}\n")
            (work / "egg.yaml").write_text(f"network: ['{HOST}:22']\n")
            env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C"}
            env["EGG_HOME"] = str(home / ".egg")
            ssh = f"ssh -i {key} -o BatchMode=yes -o StrictHostKeyChecking=yes"
            host_clone = [
                "git", "-c", f"core.sshCommand={ssh} -o UserKnownHostsFile={host_known}",
                "clone", "-q", f"ssh://root@127.0.0.1:{server.port}{repo}", "clone",
            ]  # fmt: skip
            egg_clone = [
                egg, "exec", "--", "git", "-c", f"core.sshCommand={ssh}",
                "clone", "-q", f"ssh://root@{HOST}{repo}", "clone",
            ]  # fmt: skip
            egg_env = {**env, "EGG_TEST_NETWORK": f"{HOST}={PUBLIC}@127.0.0.1:{server.port}"}
            samples: dict[str, list[float]] = {"host": [], "egg": [], "launch": []}
            target = work / "clone"
            for _ in range(args.rounds):  # interleaved
                samples["host"].append(timed(host_clone, env, work, target))
                samples["egg"].append(timed(egg_clone, egg_env, work, target))
                if len(list(target.glob("*.txt"))) != args.files:
                    raise SystemExit("the clone through egg is not the repository")
                samples["launch"].append(timed([egg, "exec", "--", "true"], egg_env, work, target))
        finally:
            server.stop()
    med = {name: statistics.median(values) * 1e3 for name, values in samples.items()}
    body = (
        f"Machine: {machine()}. {args.rounds} interleaved rounds; `git clone` over ssh of a "
        f"repository of {args.files} files (one commit, about 4 KiB each), medians.\n\n"
        "| | host | egg exec | ratio |\n|---|---|---|---|\n"
        f"| `git clone ssh://…` | {med['host']:.0f} ms | {med['egg']:.0f} ms | "
        f"{med['egg'] / med['host']:.2f}x |\n"
        f"| `egg exec -- true` (the launch alone, same policy) | | {med['launch']:.0f} ms | |\n\n"
        "Inside, ssh runs egg's ProxyCommand (a Python process: a CONNECT to the filtering "
        "proxy, which resolves the name through the test seam and dials the sshd), then relays "
        "the session; on the host ssh dials the loopback port itself. A launch through the test "
        "seam is never exec-cached, so the egg column pays the full launch path each time."
    )
    print(body)
    if args.write:
        write_section("git over SSH: a clone through egg's route", body)


if __name__ == "__main__":
    main()
