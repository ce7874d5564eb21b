"""``egg policy suggest [SESSION | --log FILE ... | --trace FILE ...] [--json] [--fold] [--apply]
[--include RULE ...]``: the allowlist a run needed, from its network log
(:mod:`egg_core.suggest.network`), and the ``fs`` rules a traced run was refused
(:mod:`egg_core.suggest.fs`), as an edit of the egg.yaml the run used
(:mod:`egg_core.suggest.apply`). Observe first (``network: {mode:
observe}``, ``egg run --trace``), then suggest, then ``--apply``, then switch to ``mode:
enforce``. ``--apply`` writes an ``fs`` rule by itself only inside the project or the recorded
agent's own directories (:mod:`egg_core.suggest.scope`); every other one is shown for review with
the line to add, and written only when named with ``--include``.

Why one module of this size: one command's arguments, its sources (a session, logs, traces) and
its three outputs (text, JSON, the edit) must agree on what was found; what is found is the
``egg_core.suggest`` package's."""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from egg_core.cli.context import Context
from egg_core.errors import EggError, UsageError
from egg_core.sanitize import json_text, visible

if TYPE_CHECKING:
    from egg_core.config.files import ResolvedConfig
    from egg_core.suggest.apply import Applied
    from egg_core.suggest.fs import FsRefused, FsUse
    from egg_core.suggest.network import Suggestion
    from egg_core.suggest.scope import Scope


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "words",
        nargs="*",
        metavar="suggest [SESSION]",
        help="suggest egg.yaml entries from a session's logs (default: the newest here)",
    )
    p.add_argument(
        "--log",
        action="append",
        metavar="FILE",
        help="read this network log instead of a session's (repeatable)",
    )
    p.add_argument(
        "--trace",
        action="append",
        metavar="FILE",
        help="read this strace record (egg run --trace) instead of a session's (repeatable)",
    )
    p.add_argument(
        "--config",
        metavar="PATH",
        help="the egg.yaml to compare with and edit (default: the one the session used)",
    )
    p.add_argument(
        "--fold",
        action="store_true",
        help="propose *.domain where 3 or more subdomains of one registrable domain were used",
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="write the suggestion into egg.yaml (comments and order kept; mode left as it is); "
        "fs rules only inside the project or the agent's own directories, the others are shown "
        "for review",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="RULE",
        help="with --apply, also write this fs rule shown for review, exactly as shown "
        "(rw:~/.cache/foo; repeatable); without --apply, show the edit that would make",
    )
    p.epilog = (
        "--apply writes network entries (plain host names) and the fs rules that lie inside "
        "the project (the directory the run worked in, which '.' in egg.yaml names; not inside "
        "another repository in it, nor under a deny, a cache:, a narrower ro: or one of egg's "
        "protections) or inside the session's agent's own state directories, and touch no "
        "agent's settings or code. Every other fs rule is shown under 'review by hand' with "
        "the exact line to add to egg.yaml; --apply --include RULE writes it once you have "
        "read it."
    )
    p.add_argument("--json", action="store_true", help="print JSON")


@attrs.frozen
class Sources:
    """What a suggestion is made from: logs, traces, and the run they came from."""

    logs: tuple[Path, ...]
    traces: tuple[Path, ...]
    #: the session's meta (empty for --log/--trace files)
    meta: dict[str, Any]
    session: str = ""
    running: bool = False


@attrs.frozen
class FsPart:
    rules: tuple[FsUse, ...]
    refused: tuple[FsRefused, ...]
    calls: int
    scope: Scope
    #: rule -> why it needs review (None: --apply writes it by itself)
    review: dict[str, str | None] = attrs.Factory(dict)
    #: rule -> the line(s) to add to egg.yaml by hand (after what --apply writes by itself)
    lines: dict[str, str] = attrs.Factory(dict)

    def with_lines(self, text: str | None, source: str) -> FsPart:
        from egg_core.suggest.apply import hand_line

        lines = {u.rule: hand_line(text, u.rule, source) for u in self.rules}
        return attrs.evolve(self, lines=lines)

    def automatic(self) -> list[str]:
        return [u.rule for u in self.rules if self.review.get(u.rule) is None]

    def for_review(self) -> list[str]:
        return [u.rule for u in self.rules if self.review.get(u.rule) is not None]

    def to_json(self, traces: tuple[Path, ...], included: list[str]) -> dict[str, Any]:
        return {
            "add": [u.rule for u in self.rules],
            "rules": [
                {
                    **u.to_json(),
                    "apply": "review" if self.review.get(u.rule) else "automatic",
                    "why_review": self.review.get(u.rule),
                    "line": self.lines.get(u.rule, ""),
                }
                for u in self.rules
            ],
            "automatic": self.automatic(),
            "review": self.for_review(),
            "included": [r for r in included if r in self.review],
            "refused": [r.to_json() for r in self.refused],
            "refusals": self.calls,
            "traces": [str(t) for t in traces],
        }


