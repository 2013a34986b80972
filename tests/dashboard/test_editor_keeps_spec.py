"""The design editor keeps what it has no input for: a model's overrides or whole custom shape, and the
training, layout and serving keys beside the shown fields, survive an edit-and-save round trip through the
page's URLs (GET the edit page, PATCH what it holds), and the page says the custom fields are kept."""

from __future__ import annotations

import copy
import html
import json
import re
from typing import Any

import pytest
from django.test import Client

from apps.designs.demo import DEMOS
from apps.designs.models import Design
from apps.designs.services import design_create
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.design.spec import MODEL

pytestmark = pytest.mark.django_db

# A custom shape (no preset) with MLA ranks and head widths, MoE experts and one MTP module: the figures of
# the deepseek-v3 preset (sourced in clusterdesigner/engine/core/presets.py), written out field by field,
# named.
_V3 = PRESETS["deepseek-v3"]
CUSTOM_SHAPE = {
    **{k: getattr(_V3, k) for k in MODEL if k not in ("preset", "name") and getattr(_V3, k) is not None},
    "name": "DeepSeek-V3-like",
}
INITIAL = re.compile(r'<script id="initial-spec" type="application/json">(.*?)</script>', re.S)
PRESET_SELECT = re.compile(r'<select id="f-preset"[^>]*>(.*?)</select>', re.S)
OPTION = re.compile(r'<option value="([^"]*)"( selected)?>')
KEPT_NOTE = re.compile(r'<p class="caption" id="f-model-kept"[^>]*>(.*?)</p>', re.S)


def _design(owner: Any, model: dict[str, Any]) -> Design:
    spec = copy.deepcopy(DEMOS[3]["spec"])
    spec["workload"]["model"] = model
    # Keys the editor shows no input for, beside ones it shows.
    spec["workload"]["training"]["memory_headroom"] = 0.1
    spec["parallelism"] = "search"  # the demo's fixed layout is llama3-8b's, too small for these models
    if "experts" in model:  # expert parallelism: a layout key the editor has no input for
        spec["cluster"]["nodes"] = 16  # 128 GPUs: the search's own figure, "a layout fits from 16 nodes"
        spec["parallelism"] = {"tp": 2, "pp": 4, "vpp": 1, "dp": 16, "ep": 8, "recompute": "full"}
        spec["workload"]["training"]["pipeline_layout"] = [16, 15, 15, 15]  # 61 layers on 4 stages
    spec["serving"] = {
        "demand": {"requests_per_s": 5, "hourly_profile": [1] * 12 + [3] * 12},
        "lengths": [
            {"input": 2000, "output": 200, "share": 0.5},
            {"input": 500, "output": 500, "share": 0.5},
        ],
    }
    return design_create(owner=owner, name="kept fields", spec=spec)


def _edit_page(client: Client, design: Design) -> tuple[dict[str, Any], str, str]:
    """The spec the edit page starts from, the preset its select submits (the selected option, else the
    first, as a browser does) and the note beside the preset."""
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    initial = json.loads(INITIAL.search(page).group(1))  # type: ignore[union-attr]
    options = OPTION.findall(PRESET_SELECT.search(page).group(1))  # type: ignore[union-attr]
    chosen = next((value for value, selected in options if selected), options[0][0])
    note = KEPT_NOTE.search(page)
    return initial, chosen, html.unescape(note.group(1)) if note else ""


def _save_unchanged(client: Client, design: Design, initial: dict[str, Any]) -> dict[str, Any]:
    response = client.patch(
        f"/api/v1/designs/{design.pk}/",
        json.dumps({"version": design.version, "name": design.name, "spec": initial}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return Design.objects.get(pk=design.pk).current.spec


@pytest.mark.parametrize(
    ("model", "preset", "note"),
    [
        (
            {"preset": "llama3-70b", "seq_len": 16384},
            "llama3-70b",
            "Custom shape: seq_len 16384 — kept while the preset stays llama3-70b; choosing another preset "
            "drops them.",
        ),
        (CUSTOM_SHAPE, "", "Custom shape: layers 61, hidden 7168, ffn_hidden 18432, heads 128,"),
    ],
    ids=["preset-override", "custom-shape"],
)
def test_an_edit_keeps_the_model_and_the_keys_the_editor_does_not_show(
    alice: Any, catalog: Any, model: dict[str, Any], preset: str, note: str
) -> None:
    design = _design(alice, model)
    stored = copy.deepcopy(design.current.spec)
    client = Client()
    client.force_login(alice)
    initial, chosen, shown = _edit_page(client, design)

    # The page holds the whole model, selects its preset (or "Custom shape" for none) and says it is kept:
    # before the fix a custom shape's select fell to the first preset, and no note was shown.
    assert initial["workload"]["model"] == model
    assert chosen == preset
    assert shown.startswith(note)
    if not preset:
        # The shape's fields in the spec's order: MTP, then local attention, sinks, norm and RoPE (issue #32).
        assert "mtp_depth 1, sliding_window 0, attention_chunk 0, local_layers 0, " in shown
        assert shown.endswith(
            'rope_theta 10000, name "DeepSeek-V3-like" — kept; choosing a preset replaces it.'
        )

    spec = _save_unchanged(client, design, initial)
    assert spec["workload"]["model"] == model
    assert spec["workload"]["training"]["memory_headroom"] == 0.1
    if "experts" in model:
        assert spec["parallelism"]["ep"] == 8
        assert spec["workload"]["training"]["pipeline_layout"] == [16, 15, 15, 15]
    assert spec["serving"]["lengths"] == stored["serving"]["lengths"]
    assert spec["serving"]["demand"]["hourly_profile"] == [1] * 12 + [3] * 12
    assert spec == stored


def test_a_batch_in_sequences_shows_blank_tokens_and_says_it_is_kept(alice: Any, catalog: Any) -> None:
    spec = copy.deepcopy(DEMOS[3]["spec"])
    del spec["workload"]["training"]["global_batch_tokens"]
    spec["workload"]["training"]["global_batch_seqs"] = 512
    design = design_create(owner=alice, name="batch in sequences", spec=spec)
    client = Client()
    client.force_login(alice)
    page = html.unescape(client.get(f"/designs/{design.pk}/edit/").content.decode())
    # Before: the tokens field showed the default 4194304, which the engine ignores beside global_batch_seqs.
    field = re.search(r'<input id="f-gbt"[^>]*>', page).group(0)  # type: ignore[union-attr]
    assert 'value=""' in field and 'placeholder="512 sequences"' in field
    assert "Given as 512 sequences (global_batch_seqs) — kept; a batch in tokens here replaces it." in page
