"""The real agent CLIs of the real-agent tier, installed from npm once per set of versions into
a cache directory that outlives the clone: ``$EGG_TEST_AGENTS_DIR``, default
``/var/cache/egg-test-agents``.

On a fresh machine the install takes most of two minutes, all of it waiting on npm's registry.
So a run whose tests include the tier starts it when the run starts (:func:`start_early`, from
the controlling process), and the tier's fixture waits for it (:func:`installed`, under the same
lock) instead of a worker sitting idle through it while the others wait for that worker's share.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

#: pinned: the versions the profiles were checked against (see each agent plugin's docstring)
PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.332",
    "codex": "@openai/codex@0.171.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
}
DEFAULT_DIR = "/var/cache/egg-test-agents"
#: the tier's test files: a run that includes one of them installs early
TIER = ("tests/linux/test_real_agents.py", "tests/linux/test_real_agents_interactive.py")


class InstallFailed(Exception):
    """npm could not install the CLIs (the message says why)."""


def target() -> Path:
    base = Path(os.environ.get("EGG_TEST_AGENTS_DIR", DEFAULT_DIR))
    key = hashlib.sha256(" ".join(sorted(PACKAGES.values())).encode()).hexdigest()[:12]
    return base / key


def installed() -> Path:
    """The directory of the CLIs' commands, installed first if they are not (waiting for an
    install under way in another process or thread)."""
    where = target()
    marker = where / "installed"
    if not marker.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise InstallFailed(
                "the real-agent tier needs npm (Node.js 20 or later); it is not on PATH"
            )
        where.parent.mkdir(parents=True, exist_ok=True)
        where.parent.chmod(0o755)
        with open(where.parent / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not marker.exists():
                _install(npm, where)
    return where / "node_modules" / ".bin"


def _install(npm: str, where: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(mode=0o755)
    proc = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(where), *PACKAGES.values()],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        raise InstallFailed(
            f"npm could not install the agent CLIs into {where} (exit {proc.returncode}); the "
            f"real-agent tier cannot run without them:\n{proc.stderr[-3000:]}"
        )
    (where / "installed").write_text(json.dumps(PACKAGES) + "\n")


def wanted_by(args: list[str], rootdir: Path) -> bool:
    """Whether a run of ``args`` (pytest's, relative to ``rootdir``) includes the tier."""
    tier = [(rootdir / path).resolve() for path in TIER]
    for arg in args or ["."]:
        path = (rootdir / arg.split("::")[0]).resolve()
        if any(file == path or path in file.parents for file in tier):
            return True
    return False


def start_early() -> threading.Thread | None:
    """Install in a thread of this process when the CLIs are missing; a failure is left for
    the fixture's own attempt to report."""
    if (target() / "installed").exists() or shutil.which("npm") is None:
        return None

    def install() -> None:
        try:
            installed()
        except (InstallFailed, OSError, subprocess.SubprocessError):
            pass

    thread = threading.Thread(target=install, name="egg-test-agent-install", daemon=True)
    thread.start()
    return thread
