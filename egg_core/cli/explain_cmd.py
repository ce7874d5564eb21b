"""``egg explain [AGENT]``: the effective policy, every hole with its reason, and the command.

Environment variables are shown by name only; their values (API keys, tokens) never appear, in
either output form.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Any

from egg_core.cli.context import Context
from egg_core.cli.table import render_table
from egg_core.sanitize import json_text, visible

PLACEHOLDER_WORK_DIR = Path("/run/egg/<session>")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent", nargs="?", metavar="AGENT", help="the agent to explain (default: shell)"
    )
    p.add_argument("--config", metavar="PATH", help="use this egg.yaml instead of discovering one")
    p.add_argument("--platform", metavar="NAME", help="explain for this platform")
    p.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        dest="skip_permissions",
        help="as egg run would with this flag",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(ns: argparse.Namespace, ctx: Context) -> int:
    data = explain_data(ns, ctx)
    if ns.json:
        print(json_text(data))
    else:
        print(visible(render_human(data), multiline=True))
    return 0


def explain_data(ns: argparse.Namespace, ctx: Context) -> dict[str, Any]:
    """What ``egg explain`` shows. A name that is no agent is explained as the command it names
    (as ``egg run`` runs it); no agent and no command either is the error ``egg run`` gives."""
    from egg_core import registry
    from egg_core.launch import find_command, plan_launch
    from egg_core.persistence import agent_guards

    cwd = Path(os.getcwd())
    plan = plan_launch(
        ctx.pm,
        environ=ctx.environ,
        cwd=cwd,
        agent=ns.agent,
        config_path=ns.config,
        platform=ns.platform,
        skip_permissions=ns.skip_permissions,
        allow_unavailable=True,
    )
    if (
        not plan.known_agent
        and find_command(plan.argv[0], plan.env, cwd, plan.policy.tools) is None
    ):
        raise registry.unknown_agent(ctx.pm, plan.profile.name)
    platform = plan.selection.platform
    launch = plan.launch(work_dir=PLACEHOLDER_WORK_DIR, tty=True)
    policy = plan.policy
    extra = platform.describe(launch)
    env_names = sorted({*plan.env, *extra.pop("env_added", [])})
    resolved = plan.resolved
    return {
        "agent": policy.agent,
        "known_agent": plan.known_agent,
        "agent_description": plan.profile.description,
        "platform": platform.name,
        "platform_reason": plan.selection.reason,
        "platform_error": plan.platform_problem,
        "outer_boundary": plan.selection.outer_boundary,
        "requires_sandbox": policy.requires_sandbox,
        "persistence_guards": policy.persistence_guards,
        "clipboard": policy.clipboard,
        "command": platform.command(launch),
        "argv": list(plan.argv),
        "config": {
            "origin": resolved.origin,
            "path": str(resolved.path) if resolved.path else None,
            "files": [str(p) for p in resolved.files],
        },
        "fs": [e.to_json() for e in policy.fs],
        "protected": [e.to_json() for e in policy.protected],
        "agent_guards": agent_guards(plan),
        "network": {
            "mode": policy.mode,
            "need": policy.network_need,
            "domains": list(policy.domains),
            "local_ports": list(policy.local_ports),
        },
        "env": env_names,
        "resources": {
            "cpu_seconds": policy.cpu_seconds,
            "memory_bytes": policy.memory_bytes,
            "max_fds": policy.max_fds,
            "max_pids": policy.max_pids,
            "cpu_per_process_seconds": policy.cpu_per_process_seconds,
        },
        "tools": _tools(ctx, plan),
        "drilled": [h.to_json() for h in policy.drilled],
        "derived": [h.to_json() for h in policy.derived],
        "suppressed": [h.to_json() for h in policy.suppressed],
        **({"platform_detail": extra} if extra else {}),
    }


def _tools(ctx: Context, plan: Any) -> list[dict[str, Any]]:
    """The host tools egg.yaml enables, with where each is defined (or why it cannot be had)."""
    names = list(plan.policy.tools)
    if not names:
        return []
    from egg_core.tools.model import collect

    found = collect(ctx.pm, plan.resolved.config, plan.egg_home)
    tools, problems = found.enabled(names)
    listed = [
        {"name": n, "source": t.source, "description": t.description} for n, t in tools.items()
    ]
    return listed + [{"name": None, "error": problem} for problem in problems]


def _holes(title: str, holes: list[dict[str, str]]) -> list[str]:
    if not holes:
        return [f"{title}: none"]
    rows = [[h["kind"], h["value"], h["agent"], h["reason"]] for h in holes]
    return [f"{title}:", render_table(["KIND", "VALUE", "AGENT", "REASON"], rows)]


def _agent_guards(guards: list[dict[str, str]]) -> list[str]:
    if not guards:
        return ["agent settings put back after the run: none"]
    rows = [[g["kind"], g["path"], g["what"], g["reason"]] for g in guards]
    return [
        "agent settings put back after the run (its read-only directories are above):",
        render_table(["KIND", "PATH", "WHAT", "REASON"], rows),
    ]


def _tools_line(tools: list[dict[str, Any]]) -> str:
    if not tools:
        return "none (egg.yaml tools: [NAME, ...] lets the sandbox call host tools)"
    return "; ".join(
        f"{t['name']} ({t['source']})" if t.get("name") else f"UNAVAILABLE: {t['error']}"
        for t in tools
    )


def _persistence_line(data: dict[str, Any]) -> str:
    if not data["requires_sandbox"]:
        return "none (no sandbox)"
    if data["persistence_guards"]:
        return (
            "persistence guarded: git's configuration and hooks read-only, repositories created "
            "inside audited after the run, agent settings restored"
        )
    return (
        "persistence NOT guarded (egg.yaml: persistence_guards: false): what the sandbox writes "
        "into git's metadata or the agent's settings may run on the host later"
    )


def render_human(data: dict[str, Any]) -> str:
    agent = data["agent"]
    if not data["known_agent"]:
        agent_line = f"{agent} (unknown agent: no plugin registers it; no holes are drilled)"
    else:
        agent_line = f"{agent} ({data['agent_description']})"
    config = data["config"]
    config_line = config["origin"] + (
        f": {' -> '.join(config['files'])}" if config["files"] else ""
    )
    platform_line = f"{data['platform']} ({data['platform_reason']})"
    if data["outer_boundary"]:
        platform_line += f"; outer boundary: {data['outer_boundary']}"
    if data["platform_error"]:
        platform_line += f"; cannot run here: {data['platform_error']}"
    net = data["network"]
    domains = ", ".join(net["domains"]) or "-"
    ports = ", ".join(str(p) for p in net["local_ports"]) or "-"
    res = data["resources"]
    limits = ", ".join(f"{k}={v}" for k, v in res.items() if v is not None) or "none"
    if res.get("max_fds") is not None or res.get("cpu_per_process_seconds") is not None:
        limits += (
            " (max_fds and cpu_per_process: each process; cpu, memory, max_pids: the whole sandbox)"
        )
    lines = [
        render_table(
            ["", ""],
            [
                ["agent", agent_line],
                ["config", config_line],
                ["platform", platform_line],
                [
                    "network",
                    f"{net['need']} ({net['mode']}); domains: {domains}; local ports: {ports}",
                ],
                ["resources", limits],
                ["guards", _persistence_line(data)],
                [
                    "terminal",
                    "clipboard writes (OSC 52) passed to your terminal (clipboard: true)"
                    if data["clipboard"]
                    else "clipboard writes (OSC 52) dropped (clipboard: true allows them)",
                ],
                ["env", ", ".join(data["env"]) + "  (names only)"],
                ["tools", _tools_line(data["tools"])],
            ],
        ).split("\n", 1)[1],
        "",
        "filesystem (later rules win; / is read-only unless a rule says otherwise):",
        render_table(
            ["MODE", "PATH", "SOURCE"],
            [[e["mode"], e["path"], e["source"]] for e in data["fs"] + data["protected"]],
        ),
        "",
        *_agent_guards(data["agent_guards"]),
        "",
        *_holes(f"drilled for {agent}", data["drilled"]),
        "",
        *_holes("derived", data["derived"]),
        "",
        *_holes("suppressed", data["suppressed"]),
        "",
        "command:",
        "  " + shlex.join(data["command"]),
    ]
    detail = data.get("platform_detail") or {}
    for key, value in detail.items():
        lines += ["", f"{key}:", str(value)]
    return "\n".join(lines)
