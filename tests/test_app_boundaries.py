"""The apps import each other one way only: the import graph between apps/* (every import statement, at
module level or inside a function, read with ast) has no cycle, and no app imports another's private name.
Each app is in its own room: no peer app imports the dashboard, no app subclasses another app's views (an app
serves its own API; a peer adds behaviour through a registered service), and the engine imports no app and
no web framework."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "apps"
ENGINE = ROOT / "clusterdesigner" / "engine"
# What the engine may not import: the apps, and the web and task frameworks (it is pure Python math).
NOT_FOR_THE_ENGINE = {"apps", "django", "rest_framework", "drf_spectacular", "celery", "kombu", "plotly"}


def _all_imports(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names) of every absolute ``import m`` and ``from m import names`` in the tree."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names)
    return found


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``import apps.x…`` and ``from apps.x… import names`` in the file."""
    found = _all_imports(ast.parse(path.read_text(), filename=str(path)))
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


def _bound_names(tree: ast.AST) -> dict[str, str]:
    """Each name an import binds, with the dotted path it stands for (``designs_api`` -> ``apps.designs.api``,
    ``DesignViewSet`` -> ``apps.designs.api.DesignViewSet``)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            bound.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:  # ``import a.b`` binds a; ``import a.b as c`` binds c to a.b
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
    return bound


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (head := _dotted(node.value)):
        return f"{head}.{node.attr}"
    return None


def _foreign_view_bases(source: str, app: str) -> list[str]:
    """The bases of the source's classes that are another app's views: a class from ``apps.<other>.api``, a
    ``views`` module or a ``*_views`` module."""
    tree = ast.parse(source)
    bound = _bound_names(tree)
    found = []
    for node in ast.walk(tree):
        for base in node.bases if isinstance(node, ast.ClassDef) else []:
            name = _dotted(base) or ""
            head, _, rest = name.partition(".")
            path = ".".join(p for p in (bound.get(head, head), rest) if p).split(".")
            if path[0] == "apps" and len(path) > 3 and path[1] != app:
                if path[2] in ("api", "views") or path[2].endswith("_views"):
                    found.append(f"{node.name}({'.'.join(path)})")
    return found


def test_the_subclass_finder_finds_another_apps_view() -> None:
    source = (
        "from apps.designs import api as designs_api\n"
        "from apps.designs.views import Page\n"
        "import apps.plans.api\n"
        "from apps.designs.models import Design\n"
        "class A(designs_api.DesignViewSet): ...\n"
        "class B(Page): ...\n"
        "class C(apps.plans.api.PlanViewSet): ...\n"
        "class D(Design): ...\n"
    )
    assert _foreign_view_bases(source, "analysis") == [
        "A(apps.designs.api.DesignViewSet)",
        "B(apps.designs.views.Page)",
        "C(apps.plans.api.PlanViewSet)",
    ]
    assert _foreign_view_bases(source, "designs") == ["C(apps.plans.api.PlanViewSet)"]


def test_no_app_subclasses_another_apps_views() -> None:
    """An app serves its own API: the analysis app adds a searched design's evaluation to the designs API
    through apps/designs/runners.py (registered in its AppConfig.ready), not by subclassing DesignViewSet."""
    found = []
    for path in APPS.rglob("*.py"):
        app = path.relative_to(APPS).parts[0]
        found += [f"{path.relative_to(APPS)}: {b}" for b in _foreign_view_bases(path.read_text(), app)]
    assert found == []


def test_the_engine_imports_no_app_and_no_web_framework() -> None:
    found = []
    for path in ENGINE.rglob("*.py"):
        modules = [m for m, _ in _all_imports(ast.parse(path.read_text(), filename=str(path)))]
        found += [
            f"{path.relative_to(ENGINE)}: {m}" for m in modules if m.split(".")[0] in NOT_FOR_THE_ENGINE
        ]
    assert found == []
    assert len(list(ENGINE.rglob("*.py"))) > 10  # the engine's files are read at all
