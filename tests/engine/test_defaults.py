"""The design defaults are written once (clusterdesigner/engine/cost/defaults.py): the cost engine's
assumptions, the README's table and the apps read them from there, and no app types them again (issue 14)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from clusterdesigner.engine.cost import cost, defaults

ROOT = Path(__file__).resolve().parents[2]


def test_the_cost_engine_states_the_shared_defaults_with_their_sources() -> None:
    shared = {
        "horizon_years": defaults.HORIZON_YEARS,
        "utilization": defaults.UTILIZATION,
        "cluster.accelerator": defaults.ACCELERATOR,
        "cluster.gpus_per_node": defaults.GPUS_PER_NODE,
        "cluster.fabric": defaults.FABRIC,
        "cluster.oversubscription": defaults.OVERSUBSCRIPTION,
        "cluster.storage": defaults.STORAGE,
    }
    for path, default in shared.items():
        assumption = cost.DEFAULTS[path]
        assert (assumption.value, assumption.unit, assumption.source) == (
            default.value,
            default.unit,
            default.source,
        ), path
    # A cost request's own example size is not a design's.
    assert cost.DEFAULTS["cluster.nodes"].value == 8 and defaults.NODES.value == 64


def test_a_new_design_spec_is_built_from_the_defaults_and_is_a_fresh_copy() -> None:
    spec = defaults.design_spec()
    assert spec["workload"]["training"]["global_batch_tokens"] == 4_194_304 == 1024 * 4096
    assert spec["cluster"]["fabric"] == "ib-ndr400"
    assert spec["costs"]["cloud"] == [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}]
    spec["cluster"]["nodes"] = 1
    spec["costs"]["cloud"][0]["pricing_models"].append("spot")
    assert defaults.design_spec()["cluster"]["nodes"] == 64
    assert defaults.design_spec()["costs"]["cloud"][0]["pricing_models"] == ["on_demand"]
    for path, default in defaults.DESIGN_DEFAULTS.items():
        value: Any = spec
        for part in path.split("."):
            value = value[int(part)] if isinstance(value, list) else value[part]
        if path not in ("cluster.nodes", "costs.cloud.0.pricing_models"):
            assert value == default.value, path


def test_the_readme_table_is_the_defaults_module() -> None:
    readme = (ROOT / "README.md").read_text()
    table = "\n".join(line.strip() for line in readme.splitlines() if line.strip().startswith("| `"))
    wanted = "\n".join(defaults.markdown_table().splitlines()[2:])
    assert wanted in table


def test_no_app_types_a_design_default_again() -> None:
    """The literals that were written in 5-9 places each (issue 14): only the demo designs (content with
    pinned figures, not defaults) may still spell them."""
    literals = re.compile(r'"ib-ndr400"|4194304|4_194_304|"on_demand", "reserved_1y"|"llama3-70b"|"lustre"')
    found = []
    for folder in ("apps", "templates", "static"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".html", ".js") or path.name == "demo.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if literals.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == []
