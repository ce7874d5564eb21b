"""Conversation history: which transcript belongs to which sandboxed run, copied out and put back.

An agent keeps its own transcript of a conversation in its state directory, which the sandbox can
write. egg is the one place that knows which conversation belongs to which session, so the session
daemon copies *that* transcript into the session directory while the session runs and once more
when it ends (``chat.jsonl.gz`` + ``chat.meta``), ``egg history`` lists and shows the copies, and
``egg run AGENT --resume`` puts one back and starts the agent with its resume flag.

The agent-specific part is the agent plugin's (hooks in :mod:`egg_core.hookspecs`): where this
session's transcript is (``egg_history_capture``), where a captured one goes back
(``egg_history_restore``), and what it says (``egg_history_render``). The reading and writing is
here, once, because it runs on the host, as the user, in a directory the sandbox could shape:

- a capture reads only a regular file inside the agent's directory, reached from its real path
  one component at a time with ``O_NOFOLLOW`` (a transcript replaced by a symlink to
  ``~/.ssh/id_ed25519`` reads as nothing), at most :data:`MAX_BYTES`;
- the copy is written 0600 under a fresh name and renamed into place, so a daemon killed in the
  middle leaves the previous capture whole; an unchanged transcript (same inode, size, mtime) is
  not copied again;
- a restore creates what is missing below the agent's directory, refuses a directory component
  that is a symlink, and writes the transcript under a fresh name beside its target, renamed over
  it (a planted symlink is replaced, never followed).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from egg_core.transcripts import TranscriptReader, json_record

#: transcripts larger than this are not captured (one line in the session log says so)
MAX_BYTES = 256 * 1024 * 1024
#: the files a capture leaves in the session directory
CHAT_FILE = "chat.jsonl.gz"
META_FILE = "chat.meta"
#: how much of a transcript is read for its title
TITLE_BYTES = 1024 * 1024
TITLE_CHARS = 80
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class HistoryError(Exception):
    """A capture or restore that must not happen (a symlink on the way, too big); one line."""


@attrs.frozen(kw_only=True)
class HistoryContext:
    """The session a history hook is asked about."""

    cwd: Path
    home: Path
    session_dir: Path
    #: epoch seconds: a transcript last written before this is not this session's
    started_after: float
    #: the agent's own conversation id when egg knows it (it chose it, or it is resuming it)
    agent_session_id: str | None = None
    #: the environment the session runs with (the variables that move an agent's state)
    environ: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False)

    def agent_path(self, profile: Any, relative: str) -> Path | None:
        """``relative`` (a profile path: from the home, or ``$VARIABLE/...``) where the agent
        keeps it for this session, its relocations applied; None when it has no place."""
        from egg_core.policy import home_path, relocations

        moved = relocations(profile, str(self.home), self.environ)
        found = home_path(relative, str(self.home), moved)
        return Path(found) if found else None


@attrs.frozen(kw_only=True)
class Transcript:
    """One conversation's transcript on the host: ``root / file``.

    ``root`` is the agent's own directory (``~/.claude``, ``$CODEX_HOME``): nothing outside it
    is read or written, and every component below it is walked without following symlinks.
    """

    agent_session_id: str
    root: Path
    #: relative to ``root``, ``/``-separated, no ``..``
    file: str

    def __attrs_post_init__(self) -> None:
        parts = self.file.split("/")
        if not self.file or self.file.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"a transcript's file must be a plain relative path: {self.file!r}")


@attrs.frozen(kw_only=True)
class Turn:
    """One step of a conversation, as ``egg history show`` prints it."""

    role: str  # "user", "assistant" or "tool"
    text: str = ""
    #: the tool's name, for a tool call (shown as one line)
    tool: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.tool is not None:
            data["tool"] = self.tool
        return data


# -- reading the agent's transcript ------------------------------------------------------------


def _walk(root: Path, parts: list[str], *, create: bool = False) -> int:
    """A descriptor for ``root/parts...`` (directories), every component below the root's real
    path opened with ``O_NOFOLLOW``; with ``create``, missing directories are made (0700)."""
    real = os.path.realpath(root)
    fd = os.open("/", _DIR)
    try:
        for part in [p for p in real.split("/") if p] + parts:
            try:
                next_fd = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o700, dir_fd=fd)
                next_fd = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (20, 40):  # ENOTDIR, ELOOP: a symlink or a file stands there
                    raise HistoryError(f"{part} on the way to {root} is not a directory") from exc
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def stat_transcript(transcript: Transcript) -> os.stat_result | None:
    """The transcript's own stat, reached safely; None when it is missing or not a regular file
    reached without a symlink."""
    *dirs, name = transcript.file.split("/")
    try:
        fd = _walk(transcript.root, dirs)
    except (OSError, HistoryError):
        return None
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(fd)
    return st if stat.S_ISREG(st.st_mode) else None


def read_head(root: Path, file: str, limit: int) -> bytes | None:
    """The first ``limit`` bytes of the regular file ``root/file``, reached as a capture reaches
    one (no symlink below the root); None when there is no such file. For a plugin deciding
    which transcript is this session's (a first line naming the directory it ran in)."""
    *dirs, name = file.split("/")
    try:
        dir_fd = _walk(root, dirs)
    except (OSError, HistoryError):
        return None
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)


