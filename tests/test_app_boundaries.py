"""The apps import each other one way only: the import graph between apps/* (every import statement, at
module level or inside a function, read with ast) has no cycle, and no app imports another's private name."""

from __future__ import annotations

import ast
from pathlib import Path

APPS = Path(__file__).resolve().parent.parent / "apps"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``import apps.x…`` and ``from apps.x… import names`` in the file."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names)
    return [(module, names) for module, names in found if module.startswith("apps.")]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {p.name: set() for p in APPS.iterdir() if (p / "__init__.py").exists()}
    for app in graph:
        for path in (APPS / app).rglob("*.py"):
            for module, _ in _imports(path):
                other = module.split(".")[1]
                if other != app:
                    graph[app].add(other)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of apps, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(app: str) -> list[str] | None:
        state[app] = 1
        stack.append(app)
        for other in sorted(graph.get(app, ())):
            if state.get(other) == 1:
                return stack[stack.index(other) :] + [other]
            if other not in state and (found := visit(other)):
                return found
        stack.pop()
        state[app] = 2
        return None

    for app in sorted(graph):
        if app not in state and (found := visit(app)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_import_graph_between_apps_has_no_cycle() -> None:
    graph = _graph()
    assert graph["analysis"] >= {"designs"}  # the graph is read at all
    assert _cycle(graph) is None, f"import cycle between apps: {' → '.join(_cycle(graph) or [])}"


def test_no_app_imports_another_apps_private_names() -> None:
    private = []
    for path in APPS.rglob("*.py"):
        app = path.relative_to(APPS).parts[0]
        for module, names in _imports(path):
            if module.split(".")[1] != app:
                private += [f"{path.relative_to(APPS)}: {module}.{n}" for n in names if n.startswith("_")]
    assert private == []


def test_no_peer_app_imports_the_dashboard() -> None:
    """The dashboard is the pages' app; what other apps' pages share with it (chart palette, layout, escaping,
    a chart packed for the template) lives in clusterdesigner/charts.py, which any app may import."""
    found = []
    for path in APPS.rglob("*.py"):
        app = path.relative_to(APPS).parts[0]
        if app != "dashboard":
            dashboard = [m for m, _ in _imports(path) if m.startswith("apps.dashboard")]
            found += [f"{path.relative_to(APPS)}: {m}" for m in dashboard]
    assert found == []
