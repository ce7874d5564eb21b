"""A session daemon's start-up: resolve the plan, snapshot the agent's settings, stage its home
files, prepare the platform's launch and spawn it on a PTY (again, when a busy host failed the
set-up), with ``--trace`` and the browser-open shim. The event loop that serves the session is
:mod:`egg_core.session.daemon`, whose ``Daemon`` is this class with the loop added.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from egg_core.session.clipboard import ClipboardFilter
from egg_core.session.store import (
    SessionPaths,
    log,
    update_meta,
)


class SessionStartup:
    """The start-up half of :class:`egg_core.session.daemon.Daemon` (which sets these)."""

    paths: SessionPaths
    spec: Any
    pm: Any
    plan: Any
    guard: Any
    git_lines: list[str]
    prepared: Any
    launch: Any
    proc: Any
    child_pid: int | None
    info: Any
    audit: Any
    clipboard: ClipboardFilter | None
    window: str | None
    setup_read: int | None
    attempts: int
    relaunches: int
    live: Any
    unreaped: bool
    rows: int
    cols: int
    started: float

    def guard_said(self, line: str) -> None:
        """A line of the run's guards (egg_core.hostrun): in the session's log, and in what the
        session tells when it ends."""
        log(self.paths, line)
        self.git_lines.append(line)

    def on_pty_readable(self) -> None:
        """The event loop's (see Daemon): what the PTY says once it is spawned."""
        raise NotImplementedError

    def start(self) -> None:
        """Resolve, snapshot, prepare and spawn. Raises EggError for anything a user can fix."""
        from egg_core import snapshot
        from egg_core.launch import plan_launch
        from egg_core.lifecycle import SessionInfo
        from egg_core.plugins import get_plugin_manager

        spec = self.spec
        self.pm = get_plugin_manager()
        plan = plan_launch(
            self.pm,
            environ=os.environ,
            cwd=Path(spec.cwd),
            agent=spec.agent,
            command=spec.command,
            agent_args=spec.agent_args,
            config_path=spec.config_path,
            platform=spec.platform,
            skip_permissions=spec.skip_permissions,
            resume_id=spec.resume_id,
            session_id=spec.session_id,
        )
        self.plan = plan
        if not plan.policy.clipboard:
            self.clipboard = ClipboardFilter()
        for created in plan.make_agent_dirs():
            log(self.paths, f"created {created} (the agent writes there; it did not exist yet)")
        settings = plan.settings_files()
        layer, staged = plan.stage_home_files(self.paths.directory)
        snapshot.take(
            str(self.paths.settings), settings, plan.settings_keys, staged, plan.settings_reasons
        )
        self.paths.shared.mkdir(mode=0o700, exist_ok=True)
        from egg_core.hostrun import RunGuard
        from egg_core.tools import server as toolserver
        from egg_core.tools.runner import Caller

        self.guard = RunGuard(plan.git_state, plan.code_watch, plan.egg_home, said=self.guard_said)
        caller = Caller(session=self.paths.id, agent=spec.agent or "", workspace=spec.cwd)
        self.tool_server = toolserver.serve(
            self.pm, plan, self.paths.directory / "tools", caller, self.guard
        )
        launch = plan.launch(
            work_dir=self.paths.directory,
            tty=True,
            network_log=self.paths.network_log,
            shared_dir=self.paths.shared,
            extra_env=self.browser_env(plan),
            home_layer=layer,
            home_staged=list(staged),
            tools_dir=self.tool_server.directory if self.tool_server else None,
        )
        platform = plan.selection.platform
        self.launch = launch
        self.prepared = platform.prepare(launch)
        if spec.trace or plan.policy.trace:
            self.trace(self.prepared)
        audit_on = spec.audit or plan.policy.audit
        if audit_on:
            from egg_core.session.audit import AuditWriter

            self.audit = AuditWriter(self.paths.audit)
        self.spawn()
        self.info = SessionInfo(
            id=self.paths.id,
            directory=self.paths.directory,
            agent=plan.profile.name,
            command=plan.argv,
            cwd=Path(spec.cwd),
            platform=platform.name,
            pid=self.child_pid,
        )
        update_meta(
            self.paths,
            state="running",
            agent=plan.profile.name,
            cwd=spec.cwd,
            config=str(plan.resolved.path or ""),
            command=list(plan.argv),
            platform=platform.name,
            outer_boundary=plan.selection.outer_boundary,
            network=plan.policy.network_summary(),
            rows=self.rows,
            cols=self.cols,
            started=self.started,
            pid=self.child_pid,
            daemon_pid=os.getpid(),
            audit=audit_on,
            settings=[str(s) for s in settings],
        )
        self.live = self.running_session(plan)
        self.pm.hook.egg_session_started(session=self.info, live=self.live)

    def running_session(self, plan: Any) -> Any:
        """What the session hooks act on (:class:`egg_core.lifecycle.RunningSession`)."""
        from egg_core.lifecycle import RunningSession

        return RunningSession(
            pm=self.pm,
            profile=plan.profile,
            history=self.history_context(plan),
            shared_dir=self.paths.shared,
            guards=self.guard,
            notify=self.notify_clients,
            log=lambda line: log(self.paths, line),
            record=self.record,
        )

    def history_context(self, plan: Any) -> Any:
        """Where an agent session's conversation is captured (a HistoryContext); None for a
        plain command (``egg run -- CMD``) or an agent whose plugin declines."""
        from egg_core.paths import user_home
        from egg_core.session import conversations

        spec = self.spec
        if not spec.agent or spec.command or not plan.known_agent:
            return None
        if conversations.declines(plan.profile):
            return None
        return conversations.context(
            cwd=Path(spec.cwd),
            home=user_home(os.environ),
            session_dir=self.paths.directory,
            environ=os.environ,
            agent_session_id=spec.session_id or spec.resume_id,
            started=self.started,
        )

    def notify_clients(self, text: str) -> None:
        """The event loop's (see Daemon): a notice to the attached clients, from any thread."""
        raise NotImplementedError

    def record(self, **fields: Any) -> None:
        """The event loop's (see Daemon): fields merged into the session's record."""
        raise NotImplementedError

    def trace(self, prepared: Any) -> None:
        """``--trace``: strace follows the sandbox from outside (ptrace is denied inside)."""
        from egg_core.errors import EnforcementError
        from egg_core.paths import host_which

        strace = host_which("strace")
        if strace is None:
            prepared.cleanup()
            raise EnforcementError("--trace needs strace (apt install strace)")
        trace_log = self.paths.trace_log
        # -q, not -qq: the "+++ exited" lines say when a pid may be reused (egg policy suggest)
        options = ["-f", "-q", "-tt", *_pid_namespace_option(strace)]
        if self.relaunches:
            options.append("-A")  # the agent started again: its first run's trace stays
        prepared.argv = [strace, *options, "-o", str(trace_log), "--", *prepared.argv]

    def browser_env(self, plan: Any) -> dict[str, str]:
        """``BROWSER``/``xdg-open``/``open`` inside record the URL here instead of opening it."""
        bin_dir = self.paths.shared / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        inside = plan.selection.platform.shared_path(self.paths.shared)
        script = (
            "#!/bin/sh\n"
            "# egg: record the URL for the attached clients instead of opening a browser\n"
            f'printf "%s\\n" "$*" >> "{inside}/browser-requests"\n'
            'echo "egg: open this URL in your browser: $*" >&2\n'
        )
        for name in ("egg-browser", "xdg-open", "open", "sensible-browser", "www-browser"):
            shim = bin_dir / name
            shim.write_text(script)
            shim.chmod(0o755)
        path = plan.env.get("PATH", os.defpath)
        return {"BROWSER": f"{inside}/bin/egg-browser", "PATH": f"{inside}/bin:{path}"}

    def spawn(self) -> None:
        import ptyprocess

        from egg_core import windows
        from egg_core.spawn import setup_pipe

        prepared = self.prepared
        ignored = tuple(prepared.ignore_signals)
        # the sandbox's own stderr is a pipe (its reason if set-up fails goes to egg.log, not
        # the screen); the command gets the terminal back at prepared.stderr_fd
        pipe = setup_pipe() if prepared.stderr_fd is not None else None
        inner = prepared.stderr_fd
        if pipe is not None and pipe[1] == inner:
            moved = os.dup(pipe[1])
            os.close(pipe[1])
            pipe = (pipe[0], moved)
        # the start hooks may add descriptors (a platform's bind sources, opened right before
        # the spawn): they run first, then ptyprocess closes every descriptor but these before
        # it runs preexec
        try:
            prepared.starting()
        except BaseException:
            if pipe is not None:
                os.close(pipe[0])
                os.close(pipe[1])
            raise
        keep = (*prepared.pass_fds, *((pipe[1],) if pipe is not None else ()))

        def preexec() -> None:
            for sig in ignored:
                signal.signal(sig, signal.SIG_IGN)
            if pipe is not None and inner is not None:
                os.dup2(2, inner)  # the terminal, for the command
                os.dup2(pipe[1], 2)
            if prepared.preexec_fn is not None:
                prepared.preexec_fn()

        if self.window is None:
            self.window = windows.open_window(str(self.plan.egg_home), *self.plan.write_window())
        try:
            self.proc = ptyprocess.PtyProcess.spawn(
                prepared.argv,
                cwd=str(prepared.cwd),
                env=prepared.env,
                dimensions=(self.rows, self.cols),
                pass_fds=keep,
                preexec_fn=preexec,
            )
            self.unreaped = True
        finally:
            if pipe is not None:
                os.close(pipe[1])
        self.setup_read = pipe[0] if pipe is not None else None
        prepared.spawned()
        command = prepared.child_pid()
        self.child_pid = command or self.proc.pid
        # what `egg run --detach` waits for: the sandbox's process runs (or the platform cannot
        # tell), as against a sandbox that failed before it (the end then says why)
        update_meta(
            self.paths, command_started=command is not None or not prepared.reports_child_pid
        )
        self.guard.set_sandbox(self.proc.pid)  # paused while a host tool runs (hostrun)

    def respawn(self) -> None:
        """Prepare the launch again and start it: its set-up failed because the host changed
        under it (a host socket it was to mask vanished). Nothing of the command has run."""
        self.attempts += 1
        self.start_again()

    def start_again(self) -> None:
        """A fresh preparation of ``self.launch``, spawned on a new terminal that the event
        loop reads from then on (the old one is closed: its process has been reaped)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            loop.remove_reader(self.proc.fd)
        with contextlib.suppress(Exception):
            self.proc.close(force=True)
        self.prepared.cleanup()
        self.prepared = self.plan.selection.platform.prepare(self.launch)
        if self.spec.trace or self.plan.policy.trace:
            self.trace(self.prepared)
        self.spawn()
        os.set_blocking(self.proc.fd, False)
        loop.add_reader(self.proc.fd, self.on_pty_readable)

    def relaunch(self) -> None:
        """Start the agent again: it exited with its profile's ``relaunch_exit_code`` (Gemini
        after "Trust folder"), asking its launcher for a fresh start. Everything a run has —
        the settings snapshot, the write window, the tool socket, the conversation's capture —
        belongs to the session and carries on; only the sandbox is prepared anew, for the
        command again. A conversation egg gave an id (``session_id_flag``) that the agent has
        written by now is resumed by it: started with that id again, the agent would refuse
        it as taken (Gemini 0.61: "Session ID ... already exists")."""
        import attrs

        self.relaunches += 1
        self.attempts = 1  # a new start: its set-up may be retried as the first one's was
        argv = self.relaunch_argv()
        log(self.paths, f"the agent asked to be started again; starting {argv[0]} again")
        self.launch = attrs.evolve(self.launch, argv=argv)
        self.start_again()
        if self.info is not None:
            self.info = attrs.evolve(self.info, command=argv, pid=self.child_pid)
        update_meta(self.paths, pid=self.child_pid, command=list(argv))

    def relaunch_argv(self) -> tuple[str, ...]:
        """The command line of a relaunch: the same, or resuming the conversation egg named."""
        spec, plan = self.spec, self.plan
        history = self.live.history if self.live is not None else None
        if not spec.session_id or history is None or not plan.profile.resume_flag:
            return tuple(self.launch.argv)
        import attrs

        ctx = attrs.evolve(history, agent_session_id=spec.session_id)
        if self.pm.hook.egg_history_capture(agent=plan.profile, ctx=ctx) is None:
            return tuple(self.launch.argv)  # nothing written under the id yet: still its own
        return tuple(
            plan.profile.build_argv(
                spec.agent_args,
                skip_permissions=plan.policy.skip_permissions,
                resume_id=spec.session_id,
            )
        )

    def setup_said(self) -> str:
        """What the sandbox wrote on its own stderr (see :meth:`spawn`), once."""
        from egg_core.spawn import setup_errors

        if self.setup_read is None:
            return ""
        read, self.setup_read = self.setup_read, None
        return setup_errors(read)


def _pid_namespace_option(strace: str) -> list[str]:
    """``--decode-pids=pidns`` where this strace has it: a fork inside the sandbox's pid
    namespace then says which traced process it made, so ``egg policy suggest`` knows each
    child's working directory (egg_core.suggest.fs)."""
    import subprocess

    try:
        shown = subprocess.run(
            [strace, "--help"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return ["--decode-pids=pidns"] if "--decode-pids=pidns" in shown.stdout else []
