"""Issue 13, defect 1: every export button of a design page downloads its file at the URL the page links.

DRF reads a ``format`` query parameter as a renderer name, so ``/export/?format=xlsx`` answered 404 while the
export functions' own tests passed. These tests follow the links the page itself renders.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

pytestmark = pytest.mark.django_db


def _export_links(client: Client, design_id: int) -> dict[str, str]:
    body = client.get(f"/designs/{design_id}/").content.decode()
    links = re.findall(r'href="(/api/v1/designs/\d+/export/\?[^"]+)"', body)
    return {re.search(r"format=(\w+)", link).group(1): link.replace("&amp;", "&") for link in links}  # type: ignore[union-attr]


def test_every_export_link_on_a_design_page_downloads_a_valid_file(
    alice_client: Client, demos: list[Any]
) -> None:
    demo = demos[3]  # 8 × 8 H200, owned vs AWS reserved
    links = _export_links(alice_client, demo.pk)
    assert set(links) == {"csv", "xlsx", "torchrun", "sbatch", "volcano"}

    xlsx = alice_client.get(links["xlsx"])
    assert xlsx.status_code == 200, xlsx.content[:300]
    assert xlsx["Content-Disposition"] == f'attachment; filename="design-{demo.pk}-v1.xlsx"'
    workbook = load_workbook(io.BytesIO(xlsx.content))
    assert "Summary" in workbook.sheetnames or len(workbook.sheetnames) >= 1

    table = alice_client.get(links["csv"])
    assert table.status_code == 200 and table["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(table.content.decode())))
    assert len(rows) > 10

    torchrun = alice_client.get(links["torchrun"]).content.decode()
    assert "torchrun" in torchrun and "--nnodes=8" in torchrun
    assert "#SBATCH --nodes=8" in alice_client.get(links["sbatch"]).content.decode()
    volcano = alice_client.get(links["volcano"])
    assert volcano.status_code == 200 and b"kind: Job" in volcano.content


def test_an_unknown_export_format_is_a_400_naming_format(alice_client: Client, demos: list[Any]) -> None:
    response = alice_client.get(f"/api/v1/designs/{demos[3].pk}/export/?format=pdf")
    assert response.status_code == 400
    assert "format" in response.json()["error"]["fields"]


def test_the_schema_still_answers_its_own_format_parameter(alice_client: Client) -> None:
    response = alice_client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200 and response.json()["openapi"].startswith("3.")
