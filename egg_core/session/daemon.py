"""The per-session daemon: owns the PTY, serves clients on the session socket, outlives terminals.

``egg run`` starts it as its own detached process (``python -m egg_core.session.daemon DIR``).
It re-resolves the plan from ``spec.json`` (inheriting egg run's environment), snapshots the
agent's settings, prepares the platform, spawns the sandboxed command under a PTY, and serves.

The hot path is only: read the PTY -> write the chunk to each attached client's transport ->
append it to the replay ring. Nothing on it waits for a client: a client whose transport buffer
grows past a high-water mark stops receiving live output and is repainted from the ring when it has
drained (or dropped if it never does). No terminal emulator runs while output flows.

A daemon lives exactly as long as its session (issue 23: churn checks left daemons behind, a PTY
and no child, surviving SIGTERM): it exits once its program has ended or could not start, after
the one grace a client has to read that end (``RunSpec.linger``, for ``egg run``'s own attach),
and a step of the child's life that fails ends the session instead of being dropped by the event
loop. SIGTERM ends it in every state: while starting it unwinds the start-up (the sandbox is
killed, the settings put back); while serving it ends the program (SIGKILL after KILL_GRACE), the
wait for a client and the drain; and whatever it is stuck in (a plugin's hook that never returns),
the kernel ends it TERM_DEADLINE seconds later (SIGALRM, left at its default action).

Why one module of this size: the event loop, the PTY and the child's life are one state machine
(output, exit, drain, finish); start-up is :mod:`.startup`, the client protocol :mod:`.serving`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from egg_core.errors import EggError
from egg_core.session import protocol as p
from egg_core.session.clients import Client
from egg_core.session.clipboard import ClipboardFilter
from egg_core.session.serving import (
    BATCH_SIZE,
    DROP_AFTER,
    HIGH_WATER,
    KILL_GRACE,
    LOW_WATER,
    READ_SIZE,
    SessionServing,
)
from egg_core.session.startup import SessionStartup
from egg_core.session.store import (
    SessionPaths,
    clear_live,
    log,
    mark_live,
    read_json,
    update_meta,
)
from egg_core.spawn import MAX_ATTEMPTS, SANDBOX_FAILED, last_line

#: seconds from SIGTERM to the daemon's end, whatever it is doing: KILL_GRACE for the program,
#: then the end recorded and told; past it the kernel ends the daemon (SIGALRM's default action;
#: the next egg command recovers what it could not clean up, see egg_core.session.recovery)
TERM_DEADLINE = int(KILL_GRACE) + 10
#: relaunches one session makes at most: each follows a choice the user made in the agent
#: (trust, sign-in, a setting that needs a restart), so a program that asks at every start
#: is one egg stops starting, with its exit code as the session's
MAX_RELAUNCHES = 100


_deadline_armed = False


def arm_deadline() -> None:
    """From the first SIGTERM on, the daemon has TERM_DEADLINE seconds (later ones never move
    the deadline: a SIGTERM a second must not keep a daemon alive)."""
    global _deadline_armed
    if not _deadline_armed:
        _deadline_armed = True
        signal.alarm(TERM_DEADLINE)


class Terminated(EggError):
    """SIGTERM while the daemon was starting: the start-up unwinds as a failed start does."""


class Daemon(SessionStartup, SessionServing):
    def __init__(self, paths: SessionPaths) -> None:
        from egg_core.session.ring import ReplayRing
        from egg_core.session.spec import RunSpec

        self.paths = paths
        self.spec = RunSpec.from_json(read_json(paths.spec))
        self.token = paths.token.read_bytes().strip()
        self.ring = ReplayRing(self.spec.ring_bytes)
        self.clients: set[Client] = set()
        self.rows, self.cols = self.spec.rows, self.spec.cols
        self.started = time.time()
        self.last_activity = self.started
        self.first_output: float | None = None
        self.exit_code: int | None = None
        self.exit_reason: str | None = None
        self.audit: Any = None
        self.proc: Any = None
        self.prepared: Any = None
        #: what the session hooks act on (egg_core.lifecycle.RunningSession), once started
        self.live: Any = None
        #: each plugin's egg_session_tick, in its own thread (egg_core.session.ticks)
        self.ticker: Any = None
        #: the loop serving the session, once it runs (notices and records hop onto it)
        self.loop: asyncio.AbstractEventLoop | None = None
        #: the tool socket (egg_core.tools.server) when egg.yaml enables tools
        self.tool_server: Any = None
        self.child_pid: int | None = None
        self.done = asyncio.Event()
        #: the end is recorded and the settings restored: a client attaching now gets EXIT
        self.finished = False
        self.pending_input = bytearray()
        self.writer_armed = False
        #: the end of a session waits no longer for its client: set by the first ATTACH, or
        #: by SIGTERM
        self.linger_over = asyncio.Event()
        #: SIGTERM came: the session ends, and nothing waits for long any more
        self.terminating = False
        #: ... before the event loop ran (see main)
        self.term_pending = False
        self.pm: Any = None
        self.info: Any = None
        self.plan: Any = None
        #: what the git guard removed during the session (see egg_core.git.guard)
        self.git_lines: list[str] = []
        #: the run's host-side guards, shared by the periodic audit, tool calls and the end
        self.guard: Any = None
        #: threat N: the program's clipboard writes are dropped unless egg.yaml allows them
        self.clipboard: ClipboardFilter | None = None
        self.clipboard_logged = False
        self.render_lock = asyncio.Lock()
        #: the write window of the sandbox (egg_core.windows), closed when it has ended
        self.window: str | None = None
        self.launch: Any = None
        #: the read end of the sandbox's own stderr (see spawn), and how often it was prepared
        self.setup_read: int | None = None
        self.attempts = 1
        #: how often the agent asked to be started again (see SessionStartup.relaunch)
        self.relaunches = 0
        #: the spawned process has not been reaped: its pids are still its own to signal
        self.unreaped = False
        self.tasks: set[asyncio.Task[None]] = set()

    # -- start-up ------------------------------------------------------------------------------

    # -- serving -------------------------------------------------------------------------------

    async def serve(self) -> None:
        from egg_core.session.ticks import Ticker

        loop = asyncio.get_running_loop()
        self.loop = loop
        with contextlib.suppress(FileNotFoundError):
            self.paths.sock.unlink()
        # Bound under another name and renamed into place once listening: ``egg run`` attaches
        # as soon as the socket's name exists, and a name that exists before listen() is
        # "Connection refused" (a shorter name, so a deep $EGG_HOME still fits sun_path).
        listening = self.paths.sock.with_name("s.tmp")
        with contextlib.suppress(FileNotFoundError):
            listening.unlink()
        old_umask = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(self.handle, path=str(listening))
        finally:
            os.umask(old_umask)
        os.chmod(listening, 0o600)
        os.rename(listening, self.paths.sock)
        os.set_blocking(self.proc.fd, False)
        loop.add_reader(self.proc.fd, self.on_pty_readable)
        loop.add_signal_handler(signal.SIGCHLD, self.guarded, self.reap)
        # Not the loop's own signal handling: that runs the handler when the loop next gets
        # to it, never while a step blocks it (a plugin's hook that never returns). This one
        # runs in any case and arms the deadline, then hands the rest to the loop.
        signal.signal(signal.SIGTERM, lambda *_: self.sigterm_arrived(loop))
        loop.add_signal_handler(signal.SIGHUP, lambda: None)
        timers = [asyncio.create_task(self.periodic())]
        self.ticker = Ticker(self.pm, self.tick_arguments, lambda line: log(self.paths, line))
        self.ticker.start()
        self.guarded(self.reap)
        if self.term_pending:  # SIGTERM during the start-up's last steps (see main)
            self.on_sigterm()
        await self.done.wait()
        with contextlib.suppress(Exception):
            loop.remove_reader(self.proc.fd)
        if self.spec.linger and not self.linger_over.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.linger_over.wait(), self.spec.linger)
            await asyncio.sleep(0.05)
        self.ticker.stop()
        for task in timers:
            task.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
        await self.finish()
        server.close()

    def on_pty_readable(self) -> None:
        # Drain what is there (up to BATCH_SIZE): one frame per client and one ring append per
        # wake-up instead of one per 64 KiB read.
        chunks: list[bytes] = []
        size = 0
        ended = False
        while size < BATCH_SIZE:
            try:
                chunk = os.read(self.proc.fd, READ_SIZE)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    break
                chunk = b""
            if not chunk:
                ended = True
                break
            chunks.append(chunk)
            size += len(chunk)
        if chunks:
            self.on_output(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if ended:
            # The terminal has no writer left; the process may still run (it closed its
            # descriptors, or a child of it holds none): it is reaped at its SIGCHLD, and the
            # loop never blocks in waitpid meanwhile (status, SIGTERM and clients are served).
            asyncio.get_running_loop().remove_reader(self.proc.fd)
            self.reap()

    def on_output(self, data: bytes) -> None:
        """The hot path: to every live client, then into the ring (and the audit log)."""
        if self.clipboard is not None:
            data = self.clipboard.feed(data)
            if self.clipboard.dropped and not self.clipboard_logged:
                self.clipboard_logged = True
                log(
                    self.paths,
                    "dropped a clipboard write (OSC 52) from the program; egg.yaml's "
                    "clipboard: true allows them",
                )
            if not data:
                return
        now = time.time()
        self.last_activity = now
        if self.first_output is None:
            self.first_output = now
        framed = False
        for client in self.clients:
            if client.framed:
                framed = True
            elif client.attached and client.behind_since is None:
                client.send_live(data)
                if client.buffered() > HIGH_WATER:
                    client.behind_since = now
        self.ring.feed(data)
        if framed:
            self.frames_due()
        if self.audit is not None:
            self.audit.record(2, data)

    def guarded(self, step: Callable[[], None]) -> None:
        """Run a step of the child's life (its reaping, its terminal's reader). If it raises, the
        session ends, said in its log with the traceback: the event loop would log the exception
        and carry on, leaving a daemon with no child that serves nothing, forever."""
        try:
            step()
        except Exception as exc:
            log(self.paths, "internal error, ending the session:\n" + traceback.format_exc())
            self.end_without_command(f"internal error: {type(exc).__name__}: {exc}", 70)

    def end_without_command(self, why: str, code: int = SANDBOX_FAILED) -> None:
        """End the session now: its command cannot (or can no longer) run. A process it spawned
        is killed and reaped first."""
        if self.exit_code is not None:
            return
        if self.unreaped:
            self.unreaped = False
            with contextlib.suppress(Exception):
                os.kill(self.proc.pid, signal.SIGKILL)
                os.waitpid(self.proc.pid, 0)
        if self.guard is not None:
            self.guard.set_sandbox(None)
        self.exit_reason = f"{why} (log: {self.paths.log})"
        self.exit_code = code
        self.done.set()

    def reap(self) -> None:
        if self.exit_code is not None or self.proc is None:
            return
        try:
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.proc.pid, 0
        if pid == 0:
            return
        self.unreaped = False
        if self.guard is not None:
            self.guard.set_sandbox(None)  # reaped: the pid may be another process's soon
        returncode = os.waitstatus_to_exitcode(status)
        code = self.prepared.command_exit_code(returncode)
        said = self.setup_said()
        retry = self.prepared.should_retry(said)
        if code is None and self.attempts < MAX_ATTEMPTS and retry:
            log(self.paths, f"set-up failed as the host changed under it, retrying: {said}")
            self.start_again_or_end(self.respawn, "the sandbox failed before the command started")
            return
        if code is not None and self.wants_relaunch(code):
            if said.strip():
                log(self.paths, f"the sandbox said: {said.strip()}")
            self.drain_pty()  # what it said before it went ("restarting to apply ...")
            self.start_again_or_end(self.relaunch, "the agent could not be started again")
            return
        if code is None:
            code = 125
            why = last_line(said) or f"{self.prepared.argv[0]} exited {returncode}"
            log(self.paths, f"the sandbox failed before the command started: {why}")
            self.exit_reason = (
                f"the sandbox failed before the command started: {why} (log: {self.paths.log})"
            )
        else:
            if said.strip():
                log(self.paths, f"the sandbox said: {said.strip()}")
            # a limit that killed it says so; otherwise keep why egg ended it (idle, egg kill)
            self.exit_reason = self.prepared.exit_reason(code) or self.exit_reason
        self.exit_code = code
        self.drain_pty()
        self.done.set()

    def start_again_or_end(self, start: Callable[[], None], failure: str) -> None:
        """Run ``start`` (a respawn or a relaunch); a launch that cannot be prepared again ends
        the session, ``failure`` and the reason in the log and the end line."""
        try:
            start()
        except Exception as exc:
            why = exc.message if isinstance(exc, EggError) else f"{type(exc).__name__}: {exc}"
            log(self.paths, f"{failure}: {why}")
            if not isinstance(exc, EggError):
                log(self.paths, traceback.format_exc())
            self.end_without_command(f"{failure}: {why}")

    def wants_relaunch(self, code: int) -> bool:
        """The agent exited asking to be started again (its profile's ``relaunch_exit_code``),
        and nothing is ending the session: no egg kill, idle timeout or SIGTERM (those set
        ``exit_reason`` or ``terminating`` first), and fewer than MAX_RELAUNCHES so far. Only an
        agent's own run: ``egg run -- CMD`` is a command's, whatever it is."""
        plan = self.plan
        if plan is None or self.spec.command or not plan.known_agent:
            return False
        wanted = plan.profile.relaunch_exit_code
        if wanted is None or code != wanted or self.terminating or self.exit_reason:
            return False
        if self.relaunches >= MAX_RELAUNCHES:
            log(self.paths, f"the agent asked to be started again {MAX_RELAUNCHES} times: ending")
            return False
        return True

    def drain_pty(self) -> None:
        while True:
            try:
                data = os.read(self.proc.fd, READ_SIZE)
            except OSError:
                return
            if not data:
                return
            self.on_output(data)

    def tick_arguments(self) -> dict[str, Any]:
        return {"session": self.info, "live": self.live}

    def session_ended(self, code: int) -> None:
        """``egg_session_ended``, in a worker thread: a plugin's last look (the final capture of
        a long transcript) keeps the loop free. Each plugin's is called on its own, so one's
        failure (one line in the log) skips no other's."""
        from egg_core.session.ticks import each_plugin

        for name, call in each_plugin(self.pm, "egg_session_ended"):
            try:
                call(session=self.info, exit_code=code, live=self.live)
            except Exception as exc:
                log(
                    self.paths,
                    f"plugin {name}: egg_session_ended failed: {type(exc).__name__}: {exc}",
                )

    def audit_git(self) -> None:
        """One audit at a time (the guard's lock): the watcher's may still run in its thread
        when finish() starts, and tool calls audit before they run (egg_core.hostrun)."""
        if self.guard is not None:
            self.guard.audit()

    async def periodic(self) -> None:
        watchdog_logged = False
        while True:
            await asyncio.sleep(0.25)
            now = time.time()
            for client in list(self.clients):
                if client.behind_since is None:
                    continue
                if client.buffered() <= LOW_WATER:
                    client.behind_since = None
                    self.repaint(client)
                elif now - client.behind_since > DROP_AFTER:
                    log(self.paths, "dropped a client that stayed too far behind")
                    client.transport.abort()
                    self.clients.discard(client)
            if (
                not watchdog_logged
                and self.first_output is None
                and now - self.started > self.spec.startup_watchdog
            ):
                watchdog_logged = True
                log(
                    self.paths,
                    f"startup watchdog: no output in {self.spec.startup_watchdog:.0f} s from "
                    f"{self.info.command if self.info else '?'}; it may be waiting for input "
                    "(egg attach) or stuck",
                )
            if self.spec.idle_timeout and now - self.last_activity > self.spec.idle_timeout:
                log(self.paths, f"idle for {self.spec.idle_timeout:.0f} s: ending the session")
                self.exit_reason = "idle timeout"
                self.terminate_command()
                self.last_activity = now + KILL_GRACE
            if self.audit is not None:
                self.audit.flush()

    def notify_clients(self, text: str) -> None:
        """A plugin's notice (``RunningSession.notify``) to the attached clients, from any
        thread: through :func:`egg_core.sanitize.visible` (it may quote the sandbox), sent on
        the loop. Before the loop runs no client is attached: nothing to tell."""
        from egg_core.sanitize import visible

        notice = visible(text).encode()
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: no client is left
                self.loop.call_soon_threadsafe(self._send_notice, notice)

    def _send_notice(self, notice: bytes) -> None:
        for client in self.clients:
            if client.attached:
                client.send(p.NOTICE, notice)

    def record(self, **fields: Any) -> None:
        """A plugin's fields (``RunningSession.record``) merged into the session's record, on the
        loop once it runs (the daemon's own updates are made there: no lost update)."""
        if self.loop is None:
            update_meta(self.paths, **fields)
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(lambda: update_meta(self.paths, **fields))

    def resize(self, rows: int, cols: int) -> None:
        if (rows, cols) == (self.rows, self.cols):
            return
        self.rows, self.cols = rows, cols
        with contextlib.suppress(OSError):
            self.proc.setwinsize(rows, cols)
        self.reconsider([c for c in self.clients if c.read_only])
        if self.audit is not None:
            self.audit.record(3, p.pack_size(rows, cols))

    def nudge_repaint(self) -> None:
        """Two size changes (one row less, then back): the program gets SIGWINCH and redraws."""
        rows, cols = self.rows, self.cols
        with contextlib.suppress(OSError):
            self.proc.setwinsize(max(rows - 1, 1), cols)
        asyncio.get_running_loop().call_later(0.05, self._restore_size, rows, cols)

    def _restore_size(self, rows: int, cols: int) -> None:
        with contextlib.suppress(OSError):
            self.proc.setwinsize(rows, cols)

    def sigterm_arrived(self, loop: asyncio.AbstractEventLoop) -> None:
        """The SIGTERM handler proper (between two bytecodes of whatever runs): the deadline
        first, then :meth:`on_sigterm` on the loop."""
        arm_deadline()
        loop.call_soon_threadsafe(self.on_sigterm)

    def on_sigterm(self) -> None:
        """SIGTERM: end the session, in whatever state it is (see the module's docstring)."""
        if not self.terminating:
            self.terminating = True
            arm_deadline()
            log(self.paths, "SIGTERM: ending the session")
        self.linger_over.set()
        if self.exit_code is None and self.unreaped:
            self.exit_reason = self.exit_reason or "ended by SIGTERM"
            self.terminate_command()  # the session ends when the program does
        elif self.exit_code is None:  # no program to wait for: end now
            self.end_without_command("ended by SIGTERM with no program running")

    def terminate_command(self) -> None:
        if not self.unreaped:
            return  # reaped: its pid may be another process's by now
        target = self.child_pid or self.proc.pid
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGTERM)
        asyncio.get_running_loop().call_later(KILL_GRACE, self.kill_hard)

    def kill_hard(self) -> None:
        if not self.unreaped:
            return
        for pid in {self.child_pid, self.proc.pid}:
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    # -- connections ---------------------------------------------------------------------------

    # -- ending --------------------------------------------------------------------------------

    def defer_sigterm(self) -> None:
        """SIGTERM between the start-up and the event loop: :meth:`serve` acts on it first."""
        self.term_pending = True
        arm_deadline()

    def abandon(self) -> None:
        """Undo a start-up that failed (or was ended by SIGTERM) part-way: the spawned sandbox
        killed and reaped, the tool socket stopped, the platform's preparation and the write
        window undone. Each step may find nothing to undo."""
        from egg_core import windows

        if self.unreaped:
            self.unreaped = False
            with contextlib.suppress(Exception):
                os.kill(self.proc.pid, signal.SIGKILL)
                os.waitpid(self.proc.pid, 0)
        if self.tool_server is not None:
            with contextlib.suppress(Exception):
                self.tool_server.stop()
        if self.prepared is not None:
            self.prepared.cleanup()
        if self.window is not None:
            windows.close_window(str(self.plan.egg_home), self.window)

    async def finish(self) -> None:
        """Restore settings and record the end first, then tell the clients: by the time a user
        has the prompt back, the session is fully over."""
        from egg_core import guardlog, homefiles, hostfs, snapshot

        code = self.exit_code if self.exit_code is not None else 1
        if self.audit is not None:
            self.audit.close()
        if self.tool_server is not None:
            self.tool_server.stop()
        if self.window is not None:
            from egg_core import windows

            windows.close_window(str(self.plan.egg_home), self.window)
        restored = snapshot.restore(str(self.paths.settings))
        hostfs.remove_tree(str(self.paths.directory / homefiles.LAYER))
        for line in restored:
            log(self.paths, f"settings snapshot: {line}")
        guardlog.record(self.plan.egg_home, snapshot.failures(restored))
        if self.plan is not None:
            self.audit_git()
        if self.pm is not None and self.info is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.session_ended, code)
        update_meta(
            self.paths,
            state="exited",
            exit_code=code,
            exit_reason=self.exit_reason,
            ended=time.time(),
            bytes=self.ring.total,
            settings_restored=restored,
            git_guard=self.git_lines,
        )
        self.finished = True
        await self.draw_frames()  # watchers of another size: the final screen before the end
        for client in list(self.clients):
            if client.attached and client.behind_since is not None:
                # it fell behind and got no live output since: the final screen, then the end
                client.behind_since = None
                self.repaint(client)
            client.send(p.EXIT, p.pack_exit(code, self.exit_reason))
        await self.drain_clients()
        for client in list(self.clients):
            client.writer.close()
        with contextlib.suppress(OSError):
            self.paths.sock.unlink()
        self.prepared.cleanup()
        clear_live(self.paths)