def run(ns: argparse.Namespace, ctx: Context) -> int:
    words = list(ns.words)
    if words[:1] != ["suggest"]:
        raise UsageError("egg policy has one command: suggest (egg policy suggest [SESSION])")
    if len(words) > 2:
        raise UsageError("egg policy suggest takes at most one SESSION")
    if len(words) == 2 and (ns.log or ns.trace):
        raise UsageError("give a SESSION or --log/--trace FILE, not both")
    from egg_core.config.files import discover_config
    from egg_core.suggest import apply as suggest_apply
    from egg_core.suggest import network as suggest

    sources = _sources(ctx, words[1:], ns)
    if ns.apply and sources.running:
        # its logs may still grow: what --apply writes must be what the user could read first
        raise UsageError(
            f"session {sources.session} is still running: --apply once it has ended "
            "(its logs may still grow); without --apply egg shows what it would add"
        )
    read = []
    corrupt = 0
    for path in sources.logs:
        try:
            records, bad = suggest.read_log(path)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read the network log: {exc.strerror}") from None
        read.append((str(path), records))
        corrupt += bad
    cwd = Path(sources.meta.get("cwd") or os.getcwd())
    # --config is relative to where the user is; the session's is absolute already
    config_path = os.path.abspath(ns.config) if ns.config else sources.meta.get("config") or None
    if config_path and not ns.config and not Path(config_path).is_file():
        raise UsageError(f"{config_path}: the session's egg.yaml is gone (pass --config PATH)")
    config = discover_config(cwd, config_path, ctx.environ)
    found = suggest.suggest(read, config.config.network.domains, corrupt, fold_wildcards=ns.fold)
    fs = _fs_part(ctx, sources, cwd, config_path, config) if sources.traces else None
    included = _included(ns.include, found, fs)
    automatic = fs.automatic() if fs else []
    fs_rules = [u.rule for u in fs.rules if u.rule in automatic or u.rule in included] if fs else []
    review = fs.scope.review if fs else None
    edit: Applied | None = None
    edit_problem = None
    if found.add or fs_rules:
        try:
            folds = [f.entry for f in found.folded]
            if ns.apply:
                edit = suggest_apply.apply_entries(
                    config,
                    found.add,
                    ctx.environ,
                    fs_rules,
                    wildcards=folds,
                    review=review,
                    included=included,
                )
            else:
                edit = suggest_apply.planned_edit(
                    config,
                    found.add,
                    fs_rules,
                    ctx.environ,
                    folds,
                    review=review,
                    included=included,
                )
        except EggError as exc:
            if ns.apply:
                raise
            edit_problem = exc.message
    if fs is not None:
        text = edit.after if edit is not None else suggest_apply.current_text(config)
        fs = fs.with_lines(text, str(config.path or "egg.yaml"))
    if ns.json:
        data = {
            **found.to_json(),
            "config": str(config.path or ""),
            "logs": [str(p) for p in sources.logs],
            "session": sources.session or None,
            "fs": fs.to_json(sources.traces, included) if fs else None,
            "diff": edit.diff() if edit else "",
            "applied": ns.apply and edit is not None and edit.after != edit.before,
            "apply_problem": edit_problem,
            "mode": config.config.network.mode or "enforce",
        }
        print(json_text(data))
        return 0
    if isinstance(sys.stdout, io.TextIOWrapper):  # a name from the sandbox, a terminal in ASCII
        sys.stdout.reconfigure(errors="backslashreplace")
    if _all_covered(found, fs, fs_rules):
        print(NOTHING_TO_ADD)
        return 0
    _print(found, fs, config, sources)
    waiting = _print_review(fs, included, config)
    _print_edit(found, fs_rules, edit, edit_problem, config, applied=ns.apply, waiting=waiting)
    return 0


