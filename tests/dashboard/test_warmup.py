"""A web worker's warm-up before it accepts (apps.dashboard.warmup, gunicorn's post_worker_init): it draws a
stored evaluation's charts and templates, changes no page a reader gets, and never stops a worker."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache
from django.db import OperationalError
from django.test import Client

from apps.dashboard import warmup
from apps.designs.models import Design, Evaluation, ShareLink, ShareLinkOpen
from apps.designs.services import share_link_create
from clusterdesigner import gunicorn_conf, memo
from tests.conftest import freeze_long_lived
from tests.designs.test_api import SPEC, _create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty() -> Iterator[None]:
    memo.clear_all()
    cache.clear()
    yield
    memo.clear_all()
    cache.clear()


def _chart_key(evaluation: Evaluation) -> str:
    return f"dashboard:charts:v7:{evaluation.input_hash}"


def test_the_warm_up_draws_a_stored_evaluation_and_the_share_page_is_unchanged(
    user_client: Any, catalog: Any
) -> None:
    design = Design.objects.get(pk=_create(user_client)["id"])
    _, token = share_link_create(design=design, user=user_client.user)
    evaluation = Evaluation.objects.get(version__design=design)
    cold = Client().get(f"/share/{token}/")
    assert cold.status_code == 200
    memo.clear_all()
    cache.clear()
    assert cache.get(_chart_key(evaluation)) is None

    def opens() -> tuple[int, int]:
        return ShareLink.objects.get(design=design).open_count, ShareLinkOpen.objects.count()

    before = opens()
    assert warmup.pages_warm_up() is True
    assert cache.get(_chart_key(evaluation)) is not None  # its charts were drawn
    assert opens() == before  # the warm-up opened no link
    warm = Client().get(f"/share/{token}/")
    assert warm.status_code == 200 and warm.content == cold.content  # the same bytes as a cold worker's


def test_a_demo_designs_evaluation_is_drawn_first(user_client: Any, catalog: Any) -> None:
    demo = Design.objects.get(pk=_create(user_client, name="demo")["id"])
    Design.objects.filter(pk=demo.pk).update(is_demo=True)
    share_link_create(design=demo, user=user_client.user)  # stores its evaluation
    spec = {**SPEC, "cluster": {**SPEC["cluster"], "nodes": 128}}  # another input: another evaluation
    spec["parallelism"] = {**SPEC["parallelism"], "dp": 32}
    mine = Design.objects.get(pk=_create(user_client, name="mine", spec=spec)["id"])
    share_link_create(design=mine, user=user_client.user)
    assert warmup.pages_warm_up() is True
    theirs, newer = (Evaluation.objects.get(version__design=d) for d in (demo, mine))
    assert theirs.input_hash != newer.input_hash and newer.pk > theirs.pk
    assert cache.get(_chart_key(theirs)) is not None
    assert cache.get(_chart_key(newer)) is None


def test_with_nothing_stored_the_warm_up_draws_nothing(catalog: Any) -> None:
    assert warmup.pages_warm_up() is False


def test_a_failing_warm_up_is_logged_and_the_worker_starts(caplog: pytest.LogCaptureFixture) -> None:
    with mock.patch.object(warmup, "_draw_a_demo", side_effect=OperationalError("database is down")):
        assert warmup.pages_warm_up() is False
    assert "page warm-up failed; the worker starts cold" in caplog.text
    assert "database is down" in caplog.text


def test_the_shipped_gunicorn_config_warms_each_worker() -> None:
    with mock.patch.object(warmup, "pages_warm_up") as warm_up:
        gunicorn_conf.post_worker_init(worker=None)
    gc.unfreeze()  # this test process is no worker
    freeze_long_lived()  # the suite's own freeze (tests/conftest.py)
    warm_up.assert_called_once_with()


def test_the_worker_freezes_its_warm_heap() -> None:
    # After the warm-up the heap is frozen: a full collection then leaves out the objects that were alive
    # (gc.freeze; they were scanned on every full collection, ~100 ms of CPU in a web worker).
    gc.unfreeze()  # the suite's own freeze (tests/conftest.py), restored below
    assert gc.get_freeze_count() == 0
    kept = [[i] for i in range(1000)]  # objects the collector tracks, alive through the warm-up
    try:
        with mock.patch.object(warmup, "pages_warm_up"):
            gunicorn_conf.post_worker_init(worker=None)
        assert gc.get_freeze_count() >= len(kept)
        collected = {id(x) for generation in (0, 1, 2) for x in gc.get_objects(generation=generation)}
        assert all(gc.is_tracked(x) and id(x) not in collected for x in kept)
    finally:
        gc.unfreeze()
        freeze_long_lived()
