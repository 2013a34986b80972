"""One sha256 per group of figures, and one over all, to show a refactor moved no figure (issue 34).

    DJANGO_DEBUG=1 .venv/bin/python bench/figures_hash.py [--dump DIR]

Groups, each through the path a user's request takes:
- ``demos``: every demo design (apps/designs/demo.py) saved as ``load_demo`` saves it (design_create:
  the spec parsed and validated) into a fresh SQLite database loaded with the seed catalog, then evaluated
  as the evaluate API evaluates it (design_evaluate: price resolution, calibration, the composition, the
  stored result read back); the result's ``computed_at`` stamp is left out (it is the clock, not a figure);
  then the paths the demos leave out (_extra_designs: goals missed, serving, RL, an RL mixed fleet).
- ``runs``: every row of tests/engine/data/runs.csv predicted as bench/calibration.py predicts it.
- ``runs_frontier``: every row of tests/engine/data/runs_frontier.csv as bench/calibration_frontier.py.
- ``search``: bench/search.py's cases (its CASES, MOE_CASES and the 70B sweep), each whole estimate.

Canonical form: ``json.dumps(sort_keys=True)`` (floats by ``repr``, so one ulp moves the hash). Run it on
the base and after each change; the hashes must be equal. ``--dump DIR`` writes each group's canonical JSON
there, to diff when they are not.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine"), str(ROOT / "bench")]


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, allow_nan=True)


def demo_figures() -> list[Any]:
    """Each demo design's stored evaluation, in DEMOS order, from a fresh database (the seed catalog only)."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_catalog", verbosity=0)
    from apps.designs.demo import demo_load

    return [_evaluated(design) for design in [*demo_load(), *_extra_designs()]]


def _evaluated(design: Any) -> dict[str, Any]:
    from apps.designs.services import design_evaluate

    result = dict(design_evaluate(version=design.current).result)
    result.pop("computed_at", None)
    return result


def _extra_designs() -> list[Any]:
    """The paths the demos leave out: each demo with a deadline and budgets it misses (the goals' search for
    the node count that meets the deadline), a serving section, an RL run and an RL mixed fleet."""
    import copy

    from django.contrib.auth import get_user_model

    from apps.designs.demo import DEMOS
    from apps.designs.services import design_create
    from tests.designs.test_rl_mixed_fleet_api import GRPO_8B, MIXED

    user = get_user_model().objects.create(username="figures")
    specs = []
    for demo in DEMOS:
        spec = copy.deepcopy(demo["spec"])
        spec["goals"] = {"deadline_days": 2, "budget_usd": 1000, "budget_npv_usd": 1000}
        specs.append(spec)
    serving = copy.deepcopy(DEMOS[0]["spec"])
    serving["serving"] = {"targets": {"ttft_s": 2.0, "tpot_s": 0.05}, "demand": {"requests_per_s": 5}}
    single = copy.deepcopy(MIXED)
    single["rl"] = dict(GRPO_8B)
    specs += [serving, single, copy.deepcopy(MIXED)]
    return [design_create(owner=user, name=f"extra {i}", spec=spec) for i, spec in enumerate(specs)]


def runs_figures() -> list[Any]:
    from calibration_cases import all_cases

    return [{k: v for k, v in dataclasses.asdict(c).items()} for c in all_cases()]


def frontier_figures() -> list[Any]:
    from frontier_cases import all_cases

    return [dataclasses.asdict(c) for c in all_cases()]


def search_figures() -> list[Any]:
    import search as bench_search

    from clusterdesigner.engine.training.training import estimate

    requests = [request for _, request in [*bench_search.CASES, *bench_search.MOE_CASES]]
    base = bench_search.CASES[2][1]
    requests += [{**base, "cluster": {**base["cluster"], "nodes": n}} for n in (8, 16, 32, 64)]
    kwargs = {"accelerators": bench_search.ACCELERATORS, "fabrics": bench_search.FABRICS}
    return [estimate(request, **kwargs) for request in requests]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dump", help="write each group's canonical JSON to this folder")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="figures_hash_")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterdesigner.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    groups = {
        "demos": demo_figures(),
        "runs": runs_figures(),
        "runs_frontier": frontier_figures(),
        "search": search_figures(),
    }
    overall = hashlib.sha256()
    for name, figures in groups.items():
        text = canonical(figures)
        if args.dump:
            Path(args.dump).mkdir(parents=True, exist_ok=True)
            (Path(args.dump) / f"{name}.json").write_text(text)
        digest = hashlib.sha256(text.encode()).hexdigest()
        overall.update(f"{name}:{digest}\n".encode())
        print(f"{name:14s} {len(figures):4d} items  sha256 {digest}")
    print(f"{'overall':14s} {'':4s}        sha256 {overall.hexdigest()}")


if __name__ == "__main__":
    main()