def _terminated_while_starting(signum: int, frame: object) -> None:
    """SIGTERM before the daemon serves: unwind the start-up (``main`` cleans up as for a failed
    start), within TERM_DEADLINE whatever it is blocked in."""
    global _term_pending
    _term_pending = True
    arm_deadline()
    raise Terminated("ended by SIGTERM while starting")


def _bounded(signum: int, frame: object) -> None:
    """SIGTERM while a failed start cleans up: the clean-up runs on, within TERM_DEADLINE."""
    arm_deadline()


#: a SIGTERM came while starting (a plugin's loader may have caught the exception it raised)
_term_pending = False


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m egg_core.session.daemon SESSION_DIR", file=sys.stderr)
        return 2
    paths = SessionPaths(Path(argv[0]))
    # before the pid is known to anyone: whoever sends SIGTERM then ends a daemon that cleans up
    signal.signal(signal.SIGTERM, _terminated_while_starting)
    paths.pid.write_text(str(os.getpid()))
    mark_live(paths)
    daemon: Daemon | None = None
    try:
        daemon = Daemon(paths)
        daemon.start()
        if _term_pending:
            raise Terminated("ended by SIGTERM while starting")
        # from here the event loop's handler takes over (Daemon.serve); until it does, a
        # SIGTERM is kept for it
        started = daemon
        signal.signal(signal.SIGTERM, lambda *_: started.defer_sigterm())
    except Exception as exc:
        from egg_core import homefiles, hostfs, snapshot

        signal.signal(signal.SIGTERM, _bounded)
        if daemon is not None:
            daemon.abandon()
        message = exc.message if isinstance(exc, EggError) else f"{type(exc).__name__}: {exc}"
        log(paths, f"failed to start: {message}")
        if not isinstance(exc, EggError):
            log(paths, traceback.format_exc())
        snapshot.restore(str(paths.settings))
        hostfs.remove_tree(str(paths.directory / homefiles.LAYER))
        update_meta(paths, state="failed", error=message, ended=time.time())
        clear_live(paths)
        return 1
    try:
        asyncio.run(daemon.serve())
    except Exception:
        log(paths, "daemon crashed:\n" + traceback.format_exc())
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
