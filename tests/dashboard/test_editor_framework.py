"""The training framework in the design editor and on the design and share pages, through their URLs: the edit
page offers the five stacks with their names, shows a design without ``training.framework`` at the default
(Megatron-Core) and saves it back with no ``framework`` key; a chosen stack is stored and shown again; the
design page and the share view say which profile the estimate assumed."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design
from apps.designs.services import design_create, share_link_create
from tests.dashboard.test_editor_keeps_spec import _save_unchanged as _patch

pytestmark = pytest.mark.django_db

Options = list[tuple[str, bool, str]]  # (value, selected, label) of each option of the framework select
SELECT = re.compile(r'<select id="f-framework"[^>]*>(.*?)</select>', re.S)
OPTION = re.compile(r'<option value="([^"]*)"( selected)?>([^<]*)</option>')
INITIAL = re.compile(r'<script id="initial-spec" type="application/json">(.*?)</script>', re.S)
PROFILE_LINE = re.compile(
    r'<p class="caption" id="framework-profile" data-framework="([^"]+)">(.*?)</p>', re.S
)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _design(owner: Any, demos: list[Any], framework: str | None = None) -> Design:
    # The demo's llama3-8b layout (tp1 pp1 dp64, no recompute, ZeRO-1) is one every stack but FSDP2 and
    # NeMo AutoModel runs (they have no ZeRO-1); DeepSpeed ZeRO 2021 runs it.
    spec = copy.deepcopy(demos[3].current.spec)
    if framework is not None:
        spec["workload"]["training"]["framework"] = framework
    return design_create(owner=owner, name="8B stack", spec=spec)


def _edit_page(client: Client, design: Design) -> tuple[Options, dict[str, Any]]:
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    options = [(v, bool(s), label) for v, s, label in OPTION.findall(SELECT.search(page).group(1))]  # type: ignore[union-attr]
    return options, json.loads(INITIAL.search(page).group(1))  # type: ignore[union-attr]


def _opened(owner: Any, demos: list[Any]) -> tuple[Design, Client, Options, dict[str, Any]]:
    """A design without a framework, its owner's client, and its edit page's framework options and spec."""
    design = _design(owner, demos)
    client = _client(owner)
    return design, client, *_edit_page(client, design)


def test_the_editor_offers_the_five_stacks_and_shows_the_default_for_a_design_without_one(
    alice: Any, demos: list[Any]
) -> None:
    design, client, options, initial = _opened(alice, demos)

    assert [(v, label) for v, _, label in options] == [
        ("megatron-core", "Megatron-Core (current)"),
        ("megatron-lm-2022", "Megatron-LM (2022)"),
        ("deepspeed-zero-2021", "DeepSpeed ZeRO (2021, Megatron-DeepSpeed)"),
        ("fsdp2", "PyTorch FSDP2 (torchtitan)"),
        ("nemo-automodel", "NeMo AutoModel (FSDP2)"),
    ]
    assert [v for v, selected, _ in options if selected] == ["megatron-core"]
    # The page's spec has no framework key, so saving it unchanged stores none: the stored spec is as before.
    assert "framework" not in initial["workload"]["training"]
    stored = _patch(client, design, initial)
    assert "framework" not in stored["workload"]["training"]
    assert stored == design.current.spec


def test_a_chosen_stack_is_stored_and_shown_selected_on_the_next_edit(alice: Any, demos: list[Any]) -> None:
    design, client, _, initial = _opened(alice, demos)
    initial["workload"]["training"]["framework"] = "deepspeed-zero-2021"  # what the select then sends

    stored = _patch(client, design, initial)
    assert stored["workload"]["training"]["framework"] == "deepspeed-zero-2021"
    options, again = _edit_page(client, Design.objects.get(pk=design.pk))
    assert [v for v, selected, _ in options if selected] == ["deepspeed-zero-2021"]
    assert again["workload"]["training"]["framework"] == "deepspeed-zero-2021"


def test_a_stack_that_does_not_run_the_layout_is_refused_on_the_layout_field(
    alice: Any, demos: list[Any]
) -> None:
    # PyTorch FSDP2 has no ZeRO-1 (optimizer-only) sharding: saving the demo's layout under it is refused on
    # the layout field (the editor marks that field), and the stored spec stays as it was.
    design, client, _, initial = _opened(alice, demos)
    initial["workload"]["training"]["framework"] = "fsdp2"
    body = json.dumps({"version": design.version, "name": design.name, "spec": initial})
    response = client.patch(f"/api/v1/designs/{design.pk}/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["spec.parallelism.sharding"], fields
    assert "PyTorch FSDP2 (torchtitan) has no zero1 sharding" in fields["spec.parallelism.sharding"][0]
    assert "framework" not in Design.objects.get(pk=design.pk).current.spec["workload"]["training"]


@pytest.mark.parametrize(
    ("framework", "slug", "shown"),
    [
        (None, "megatron-core", "Framework profile: Megatron-Core (current) (the default)"),
        (
            "deepspeed-zero-2021",
            "deepspeed-zero-2021",
            "Framework profile: DeepSpeed ZeRO (2021, Megatron-DeepSpeed)",
        ),
    ],
)
def test_the_design_page_and_share_view_say_which_profile_the_estimate_assumed(
    alice: Any, demos: list[Any], framework: str | None, slug: str, shown: str
) -> None:
    design = _design(alice, demos, framework)
    _, token = share_link_create(design=design, user=alice)
    for page in (
        _client(alice).get(f"/designs/{design.pk}/").content.decode(),
        Client().get(f"/share/{token}/").content.decode(),
    ):
        line = PROFILE_LINE.search(page)
        assert line is not None
        assert line.group(1) == slug
        assert line.group(2).startswith(shown + " — ")


KERNEL_SELECT = re.compile(r'<select id="f-attention-kernel"[^>]*>(.*?)</select>', re.S)


def test_the_attention_kernel_is_the_frameworks_unless_chosen_and_a_chosen_one_is_stored(
    alice: Any, demos: list[Any]
) -> None:
    design, client, _, initial = _opened(alice, demos)
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    options = OPTION.findall(KERNEL_SELECT.search(page).group(1))  # type: ignore[union-attr]
    assert [(v, bool(s)) for v, s, _ in options] == [
        ("", True),
        ("fused", False),
        ("flash2", False),
        ("flash3", False),
    ]
    assert "attention_kernel" not in initial["workload"]["training"]

    initial["workload"]["training"]["attention_kernel"] = "flash2"  # what the select then sends
    stored = _patch(client, design, initial)
    assert stored["workload"]["training"]["attention_kernel"] == "flash2"
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    options = OPTION.findall(KERNEL_SELECT.search(page).group(1))  # type: ignore[union-attr]
    assert [v for v, s, _ in options if s] == ["flash2"]
    initial["workload"]["training"]["attention_kernel"] = "flash3"  # the Hopper-native kernel
    design.refresh_from_db()
    assert _patch(client, design, initial)["workload"]["training"]["attention_kernel"] == "flash3"


@pytest.mark.parametrize(("field", "value"), [("attention_kernel", "sdpa"), ("moe_dispatcher", "nccl")])
def test_an_unknown_choice_is_refused_on_its_field(
    alice: Any, demos: list[Any], field: str, value: str
) -> None:
    design, client, _, initial = _opened(alice, demos)
    initial["workload"]["training"][field] = value
    body = json.dumps({"version": design.version, "name": design.name, "spec": initial})
    response = client.patch(f"/api/v1/designs/{design.pk}/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == [f"spec.workload.training.{field}"]


DISPATCHER_SELECT = re.compile(r'<select id="f-moe-dispatcher"[^>]*>(.*?)</select>', re.S)
BALANCE_SELECT = re.compile(r'<select id="f-moe-load-balance"[^>]*>(.*?)</select>', re.S)


def test_the_moe_dispatcher_and_routing_are_the_frameworks_unless_chosen(
    alice: Any, demos: list[Any]
) -> None:
    # Issue 33: blank keeps the profile's dispatcher (Megatron-Core: alltoall) and dropless routing, no key
    # stored; a chosen one is stored and shown selected again.
    design, client, _, initial = _opened(alice, demos)
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    options = OPTION.findall(DISPATCHER_SELECT.search(page).group(1))  # type: ignore[union-attr]
    assert [(v, bool(s)) for v, s, _ in options] == [
        ("", True),
        ("alltoall", False),
        ("allgather", False),
        ("deepep", False),
        ("hybridep", False),
    ]
    balance = OPTION.findall(BALANCE_SELECT.search(page).group(1))  # type: ignore[union-attr]
    assert [v for v, _, _ in balance] == ["", "balanced"]
    assert "moe_dispatcher" not in initial["workload"]["training"]

    initial["workload"]["training"]["moe_dispatcher"] = "deepep"  # what the select then sends
    stored = _patch(client, design, initial)
    assert stored["workload"]["training"]["moe_dispatcher"] == "deepep"
    page = client.get(f"/designs/{design.pk}/edit/").content.decode()
    options = OPTION.findall(DISPATCHER_SELECT.search(page).group(1))  # type: ignore[union-attr]
    assert [v for v, s, _ in options if s] == ["deepep"]
