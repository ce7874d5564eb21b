"""``egg policy suggest --apply`` writes an ``fs`` rule by itself only inside a scope that is safe
by construction: the project (not another repository nested in it, not egg's protections) and
the recorded agent's own state directories. Every other rule — the places the issue found the
host running code from among them — is shown for review with the line to add, and written only
when the user names it with ``--include``. The real traced run is in
tests/linux/test_suggest_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from egg_core.config.files import discover_config
from egg_core.config.model import default_config, merge_configs
from egg_core.config.parsing import load_config_string
from egg_core.errors import EggError
from egg_core.policy import EffectivePolicy, FsEntry
from egg_core.protections import protected_paths
from egg_core.resolution import resolve_policy
from egg_core.suggest.apply import apply_entries
from egg_core.suggest.scope import Scope, scope_of
from tests.policy.conftest import profile

EGG = [sys.executable, "-P", "-m", "egg_core.cli"]
E = " = -1 EROFS (Read-only file system)"
AGENTS = ("claude", "codex", "gemini", "opencode", "cursor", "shell")

#: (what the run wrote, the rule it proposes): the issue's reproductions, each a place the
#: host runs code from that no list of bad places had
REPRODUCED = [
    (".ipython/profile_default/history.sqlite", "rw:~/.ipython/profile_default"),  # startup/
    (".oh-my-zsh/custom/plugins.zsh", "rw:~/.oh-my-zsh/custom"),
    ("src/other/pkg/build/out.o", "rw:~/src/other/pkg/build"),  # another repository's worktree
    (".cargo/config.toml", "rw:~/.cargo/config.toml"),  # build.rustc-wrapper runs
    (".config/starship.toml", "rw:~/.config/starship.toml"),
    (".config/wezterm/wezterm.lua", "rw:~/.config/wezterm"),
    (".config/nushell/config.nu", "rw:~/.config/nushell"),
    (".config/tmux/tmux.conf", "rw:~/.config/tmux"),
    (".config/zsh/.zshrc", "rw:~/.config/zsh"),
]
#: files that exist on the host and are written in place (the rest are created)
EXISTING = (".cargo/config.toml", ".config/starship.toml")


def home_tree(home: Path) -> Path:
    """A home with the issue's places, another repository, and a project with a nested one."""
    for d in (
        ".ipython/profile_default/startup",
        ".oh-my-zsh/custom",
        "src/other/.git",
        "src/other/pkg/build",
        ".cargo",
        ".config/wezterm",
        ".config/nushell",
        ".config/tmux",
        ".config/zsh",
        "proj/build",
        "proj/vendor/lib/.git",
        "proj/vendor/lib/src",
    ):
        (home / d).mkdir(parents=True, exist_ok=True)
    for f in EXISTING:
        (home / f).write_text("")
    return home / "proj"


def trace_line(path: Path, existing: bool = False) -> str:
    flags = "O_WRONLY|O_TRUNC" if existing else "O_WRONLY|O_CREAT|O_TRUNC, 0666"
    return f'1 10:00:00.000001 openat(AT_FDCWD, "{path}", {flags}){E}\n'


