"""The editor's starting offering for an accelerator never has a stale price while a fresher one exists."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.utils import timezone

from apps.catalog.models import CloudPrice


def _date(offering: str, days_ago: int) -> None:
    prices = CloudPrice.objects.filter(offering__slug=offering, pricing_model="on_demand")
    price = prices.order_by("-as_of").first()
    assert price is not None
    price.as_of = timezone.localdate() - dt.timedelta(days=days_ago)
    price.save()


def test_a_prefilled_editor_starts_from_a_fresh_price_not_a_stale_whole_node(
    client: Any, catalog: Any, settings: Any, django_user_model: Any
) -> None:
    """One GPU per node: Lambda's 1 × H100 is the whole-node match but its price is 400 days old; the p5
    (8 GPUs, priced 10 days ago) is chosen instead."""
    settings.PRICE_STALE_AFTER_DAYS = 180
    _date("lambda-gpu-1x-h100-sxm5", 400)
    _date("aws-p5-48xlarge", 10)
    client.force_login(django_user_model.objects.create_user("dora", password="pw-dora-12345"))
    # The link names an offering of another accelerator, so the editor picks the default for h100-sxm.
    body = client.get("/designs/new/?accelerator=h100-sxm&gpus_per_node=1&offering=aws-p4de-24xlarge")
    page = body.content.decode()
    spec_json = page.split('id="initial-spec" type="application/json">')[1].split("</script>")[0]
    cloud = json.loads(spec_json)["costs"]["cloud"]
    assert [c["offering"] for c in cloud] != ["lambda-gpu-1x-h100-sxm5"]
    chosen = CloudPrice.objects.filter(offering__slug=cloud[0]["offering"], pricing_model="on_demand")
    newest = chosen.order_by("-as_of").first()
    assert newest is not None and newest.as_of >= timezone.localdate() - dt.timedelta(days=180)
