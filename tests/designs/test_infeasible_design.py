"""Issue 13, defects 2 and 3: a design whose model fits in memory at no layout.

Reproduced from the editor: Llama 3 405B, layout searched, on 2 nodes of 8 H100 (80 GiB). Weights, gradients
and Adam states alone are 405e9 × 16 B ≈ 6.5 TB, ≈ 5,900 GiB: over 16 GPUs that is ≈ 370 GiB a GPU before
activations, so no layout fits; at 80 GiB the states alone need ≥ 6,036 / 80 ≈ 76 GPUs, ≥ 10 nodes.
Before the fix the design saved (201), the status line blamed vpp divisibility, and its pages answered 500.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design, DesignVersion

pytestmark = pytest.mark.django_db

SPEC_405B_ON_2_NODES: dict[str, Any] = {
    "workload": {
        "model": {"preset": "llama3-405b"},
        "training": {"tokens": 1.0e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    },
    "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 2, "fabric": "ib-ndr400"},
    "parallelism": "search",
    "costs": {"cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}]},
}


def test_saving_a_design_that_fits_nowhere_is_a_400_with_the_memory_reason(
    alice_client: Client, catalog: Any
) -> None:
    body = {"name": "405B on 2 nodes", "spec": SPEC_405B_ON_2_NODES}
    response = alice_client.post("/api/v1/designs/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["spec.cluster.nodes"]
    message = fields["spec.cluster.nodes"][0]
    assert "vpp" not in message and "divides" not in message
    need, have = map(float, re.search(r"needs ([\d.]+) GiB of ([\d.]+) GiB", message).groups())  # type: ignore[union-attr]
    assert have == 80 and need > 300  # ≥ 370 GiB of states alone on 16 GPUs (module docstring)
    fits_from = int(re.search(r"a layout fits from (\d+) nodes", message).group(1))  # type: ignore[union-attr]
    assert 10 <= fits_from <= 32
    assert not Design.objects.exists()


def _saved_without_checks(owner: Any, spec: dict[str, Any]) -> Design:
    """A design saved before the save-time check existed (or whose catalog changed since)."""
    design = Design.objects.create(owner=owner, name="405B on 2 nodes", version=1)
    DesignVersion.objects.create(design=design, number=1, name=design.name, spec=spec, created_by=owner)
    return design


def _full_spec(spec: dict[str, Any]) -> dict[str, Any]:
    from apps.designs.specs import spec_with_defaults

    return spec_with_defaults(copy.deepcopy(spec))


def test_pages_of_a_saved_design_that_fits_nowhere_say_why_and_stay_editable(
    alice: Any, alice_client: Client, catalog: Any
) -> None:
    design = _saved_without_checks(alice, _full_spec(SPEC_405B_ON_2_NODES))
    page = alice_client.get(f"/designs/{design.pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "This design cannot be evaluated" in body and "GiB of 80 GiB" in body
    assert re.search(r"A layout fits from <strong>\d+ nodes</strong>", body)
    assert 'id="edit-design"' in body and "format=xlsx" not in body  # no export of a result that isn't there

    editor = alice_client.get(f"/designs/{design.pk}/edit/")
    assert editor.status_code == 200
    assert 'id="design-form"' in editor.content.decode() and "cannot be evaluated" in editor.content.decode()
    assert alice_client.get(f"/designs/{design.pk}/results/").status_code == 200


def test_a_fixed_layout_with_a_vanished_catalog_row_shows_the_reason_not_500(
    alice: Any, alice_client: Client, demos: list[Any]
) -> None:
    spec = copy.deepcopy(demos[3].current.spec)
    spec["cluster"]["accelerator"] = "gone-accelerator"
    design = _saved_without_checks(alice, spec)
    response = alice_client.get(f"/designs/{design.pk}/")
    assert response.status_code == 200
    assert "gone-accelerator" in response.content.decode()
    assert "Accelerator" in response.content.decode()