def egg(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EGG, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(home, project, environment) with the issue's places made and a read-only project."""
    home = tmp_path / "home"
    project = home_tree(home)
    (project / "egg.yaml").write_text("network: none   # no network\nfs: [ro:.]\n")
    env = {**os.environ, "HOME": str(home), "EGG_HOME": str(tmp_path / "egg-home")}
    return home, project, env


def test_the_issues_places_are_shown_for_review_and_written_only_when_named(run_dir):
    home, project, env = run_dir
    trace = home / "trace.log"
    lines = [trace_line(home / wrote, wrote in EXISTING) for wrote, _ in REPRODUCED]
    lines.append(trace_line(project / "build/out.o"))  # the project: written by itself
    lines.append(trace_line(project / "vendor/lib/src/x.c"))  # another repository in it
    trace.write_text("".join(lines))
    before = (project / "egg.yaml").read_text()
    applied = egg(env, project, "policy", "suggest", "--trace", str(trace), "--apply")
    assert applied.returncode == 0, applied.stderr
    written = (project / "egg.yaml").read_text()
    assert written == before.replace("[ro:.]", "[ro:., 'rw:~/proj/build']")  # that one alone
    for _, rule in REPRODUCED:
        assert f"  {rule}: outside the project ({project})\n" in applied.stdout
        # the exact line to put there, after what --apply wrote
        assert f"      fs: [ro:., 'rw:~/proj/build', '{rule}']\n" in applied.stdout
    assert "rw:~/proj/vendor/lib/src: it is inside the repository" in applied.stdout

    data = json.loads(
        egg(env, project, "policy", "suggest", "--trace", str(trace), "--json").stdout
    )
    fs = data["fs"]
    review = [rule for _, rule in REPRODUCED] + ["rw:~/proj/vendor/lib/src"]
    assert sorted(fs["review"]) == sorted(review) and fs["automatic"] == []
    shown = {r["rule"]: r for r in fs["rules"]}
    assert {shown[rule]["apply"] for rule in review} == {"review"}
    assert shown["rw:~/.cargo/config.toml"]["why_review"] == f"outside the project ({project})"
    assert shown["rw:~/.cargo/config.toml"]["line"] == (
        "fs: [ro:., 'rw:~/proj/build', 'rw:~/.cargo/config.toml']"
    )
    assert not data["applied"] and data["diff"] == ""

    named = [arg for rule in review for arg in ("--include", rule)]
    included = egg(env, project, "policy", "suggest", "--trace", str(trace), "--apply", *named)
    assert included.returncode == 0, included.stderr
    rules = [str(r) for r in load_config_string((project / "egg.yaml").read_text()).fs]
    assert rules == ["ro:.", "rw:~/proj/build", *sorted(review)]


def test_an_include_that_names_no_suggestion_is_one_line_exit_2_and_writes_nothing(run_dir):
    home, project, env = run_dir
    trace = home / "trace.log"
    trace.write_text(trace_line(home / ".config/zsh/.zshrc") + trace_line(project / "build/o"))
    before = (project / "egg.yaml").read_text()
    preview = egg(
        env, project, "policy", "suggest", "--trace", str(trace), "--include", "rw:~/.config/zsh"
    )
    assert preview.returncode == 0, preview.stderr
    assert "+network: none   # no network\n" not in preview.stdout  # only the fs line changes
    assert "+fs: [ro:., 'rw:~/.config/zsh', 'rw:~/proj/build']\n" in preview.stdout
    assert (project / "egg.yaml").read_text() == before  # without --apply nothing is written
    for bogus in ("rw:~/.config", "rw:~/.config/zsh/", "~/.config/zsh", "rw:~/.ssh"):
        refused = egg(
            env, project, "policy", "suggest", "--trace", str(trace), "--apply", "--include", bogus
        )
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.strip().splitlines() == [
            f"egg: error: --include {bogus}: not among this run's suggestions "
            "(name a rule exactly as egg policy suggest shows it)"
        ]
        assert (project / "egg.yaml").read_text() == before


def ended_session(egg_home: Path, name: str, agent: str, project: Path, trace: str) -> None:
    """An ended session's record as egg run leaves it: its meta (the agent it recorded, where
    it ran, the egg.yaml it used) and its trace."""
    directory = egg_home / "sessions" / name
    directory.mkdir(parents=True)
    meta = {"state": "exited", "agent": agent, "cwd": str(project)}
    (directory / "egg.meta").write_text(json.dumps({**meta, "config": str(project / "egg.yaml")}))
    (directory / "trace.log").write_text(trace)


def test_the_sessions_recorded_agent_decides_whose_directories_are_applied(run_dir):
    home, project, env = run_dir
    (home / ".codex/sessions/2026").mkdir(parents=True)
    (project / "egg.yaml").write_text("network: none\nfs: ['ro:~/.codex']\n")
    trace = trace_line(home / ".codex/sessions/2026/rollout.jsonl")
    trace += trace_line(home / ".config/zsh/.zshrc")
    ended_session(Path(env["EGG_HOME"]), "s-codex", "codex", project, trace)
    ended_session(Path(env["EGG_HOME"]), "s-shell", "shell", project, trace)
    as_shell = json.loads(egg(env, project, "policy", "suggest", "s-shell", "--json").stdout)
    assert sorted(as_shell["fs"]["review"]) == ["rw:~/.codex/sessions/2026", "rw:~/.config/zsh"]
    applied = egg(env, project, "policy", "suggest", "s-codex", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert (project / "egg.yaml").read_text() == (
        "network: none\nfs: ['ro:~/.codex', 'rw:~/.codex/sessions/2026']\n"
    )
    assert "  rw:~/.config/zsh: outside the project" in applied.stdout
    assert f"and codex's own directories ({home}/.codex, " in applied.stdout


# -- the scope itself, against real policies of the built-in profiles


def policy_for(home: Path, project: Path, agent: str, text: str = "") -> EffectivePolicy:
    """The policy a run gets, egg's own protections included (as plan_launch makes it)."""
    config = merge_configs(default_config(), load_config_string(text, "egg.yaml"), home)
    protected = protected_paths([], home / ".egg", cwd=project)
    return resolve_policy(
        config, profile(agent), home=home, cwd=project, environ={}, protected=protected
    )


def scope(policy: EffectivePolicy, agent: str | None) -> Scope:
    profiles = [profile(name) for name in AGENTS]
    return scope_of(policy, agent=agent, profiles=profiles, environ={})


@pytest.mark.parametrize(("wrote", "rule"), REPRODUCED)
def test_no_agent_makes_the_issues_places_automatic(tmp_path: Path, wrote: str, rule: str):
    home = tmp_path / "home"
    project = home_tree(home)
    for agent in AGENTS:
        why = scope(policy_for(home, project, agent), agent).review(rule)
        assert why is not None and why.startswith("outside the project"), (agent, why)


def test_a_project_path_is_automatic_and_its_nested_repository_is_not(tmp_path: Path):
    home = tmp_path / "home"
    project = home_tree(home)
    (project / "deep/tree").mkdir(parents=True)
    (project / "deep/tree/sub.git").mkdir()
    for marker in ("objects", "refs"):
        (project / "deep/tree/sub.git" / marker).mkdir()
    (project / "deep/tree/sub.git/HEAD").write_text("ref: refs/heads/main\n")
    (project / "linked").symlink_to(home / ".config/zsh")
    found = scope(policy_for(home, project, "shell"), "shell")
    assert found.review("rw:~/proj/build") is None
    assert found.review(f"rw:{project}/build/new") is None  # absolute or ~: the same path
    assert found.review("rw:~/proj/vendor/lib/src").startswith(
        f"it is inside the repository {project}/vendor/lib"
    )
    assert found.review("rw:~/proj/vendor").startswith("it holds the repository")
    assert found.review("rw:~/proj/deep").startswith("it holds the git directory")
    assert found.review("rw:~/proj/.git/objects").startswith("it is inside the git directory")
    assert found.review("rw:~/proj/linked").startswith("it is reached through a symlink")
    assert found.review("ro:~/proj/build") == "only rw: rules are written by --apply"


def test_the_project_is_no_scope_when_it_holds_the_home_or_sits_at_the_root(tmp_path: Path):
    home = tmp_path / "home"
    home_tree(home)
    at_home = scope(policy_for(home, home, "shell"), "shell")
    assert at_home.roots == ()
    assert "holds the home directory" in str(at_home.review("rw:~/.config/zsh"))
    at_root = scope(policy_for(home, Path("/"), "shell"), "shell")
    assert at_root.roots == () and at_root.review("rw:/usr/lib") is not None


def test_a_deny_a_cache_a_narrower_read_only_rule_and_egg_protections_stay(tmp_path: Path):
    home = tmp_path / "home"
    project = home_tree(home)
    for d in ("secrets/x", "node_modules/x", "docs/x", "hooked/x"):
        (project / d).mkdir(parents=True)
    text = "fs: ['deny-write:./secrets', 'cache:./node_modules', 'ro:./docs', 'ro:.']\n"
    policy = policy_for(home, project, "shell", text)
    guard = FsEntry("deny-write", str(project / "hooked"), "egg: a guard")
    found = scope(attrs_evolve(policy, protected=(*policy.protected, guard)), "shell")
    assert found.review("rw:~/proj/secrets/x").startswith("it is under deny-write:")
    assert found.review("rw:~/proj/node_modules/x").startswith("it is under cache:")
    assert found.review("rw:~/proj/docs/x").startswith("it is under ro:")
    assert found.review("rw:~/proj/hooked/x").startswith("it is under deny-write:")
    assert found.review("rw:~/proj/egg.yaml").startswith("it is under deny-write:")
    assert found.review("rw:~/proj/build") is None  # ro:. is what the rule is about


def test_an_agents_guarded_paths_are_never_automatic_whichever_agent_ran(tmp_path: Path):
    home = tmp_path / "home"
    project = home_tree(home)
    (project / ".claude").mkdir()
    (project / ".gemini/extensions").mkdir(parents=True)
    found = scope(policy_for(home, project, "shell"), "shell")
    assert "claude's project settings" in str(found.review("rw:~/proj/.claude"))
    assert "gemini's project settings" in str(found.review("rw:~/proj/.gemini"))
    assert "gemini's project code" in str(found.review("rw:~/proj/.gemini/extensions/x"))
    assert found.review("rw:~/proj/.gemini/other") is None


def test_the_recorded_agents_own_directories_are_automatic_but_not_what_it_guards(
    tmp_path: Path,
):
    home = tmp_path / "home"
    project = home_tree(home)
    (home / ".codex/sessions").mkdir(parents=True)
    (home / ".claude/plugins").mkdir(parents=True)
    codex = scope(policy_for(home, project, "codex", "fs: ['ro:~/.codex']\n"), "codex")
    assert codex.review("rw:~/.codex/sessions") is None
    assert codex.review("rw:~/.cache/codex/x") is None
    assert "codex's settings" in str(codex.review("rw:~/.codex"))
    assert "codex's settings" in str(codex.review("rw:~/.codex/work.config.toml"))
    assert codex.review("rw:~/.claude/todos").startswith("outside the project")  # not its own
    # the session's recorded agent decides: without one, nobody's directories count
    assert scope(policy_for(home, project, "codex"), None).review("rw:~/.codex/sessions")
    claude = scope(policy_for(home, project, "claude"), "claude")
    assert claude.review("rw:~/.claude/todos") is None
    assert "claude's code" in str(claude.review("rw:~/.claude/plugins/x"))
    assert claude.review("rw:~/.claude.json") is not None  # a prefix's sibling is not its dir
    (home / ".codex/sessions/.git").mkdir()
    assert codex.review("rw:~/.codex/sessions").startswith("it is inside the repository")
    (home / ".codex/log/checkout/.git").mkdir(parents=True)
    assert codex.review("rw:~/.codex/log").startswith("it holds the repository")


def test_a_relocation_that_names_the_home_is_no_scope(tmp_path: Path):
    home = tmp_path / "home"
    project = home_tree(home)
    config = merge_configs(default_config(), load_config_string("", "egg.yaml"), home)
    moved = resolve_policy(
        config, profile("codex"), home=home, cwd=project, environ={"CODEX_HOME": str(home)}
    )
    found = scope_of(moved, agent="codex", profiles=[profile("codex")], environ={})
    assert str(home) not in [r.path for r in found.roots]
    assert found.review("rw:~/.config/zsh").startswith("outside the project")


def test_a_tree_too_large_to_look_through_is_reviewed(tmp_path: Path, monkeypatch):
    from egg_core.suggest import scope as suggest_scope

    home = tmp_path / "home"
    project = home_tree(home)
    for i in range(12):
        (project / "build" / f"d{i}").mkdir()
    monkeypatch.setattr(suggest_scope, "SCAN_LIMIT", 10)
    found = scope(policy_for(home, project, "shell"), "shell")
    assert found.review("rw:~/proj/build").startswith("it holds more than 10 entries")


def test_apply_refuses_a_rule_outside_the_scope_unless_it_is_named(tmp_path: Path):
    home = tmp_path / "home"
    project = home_tree(home)
    (project / "egg.yaml").write_text("network: none\n")
    env = {**os.environ, "HOME": str(home), "EGG_HOME": str(tmp_path / "egg-home")}
    resolved = discover_config(project, None, env)
    found = scope(policy_for(home, project, "shell"), "shell")
    for review in (found.review, None):
        with pytest.raises(EggError, match=r"refusing to add rw:~/.config/zsh \(.*nothing written"):
            apply_entries(resolved, [], env, ["rw:~/.config/zsh"], review=review)
        assert (project / "egg.yaml").read_text() == "network: none\n"
    done = apply_entries(
        resolved, [], env, ["rw:~/.config/zsh"], review=found.review, included=["rw:~/.config/zsh"]
    )
    assert done.added_fs == ("rw:~/.config/zsh",)


def attrs_evolve(policy: EffectivePolicy, **changes: object) -> EffectivePolicy:
    import attrs

    return attrs.evolve(policy, **changes)