def list_names(root: Path, relative: str = "") -> list[tuple[str, float]]:
    """(name, mtime) of the entries of ``root/relative`` reached without a symlink below the root,
    sorted by name; [] when there is no such directory."""
    dirs = [p for p in relative.split("/") if p]
    if any(p in (".", "..") for p in dirs):
        return []
    try:
        fd = _walk(root, dirs)
    except (OSError, HistoryError):
        return []
    try:
        found = []
        for name in os.listdir(fd):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            found.append((name, st.st_mtime))
        return sorted(found)
    finally:
        os.close(fd)


def capture(transcript: Transcript, session_dir: Path, title: str | None = None) -> dict[str, Any]:
    """Copy the transcript into ``session_dir`` (gzip, 0600, temp then rename) unless the last
    capture there is of the same file, unchanged. Returns the meta written (or kept).

    Raises :class:`HistoryError` when the transcript is not a regular file reached without a
    symlink, or is larger than :data:`MAX_BYTES`.
    """
    previous = read_meta(session_dir) or {}
    *dirs, name = transcript.file.split("/")
    try:
        dir_fd = _walk(transcript.root, dirs)
    except FileNotFoundError as exc:
        raise HistoryError(f"{transcript.root / transcript.file} does not exist") from exc
    try:
        try:
            fd = os.open(name, _READ, dir_fd=dir_fd)
        except OSError as exc:
            raise HistoryError(
                f"{transcript.root / transcript.file} is not a regular file (a symlink?)"
            ) from exc
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"{transcript.root / transcript.file} is not a regular file")
        if st.st_size > MAX_BYTES:
            raise HistoryError(
                f"{transcript.root / transcript.file} is {st.st_size} bytes, more than the "
                f"{MAX_BYTES} a capture copies: not captured"
            )
        identity = {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        same_conversation = previous.get("agent_session_id") == transcript.agent_session_id
        if same_conversation and all(previous.get(k) == v for k, v in identity.items()):
            return previous
        head = _copy_gzip(fd, session_dir, st.st_size)
    finally:
        os.close(fd)
    meta = {
        "format": 1,
        "agent_session_id": transcript.agent_session_id,
        "root": str(transcript.root),
        "file": transcript.file,
        **identity,
        "captured": time.time(),
        # a conversation keeps the title of its first capture (its first user message)
        "title": title if title is not None or not same_conversation else previous.get("title"),
    }
    meta["head"] = head.decode("utf-8", "replace")  # for the title, read by the caller
    return meta


def _copy_gzip(fd: int, session_dir: Path, size: int) -> bytes:
    """Gzip what ``fd`` holds into ``session_dir/chat.jsonl.gz`` (temp, fsync, rename); the
    first :data:`TITLE_BYTES` bytes are returned."""
    for stale in session_dir.glob(f".{CHAT_FILE}.*"):  # a capture a SIGKILL cut short
        with contextlib.suppress(OSError):
            stale.unlink()
    tmp = session_dir / f".{CHAT_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    out = os.open(tmp, _CREATE, 0o600)
    head = b""
    copied = 0
    try:
        with (
            os.fdopen(out, "wb", closefd=True) as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as packed,
        ):
            while copied < size:
                chunk = os.read(fd, min(1 << 20, size - copied))
                if not chunk:
                    break  # it shrank while we read: what was there
                if len(head) < TITLE_BYTES:
                    head += chunk[: TITLE_BYTES - len(head)]
                packed.write(chunk)
                copied += len(chunk)
            packed.flush()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, session_dir / CHAT_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return head


def write_meta(session_dir: Path, meta: dict[str, Any]) -> None:
    data = {k: v for k, v in meta.items() if k != "head"}
    tmp = session_dir / f".{META_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(tmp, _CREATE, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, session_dir / META_FILE)


def has_capture(session_dir: Path) -> bool:
    """Whether the session directory holds a captured conversation (both of its files)."""
    return (session_dir / CHAT_FILE).is_file() and (session_dir / META_FILE).is_file()


def read_meta(session_dir: Path) -> dict[str, Any] | None:
    if not has_capture(session_dir):
        return None
    try:
        data = json.loads((session_dir / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_capture(session_dir: Path) -> bytes:
    """The captured transcript, as the agent wrote it."""
    with gzip.open(session_dir / CHAT_FILE, "rb") as handle:
        return handle.read(MAX_BYTES + 1)


def read_capture_head(session_dir: Path, limit: int = TITLE_BYTES) -> bytes:
    """The first ``limit`` bytes of the captured transcript (a title is read from them)."""
    with gzip.open(session_dir / CHAT_FILE, "rb") as handle:
        return handle.read(limit)


def capture_reader(session_dir: Path) -> TranscriptReader:
    """The captured transcript, read a line at a time (as much of it as :func:`read_capture`
    reads): what ``egg history show`` hands the agent's plugin."""
    return TranscriptReader.of_capture(session_dir / CHAT_FILE, MAX_BYTES + 1)


# -- putting it back ---------------------------------------------------------------------------


def restore(data: bytes, target: Transcript) -> str:
    """Write ``data`` at ``target`` for the agent to find; what was done, in a few words.

    A transcript already there that is at least as long as the capture is the agent's own, more
    recent copy: it is kept. Raises :class:`HistoryError` when a directory on the way below the
    agent's directory is a symlink (nothing is written).
    """
    *dirs, name = target.file.split("/")
    fd = _walk(target.root, dirs, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size >= len(data):
            return f"kept the agent's own copy of {target.root / target.file}"
        for _ in range(16):
            tmp = f".{name}.egg-{os.urandom(6).hex()}"
            try:
                out = os.open(tmp, _CREATE, 0o600, dir_fd=fd)
            except FileExistsError:
                continue
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            return f"restored {target.root / target.file}"
        raise HistoryError(f"no free temporary name next to {target.root / target.file}")
    finally:
        os.close(fd)


# -- turns -------------------------------------------------------------------------------------


_UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def is_uuid(text: str) -> bool:
    """An agent's own conversation id as Claude Code and Gemini CLI take it (a UUID): the only
    shape a plugin puts into a path."""
    return bool(_UUID.fullmatch(text))


#: a message that opens with a tag is what an agent added, not what the user typed (Claude
#: Code's own first-prompt rule: ``<local-command-stdout>``, ``<task-notification>``, ...)
_MARKUP = re.compile(r"\s*<[A-Za-z][\w-]*[\s/>]")


def is_markup(text: str) -> bool:
    """Whether ``text`` opens with a tag: an agent's markup, never a title."""
    return bool(_MARKUP.match(text))


def title_of(turns: Iterable[Turn]) -> str | None:
    """The first user message, on one line, cut at :data:`TITLE_CHARS` characters. A message
    that is still an agent's markup (the plugin turned what the user typed, ``! ls``, ``/review
    12``, into text; the rest it left as it came) is passed over."""
    for turn in turns:
        if turn.role == "user" and turn.text.strip() and not is_markup(turn.text):
            line = " ".join(turn.text.split())
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return None


def jsonl_records(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL transcript; a line that is not one (a half-written last
    line, anything hostile) is skipped."""
    records = []
    for line in data.splitlines():
        line = line.strip()
        record = json_record(line) if line else None
        if record is not None:
            records.append(record)
    return records


def cut(text: str, limit: int = 400) -> str:
    """Long tool output, cut for reading (the capture itself is whole)."""
    text = text.rstrip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"