NOTHING_TO_ADD = "nothing to add: egg.yaml already covers what the run needed"


def _all_covered(found: Suggestion, fs: FsPart | None, fs_rules: list[str]) -> bool:
    """The run read something and egg.yaml lets all of it through now (its suggestions applied,
    say), nothing being listed apart either: then the one line says so, no table or heading."""
    if found.add or fs_rules or found.refused:
        return False
    if fs is not None and (fs.rules or any(not r.covered for r in fs.refused)):
        return False
    return found.records > 0 or (fs is not None and fs.calls > 0)


def _included(names: list[str], found: Suggestion, fs: FsPart | None) -> list[str]:
    """The ``--include`` rules, each one of this run's suggestions exactly as shown."""

    known = set(found.add) | ({u.rule for u in fs.rules} if fs else set())
    for name in names:
        if name not in known:
            raise UsageError(
                f"--include {visible(name)}: not among this run's suggestions "
                "(name a rule exactly as egg policy suggest shows it)"
            )
    return list(dict.fromkeys(names))


def _sources(ctx: Context, words: list[str], ns: argparse.Namespace) -> Sources:
    if ns.log or ns.trace:
        return Sources(
            tuple(Path(p) for p in ns.log or ()), tuple(Path(p) for p in ns.trace or ()), {}
        )
    from egg_core.paths import egg_home
    from egg_core.session.store import daemon_alive, find_session, list_sessions, read_json

    home = egg_home(ctx.environ)
    if words:
        try:
            paths = find_session(home, words[0])
        except EggError as exc:
            raise UsageError(exc.message) from None
        if not paths.network_log.is_file() and not paths.trace_log.is_file():
            raise UsageError(
                f"session {paths.id} has no network log (it made no request through the "
                "proxy) and no trace (egg run --trace)"
            )
    else:
        here = [
            r
            for r in list_sessions(home)
            if r.meta.get("cwd") == os.getcwd()
            and (r.paths.network_log.is_file() or r.paths.trace_log.is_file())
        ]
        if not here:
            raise UsageError(
                "no session here has a network log or a trace: pass SESSION (egg ls --all), "
                "--log FILE or --trace FILE"
            )
        paths = here[-1].paths
    return Sources(
        tuple(p for p in (paths.network_log,) if p.is_file()),
        tuple(p for p in (paths.trace_log,) if p.is_file()),
        read_json(paths.meta),
        paths.id,
        daemon_alive(paths),
    )


def _fs_part(
    ctx: Context, sources: Sources, cwd: Path, config_path: str | None, config: ResolvedConfig
) -> FsPart:
    """The traced refusals, judged against the policy the session's agent gets here now, and
    which of the rules --apply may write by itself (the scope of the session's project and its
    recorded agent)."""
    from egg_core import registry
    from egg_core.launch import plan_launch
    from egg_core.suggest import fs as suggest_fs
    from egg_core.suggest import scope as suggest_scope
    from egg_core.suggest import trace as suggest_trace

    refusals = []
    for trace in sources.traces:
        try:
            with open(trace, encoding="utf-8", errors="surrogateescape") as handle:
                refusals += suggest_trace.read_trace(handle, str(cwd))
        except OSError as exc:
            raise UsageError(f"{trace}: cannot read the trace: {exc.strerror}") from None
    recorded = sources.meta.get("agent")
    agent = recorded if isinstance(recorded, str) and recorded else None
    plan = plan_launch(ctx.pm, environ=ctx.environ, cwd=cwd, agent=agent, config_path=config_path)
    policy = plan.policy
    rules, apart = suggest_fs.classify(
        refusals,
        home=policy.home,
        project=policy.cwd,
        rules=[(e.path, e.mode, e.source) for e in policy.fs],
        protected=[(e.path, e.mode, e.source) for e in policy.protected],
    )
    scope = suggest_scope.scope_of(
        policy,
        agent=agent,
        profiles=[r.obj for r in registry.agents(ctx.pm).values()],
        environ=ctx.environ,
        snapshots=plan.settings,
    )
    return FsPart(
        tuple(rules),
        tuple(apart),
        len(refusals),
        scope,
        {u.rule: scope.review(u.rule) for u in rules},
    )


