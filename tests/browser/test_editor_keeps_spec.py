"""The editor in headless Chromium keeps what it has no input for: a design whose model overrides a preset
(llama3-70b at seq_len 16384) and whose spec holds training, layout and serving keys the form does not show
is opened, saved unchanged, and the API returns the same spec; choosing another preset drops the override
(as the note beside the preset then says) and keeps the rest."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import screenshot
from tests.dashboard.test_editor_keeps_spec import _design

pytestmark = pytest.mark.browser

OVERRIDE = {"preset": "llama3-70b", "seq_len": 16384}


def _api_spec(page: Any, design_id: int) -> dict[str, Any]:
    """The stored spec as the API returns it to the signed-in browser."""
    body: dict[str, Any] = page.evaluate(
        "id => fetch(`/api/v1/designs/${id}/`, {credentials: 'same-origin'}).then(r => r.json())", design_id
    )
    return body["spec"]


def _open_editor(page: Any, base: str, django_user_model: Any, model: dict[str, Any]) -> tuple[Any, Any]:
    """A design of this model with the unshown keys, its edit page open (saving only on the button), and its
    stored spec."""
    design = _design(_setup(django_user_model), dict(model))
    sign_in_by_cookie(page, base, then=f"/designs/{design.pk}/edit/")
    return design, copy.deepcopy(design.current.spec)


def _not_costs(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "costs"}


def test_an_edit_saved_unchanged_keeps_the_model_override_and_unshown_keys(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    design, stored = _open_editor(page, live_server.url, django_user_model, OVERRIDE)

    assert page.input_value("#f-preset") == "llama3-70b"
    assert page.inner_text("#f-model-kept") == (
        "Custom shape: seq_len 16384 — kept while the preset stays llama3-70b; choosing another preset "
        "drops them."
    )
    # No training.framework stored: the select shows the default stack, and saving writes no key for it.
    assert page.input_value("#f-framework") == "megatron-core"
    assert page.inner_text("#f-framework option:checked") == "Megatron-Core (current)"

    _save(page, "Saved version 2 and evaluated")
    spec = _api_spec(page, design.pk)
    assert "framework" not in spec["workload"]["training"]
    assert page.get_attribute("#framework-profile", "data-framework") == "megatron-core"
    assert spec["workload"]["model"] == OVERRIDE
    assert spec["workload"]["training"]["memory_headroom"] == 0.1
    assert spec["serving"]["lengths"] == stored["serving"]["lengths"]
    assert spec["serving"]["demand"]["hourly_profile"] == [1] * 12 + [3] * 12
    # Every section as stored (costs aside: the form re-sends the cloud pricing models in its tick order).
    assert _not_costs(spec) == _not_costs(stored)
    screenshot(page, "editor-keeps-model-override")

    # Another preset: the note says the override goes; saved, the model is that preset alone, the rest stays.
    page.select_option("#f-preset", "llama3-8b")
    assert page.inner_text("#f-model-kept") == (
        "Custom shape: seq_len 16384 — dropped on save: another preset is chosen (choose llama3-70b again to "
        "keep it)."
    )
    # And another stack: chosen, it is stored, and the results say the estimate assumed it.
    page.select_option("#f-framework", "fsdp2")
    _save(page, "Saved version 3 and evaluated")
    spec = _api_spec(page, design.pk)
    assert spec["workload"]["model"] == {"preset": "llama3-8b"}
    assert spec["workload"]["training"]["memory_headroom"] == 0.1
    assert spec["workload"]["training"]["framework"] == "fsdp2"
    assert spec["serving"] == stored["serving"]
    shown = page.inner_text("#framework-profile")
    assert shown.startswith("Framework profile: PyTorch FSDP2 (torchtitan) — ")
    screenshot(page, "editor-preset-drops-override")
    assert page.js_errors == []


def test_a_batch_in_sequences_is_kept_unless_a_batch_in_tokens_is_typed(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import DEMOS
    from apps.designs.services import design_create

    user = _setup(django_user_model)
    spec = copy.deepcopy(DEMOS[3]["spec"])
    del spec["workload"]["training"]["global_batch_tokens"]
    spec["workload"]["training"]["global_batch_seqs"] = 512
    design = design_create(owner=user, name="batch in sequences", spec=spec)
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")

    assert page.input_value("#f-gbt") == ""
    _save(page, "Saved version 2")
    training = _api_spec(page, design.pk)["workload"]["training"]
    assert training["global_batch_seqs"] == 512 and "global_batch_tokens" not in training

    # 2,097,152 tokens = 256 sequences of llama3-8b's 8192: typed, it replaces the sequences.
    page.fill("#f-gbt", "2097152")
    _save(page, "Saved version 3")
    training = _api_spec(page, design.pk)["workload"]["training"]
    assert training["global_batch_tokens"] == 2097152 and "global_batch_seqs" not in training
    assert page.js_errors == []


def test_a_custom_shape_without_preset_is_saved_unchanged(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from tests.dashboard.test_editor_keeps_spec import CUSTOM_SHAPE

    design, stored = _open_editor(page, live_server.url, django_user_model, CUSTOM_SHAPE)

    assert page.input_value("#f-preset") == ""  # "Custom shape (no preset)", not the first preset
    assert page.inner_text("#f-model-kept").endswith("— kept; choosing a preset replaces it.")
    # The stored layout fixes tp, pp, vpp, dp, ep and recompute; the rest were searched and stay so.
    assert page.inner_text("#f-layout-searched") == (
        "Left to the search in this design: cp, micro_batch, sharding, sequence_parallel — kept searched "
        "unless you change them."
    )
    _save(page, "Saved version 2")
    spec = _api_spec(page, design.pk)
    assert spec["workload"]["model"] == CUSTOM_SHAPE
    assert spec["parallelism"]["ep"] == 8
    assert spec["workload"]["training"]["pipeline_layout"] == [16, 15, 15, 15]
    assert _not_costs(spec) == _not_costs(stored)
    screenshot(page, "editor-keeps-custom-shape")
    assert page.js_errors == []
