"""Run the ``egg`` CLI from tests, in-process (fast) or as a real subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class CliResult:
    """Outcome of one ``egg`` invocation."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def assert_ok(self) -> CliResult:
        assert self.exit_code == 0, f"egg exited {self.exit_code}: {self.stderr}"
        return self


class CliRunner:
    """Invoke ``egg`` with a controlled environment (the isolated homes of the fixtures)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = dict(environ)

    def run(self, *args: str, env: Mapping[str, str] | None = None) -> CliResult:
        """In-process: fast, but a command's child processes write to the real stdout."""
        from egg_core.cli import main

        environ = {**self.environ, **(env or {})}
        out, err = io.StringIO(), io.StringIO()
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(environ)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args), environ=environ)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return CliResult(code, out.getvalue(), err.getvalue())

    def run_subprocess(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        input: str | bytes | None = None,
        timeout: float = 60,
        cwd: str | os.PathLike[str] | None = None,
    ) -> CliResult:
        """A real ``egg`` process (``python -m egg_core.cli``), for commands that spawn others."""
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "egg_core.cli", *args],
            env={**self.environ, **(env or {})},
            input=data,
            capture_output=True,
            timeout=timeout,
            cwd=cwd,
        )
        return CliResult(
            proc.returncode,
            proc.stdout.decode(errors="replace"),
            proc.stderr.decode(errors="replace"),
        )