def _print(found: Suggestion, fs: FsPart | None, config: ResolvedConfig, src: Sources) -> None:
    from egg_core.cli.table import render_table

    if src.logs:
        where = ", ".join(str(p) for p in src.logs)
        if src.session:
            where = f"session {src.session} ({where})"
        print(f"read {found.records} requests from {visible(where)}")
    if found.corrupt_lines:
        print(
            f"egg: skipped {found.corrupt_lines} lines that are not decision records",
            file=sys.stderr,
        )
    pending = [h for h in found.hosts if not h.covered]  # the others are in egg.yaml now
    if pending:
        print("\nenforce mode would have refused:")
        several = len(src.logs) > 1
        rows = [
            [
                h.host + ("  (did not resolve)" if h.unresolved else ""),
                ",".join(str(p) for p in sorted(h.ports)),
                str(h.count),
                h.first,
                h.last,
                *([", ".join(h.sources)] if several else []),
            ]
            for h in pending
        ]
        head = ["HOST", "PORTS", "COUNT", "FIRST", "LAST", *(["LOG"] if several else [])]
        print(render_table(head, rows))
    for f in found.folded:
        print(visible(f"folded into {f.entry}: {', '.join(f.replaces)}"))
    if found.refused:
        print("\nnever suggested:")
        for r in found.refused:
            print(f"  {visible(r.host)}:{r.port} ({r.count}x): {visible(r.why)}")
    if fs is None:
        return
    traces = ", ".join(str(t) for t in src.traces)
    gap = "\n" if src.logs else ""
    print(f"{gap}read {fs.calls} refused file operations from {visible(traces)}")
    if fs.rules:
        print("the run was refused writes that these rules allow:")
        rows = [
            [u.rule, _how(fs, u.rule), str(u.count), u.first, u.last, u.examples[0]]
            for u in fs.rules
        ]
        print(render_table(["RULE", "APPLY", "COUNT", "FIRST", "LAST", "FOR EXAMPLE"], rows))
    apart_now = [a for a in fs.refused if not a.covered]  # the others are in egg.yaml now
    if apart_now:
        print("\nnot suggested:")
        for apart in apart_now:
            print(f"  {visible(apart.path)} ({apart.count}x): {visible(apart.why)}")


def _how(fs: FsPart, rule: str) -> str:
    return "review" if fs.review.get(rule) else "auto"


def _print_review(fs: FsPart | None, included: list[str], config: ResolvedConfig) -> bool:
    """The rules --apply leaves to the user: why, and the exact line to add by hand; whether
    there were any."""

    waiting = [r for r in fs.for_review() if r not in included] if fs else []
    if not fs or not waiting:
        return False
    where = visible(str(config.path or "./egg.yaml"))
    print(
        "\nreview by hand (--apply writes an fs rule by itself only inside the project or the "
        f"agent's own directories): add its line to {where} yourself, or pass --apply --include "
        "RULE once you have read it"
    )
    for rule in waiting:
        print(f"  {visible(rule)}: {visible(str(fs.review[rule]))}")
        for line in fs.lines[rule].splitlines():
            print(f"      {visible(line)}")
    return True


def _print_edit(
    found: Suggestion,
    fs_rules: list[str],
    edit: Applied | None,
    problem: str | None,
    config: ResolvedConfig,
    *,
    applied: bool,
    waiting: bool = False,
) -> None:
    if not found.add and not fs_rules:
        if waiting:
            print("\nnothing --apply writes by itself: the rules above are for you to review")
        else:
            print(f"\n{NOTHING_TO_ADD}")
        return
    if edit is None:
        where = config.path or "egg.yaml"
        if found.add:
            print(f"\n{visible(str(where))}: add to network: {visible(', '.join(found.add))}")
        if fs_rules:
            print(f"\n{visible(str(where))}: add to fs: {visible(', '.join(fs_rules))}")
        if problem:
            print(f"--apply cannot edit it: {visible(problem)}")
        return
    if edit.after == edit.before:
        print(f"\n{visible(str(edit.path))}: already has every entry")
    elif applied:
        added = len(edit.added) + len(edit.added_fs)
        print(f"\nwrote {visible(str(edit.path))} ({added} entries added):\n")
        print(visible(edit.diff(), multiline=True), end="")
    else:
        print("\nthe edit (egg policy suggest --apply writes it):\n")
        print(visible(edit.diff(), multiline=True), end="")
    if config.config.network.mode == "observe" and found.add:
        print("\nnext: set network.mode: enforce (observe mode allows everything)")
