"""The engine's parts as folders (issue #34): every engine module lives in a part (core, training, cost,
serving, serving_cost, rl, capacity, design); a part imports only itself and the parts the table below allows
(training and serving never import cost: serving_cost prices the serving engine's answer); nothing in the
engine imports apps, django, celery, rest_framework or the rest of the project. Every import statement is read
with ast, at module level or inside a function, absolute or relative. The table is also written in
clusterdesigner/engine/__init__.py."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import clusterdesigner.engine

ENGINE = Path(__file__).resolve().parents[2] / "clusterdesigner" / "engine"
PREFIX = "clusterdesigner.engine"

# part -> the parts it may import besides itself (lower parts first; the graph has no cycle)
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "training": frozenset({"core"}),
    "cost": frozenset({"core"}),
    "serving": frozenset({"core"}),
    "serving_cost": frozenset({"core", "cost", "serving"}),
    "rl": frozenset({"core", "training", "cost", "serving"}),
    "capacity": frozenset({"core", "cost"}),
    "design": frozenset({"core", "training", "cost", "serving", "serving_cost", "rl", "capacity"}),
}
FORBIDDEN = frozenset({"apps", "django", "celery", "rest_framework", "clusterdesigner"})
OUTSIDE = "the engine imports no app, Django, Celery, DRF or project module outside it"


def _targets(module: str, tree: ast.AST, parts: Mapping[str, frozenset[str]]) -> set[str]:
    """What ``module`` ("part.name") imports: "part.name" for an engine module, "part" for a bare part, and
    the top-level package name for anything outside the engine."""
    found: set[str] = set()
    package = ["clusterdesigner", "engine", *module.split(".")[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {_name(a.name, parts) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            target = _name(base, parts)
            if target in parts or target == "":  # from <part> import module, or from engine import part
                found |= {_name(f"{base}.{a.name}", parts) for a in node.names}
            else:
                found.add(target)
    return found


def _name(dotted: str, parts: Mapping[str, frozenset[str]]) -> str:
    if dotted == PREFIX:
        return ""
    if dotted.startswith(PREFIX + "."):
        return ".".join(dotted[len(PREFIX) + 1 :].split(".")[:2])
    return dotted.split(".")[0]


def violations(sources: Mapping[str, str], allowed: Mapping[str, frozenset[str]] = ALLOWED) -> list[str]:
    """Every import that breaks a rule, as "module -> target: why", of modules as {"part.name": code}."""
    found = []
    for module, source in sorted(sources.items()):
        part = module.split(".")[0]
        for target in sorted(_targets(module, ast.parse(source), allowed)):
            other = target.split(".")[0]
            if other in FORBIDDEN:
                found.append(f"{module} -> {target}: {OUTSIDE}")
            elif other in allowed and other != part and other not in allowed[part]:
                found.append(f"{module} -> {target}: {part} may import only {sorted(allowed[part])}")
    return found


def _engine_sources() -> dict[str, str]:
    return {
        f"{path.parent.name}.{path.stem}": path.read_text()
        for path in ENGINE.glob("*/*.py")
        if path.stem != "__init__"
    }


def test_every_engine_module_lives_in_a_part() -> None:
    top = sorted(p.name for p in ENGINE.glob("*.py") if p.name != "__init__.py")
    assert top == [], f"modules at the engine's top level (run the layout script, or move them): {top}"
    folders = sorted(p.name for p in ENGINE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(ALLOWED)
    assert all((ENGINE / part / "__init__.py").exists() for part in ALLOWED)


def test_the_engine_keeps_the_import_rules() -> None:
    sources = _engine_sources()
    assert len(sources) > 40 and "training.training" in sources and "cost.cost" in sources  # read at all
    assert violations(sources) == []


def test_the_checker_catches_each_kind_of_violation() -> None:
    fake = {
        # training imports cost: refused (training never imports cost)
        "training.fake": "from clusterdesigner.engine.cost.cashflow import npv\n",
        # serving imports cost inside a function, by a part import: refused
        "serving.fake": "def f():\n    from clusterdesigner.engine.cost import defaults\n",
        # a relative import from core to training: refused
        "core.fake": "from ..training import timing\n",
        # an engine module importing Django, an app or the project outside the engine: refused
        "cost.fake": "import django.db\nfrom apps.designs import services\n"
        "from clusterdesigner import memo\n",
        # allowed: design imports rl, rl imports serving, capacity imports cost, numpy is outside the rules
        "design.ok": "from clusterdesigner.engine.rl import rl\nimport numpy as np\n",
        "rl.ok": "from clusterdesigner.engine.serving.serving import estimate\n",
        "capacity.ok": "from clusterdesigner.engine.cost import rent_own\nfrom . import capacity\n",
    }
    assert violations(fake) == [
        "core.fake -> training.timing: core may import only []",
        f"cost.fake -> apps: {OUTSIDE}",
        f"cost.fake -> clusterdesigner: {OUTSIDE}",
        f"cost.fake -> django: {OUTSIDE}",
        "serving.fake -> cost.defaults: serving may import only ['core']",
        "training.fake -> cost.cashflow: training may import only ['core']",
    ]
    # serving's pricing imports (issue 34) are refused in serving and allowed in serving_cost, which serving
    # itself may not import back
    pricing = (
        "from clusterdesigner.engine.cost.cost import tco\nfrom clusterdesigner.engine.cost import rent_own\n"
    )
    assert violations({"serving.serving": pricing}) == [
        f"serving.serving -> cost.{name}: serving may import only ['core']" for name in ("cost", "rent_own")
    ]
    assert violations({"serving_cost.serving_cost": pricing + "from ..serving import serving\n"}) == []
    assert violations({"serving.fake": "from clusterdesigner.engine.serving_cost import serving_cost\n"}) == [
        "serving.fake -> serving_cost.serving_cost: serving may import only ['core']"
    ]


def test_the_allowed_table_has_no_cycle() -> None:
    order: list[str] = []
    while len(order) < len(ALLOWED):
        ready = [p for p, deps in ALLOWED.items() if p not in order and deps <= set(order)]
        assert ready, f"a cycle among {sorted(set(ALLOWED) - set(order))}"
        order += sorted(ready)
    assert "cost" not in ALLOWED["training"] | ALLOWED["serving"]


def test_the_engine_docstring_states_the_table() -> None:
    doc = clusterdesigner.engine.__doc__ or ""
    for part, deps in ALLOWED.items():
        order = [p for p in ALLOWED if p in deps]
        assert f"    {part:<9} -> {', '.join(order) or '(nothing)'}" in doc
    assert "exception" not in doc.lower()  # the table has none left (issue 34)
    for part in ALLOWED:
        part_doc = (ENGINE / part / "__init__.py").read_text()
        assert "public:" in part_doc and "May import:" in part_doc, part
