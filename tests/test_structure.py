"""The shape of the tree: egg_core's rooms (its top-level modules and packages) depend on each
other in one direction only, so each can be read, tested and replaced from the bottom up.

An import counts wherever it is — at the top, inside a function, under ``TYPE_CHECKING`` — since
each is a dependency of the design even when it costs nothing at run time; a cycle is named with
the import that closes it. Cycles inside one package (its own modules) are the package's affair.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Collection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "egg_core"


def room_of(module: str) -> str | None:
    """The room of ``egg_core``'s a module belongs to (its first name below egg_core)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "egg_core" and len(parts) > 1 else None


def module_name(path: Path) -> str:
    """The dotted name ``path`` is imported as (``plugins/`` is the ``egg_plugins`` package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "plugins":
        parts[0] = "egg_plugins"
    return ".".join(parts).removesuffix(".__init__")


def imports_of(path: Path, modules: Collection[str] = ()) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, relative ones resolved; ``from egg_core import
    x`` names ``egg_core.x``, and ``from package import x`` names ``package.x`` when that is one
    of ``modules``."""
    dotted = module_name(path)
    package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                named = f"{module}.{alias.name}"
                submodule = module == "egg_core" or named in modules
                found.append((node.lineno, named if submodule else module))
    return found


def room_graph() -> dict[str, dict[str, str]]:
    """room -> {room it imports: where (file:line, the first such import)}."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        source = room_of(module_name(path))
        if source is None:
            continue
        for line, module in imports_of(path):
            target = room_of(module)
            if target is not None and target != source:
                where = f"{path.relative_to(ROOT)}:{line}"
                graph.setdefault(source, {}).setdefault(target, where)
    return graph


def cycle_in(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """One cycle of ``graph`` as its rooms in order (the first back to the start), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(room: str) -> list[str] | None:
        state[room] = "open"
        path.append(room)
        for target in sorted(graph.get(room, {})):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        state[room] = "done"
        path.pop()
        return None

    for room in sorted(graph):
        if room not in state and (found := visit(room)) is not None:
            return found
    return None


def test_the_core_s_rooms_import_each_other_in_one_direction() -> None:
    graph = room_graph()
    cycle = cycle_in(graph)
    where = [graph[a][b] for a, b in itertools.pairwise(cycle)] if cycle else []
    assert cycle is None, f"an import cycle: {' -> '.join(cycle or [])} ({', '.join(where)})"
    assert graph["cli"] and graph["session"]  # (the scan sees imports)


def test_a_cycle_is_found_and_named() -> None:
    """The finder itself: a cycle closed by a function's own import is one."""
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2"}, "c": {"a": "c.py:9"}, "d": {"a": "d.py:1"}}
    assert cycle_in(graph) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b": "x"}, "b": {}}) is None


def module_graph() -> dict[str, dict[str, str]]:
    """module -> {module it imports: where}, for every module of egg_core and the built-in
    plugins (``egg_plugins`` is plugins/), type-only and function-level imports included: a
    cycle of types is still two modules that cannot be understood, or moved, one without the
    other. ``from package import name`` names the submodule when there is one."""
    paths = [*CORE.rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]
    modules = {module_name(path): path for path in paths}
    graph: dict[str, dict[str, str]] = {}
    for name, path in sorted(modules.items()):
        for line, target in imports_of(path, modules):
            if target in modules and target != name:
                graph.setdefault(name, {}).setdefault(target, f"{path.relative_to(ROOT)}:{line}")
    return graph


def test_no_two_modules_import_each_other_even_for_types() -> None:
    """farm-studio's circles: none, not even of names imported only for type checking (a module
    that needs another's type says what it needs as a Protocol of its own instead)."""
    graph = module_graph()
    cycle = cycle_in(graph)
    where = [graph[a][b] for a, b in itertools.pairwise(cycle)] if cycle else []
    assert cycle is None, f"an import cycle: {' -> '.join(cycle or [])} ({', '.join(where)})"
    assert graph["egg_core.session.daemon"]["egg_core.session.serving"]  # (the scan sees them)


#: the modules whose looks at the host decide a launch (what the exec cache stores rests on
#: them), and in each the functions that run after a run instead (an audit's, a fact builder's:
#: nothing they see is part of a decision)
DECISIONS = {
    "egg_core/git/layout.py": set(),
    "egg_core/git/guard.py": {
        "watch_facts",
        "changed",
        "audit",
        "check",
        "_source_facts",
        "quarantine_hooks",
    },
    "egg_core/resolution.py": set(),
    "egg_core/protections.py": set(),
    "egg_core/policy.py": set(),
    "egg_core/config/files.py": set(),
    "egg_core/plugincode.py": set(),
    "egg_core/git/pointers.py": set(),
    "plugins/platforms/linux/trust.py": set(),
    "plugins/platforms/linux/bwrap.py": set(),
    "plugins/platforms/linux/network.py": set(),
    "plugins/platforms/linux_ns.py": set(),
    "plugins/platforms/linux/mountplan.py": set(),
    "egg_core/persistence.py": set(),
    "egg_core/launch.py": set(),
}
#: what ``os`` answers about the host (their egg_core.observe namesakes record it)
LOOKS = {
    "lexists",
    "exists",
    "isfile",
    "isdir",
    "islink",
    "stat",
    "lstat",
    "realpath",
    "listdir",
    "scandir",
    "access",
    "readlink",
    "samefile",
    "getsize",
    "getmtime",
    "walk",
}


def direct_looks(path: Path, after_run: set[str]) -> list[str]:
    """``os.X(...)``/``os.path.X(...)`` calls of :data:`LOOKS` in ``path``, by line, outside the
    functions in ``after_run`` and the lines that say why they are no fact (:func:`said_why`)."""
    found = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and function is None:
                inner = child.name
            call = child.func if isinstance(child, ast.Call) else None
            looks = isinstance(call, ast.Attribute) and call.attr in LOOKS
            direct = looks and ast.unparse(call.value) in ("os", "os.path")
            if direct and function not in after_run and not said_why(lines, child):
                found.append(f"{path.relative_to(ROOT)}:{child.lineno} {ast.unparse(call)}")
            visit(child, inner)

    text = path.read_text()
    lines = text.splitlines()
    visit(ast.parse(text), None)
    return found


#: what a line says when its direct look is deliberately no fact of the exec cache's entry
NOT_A_FACT = "# not a fact: "


def said_why(lines: list[str], node: ast.AST) -> bool:
    """Whether a line of ``node`` says why its look is no fact (NOT_A_FACT and a reason): egg's
    own per-run files, or what another recorded look already pins."""
    span = range(node.lineno - 1, (getattr(node, "end_lineno", None) or node.lineno))
    return any(NOT_A_FACT in lines[i] and lines[i].split(NOT_A_FACT)[1].strip() for i in span)


def test_decision_modules_look_at_the_host_only_through_observe() -> None:
    """The exec cache is right only if every host observation a launch decision rests on is
    recorded: in the modules that decide, every look goes through egg_core.observe."""
    offenders = [
        look for name, after in DECISIONS.items() for look in direct_looks(ROOT / name, after)
    ]
    assert offenders == []
    # (the scan sees a direct look where there is one: the audit's own)
    assert direct_looks(ROOT / "egg_core/git/guard.py", set())


#: how long a module may be before its docstring must say why it is one module
LONG_MODULE = 450


def test_a_module_over_450_lines_says_why_it_is_one() -> None:
    """A room with one job: a module past LONG_MODULE lines is split, or its docstring has a
    paragraph starting "Why one module" that says what would be lost by a split."""
    unexplained = []
    for path in sorted([*CORE.rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]):
        text = path.read_text()
        if text.count("\n") <= LONG_MODULE:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if "\nWhy one module" not in "\n" + docstring:
            unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not unexplained, f"long modules that do not say why they are one: {unexplained}"
