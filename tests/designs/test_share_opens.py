"""Share link opens (issue #38, speed): on PostgreSQL an open is a row in a log (ShareLinkOpen), not an update
of the link's row, so concurrent readers of one link do not queue on its row lock; the owner's list counts
the log, and the fold (Celery beat) moves it into the counter. The count is exact at every moment: before a
fold, after one, and with folds running while the link is being opened.

PostgreSQL only, as CI runs (SQLite counts on the link's row, as before: one writer at a time there)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from apps.designs.models import ShareLink, ShareLinkOpen
from apps.designs.services import design_create, share_link_create, share_link_opens_fold
from apps.designs.tasks import share_link_opens_fold_task
from tests.designs.test_api import SPEC


@pytest.fixture
def shared(transactional_db: Any, postgres_required: None, alice: Any, catalog: Any) -> tuple[Any, str]:
    design = design_create(owner=alice, name="shared", spec=SPEC)
    link, token = share_link_create(design=design, user=alice)
    return link, token


def _listed(alice: Any, link: ShareLink) -> dict[str, Any]:
    """The link's row in its owner's list (GET /api/v1/designs/<id>/share-links/)."""
    client = Client()
    client.force_login(alice)
    rows = client.get(f"/api/v1/designs/{link.design_id}/share-links/").json()["results"]
    return next(row for row in rows if row["id"] == link.pk)


def test_an_open_is_logged_not_written_on_the_links_row_and_listed_exactly(
    alice: Any, shared: tuple[Any, str]
) -> None:
    link, token = shared
    for url in (f"/share/{token}/", f"/api/v1/shared/{token}/", f"/share/{token}/"):
        assert Client().get(url).status_code == 200
    link.refresh_from_db()
    assert link.open_count == 0 and link.last_opened_at is None  # the row was not written
    logged = list(ShareLinkOpen.objects.filter(link_id=link.pk).order_by("id"))
    assert len(logged) == 3
    row = _listed(alice, link)
    assert row["open_count"] == 3
    assert row["last_opened_at"] == logged[-1].opened_at.isoformat().replace("+00:00", "Z")

    assert share_link_opens_fold() == 3
    link.refresh_from_db()
    assert link.open_count == 3 and link.last_opened_at == logged[-1].opened_at
    assert not ShareLinkOpen.objects.exists()
    assert _listed(alice, link)["open_count"] == 3  # the same count, now from the row
    assert share_link_opens_fold() == 0  # nothing left: nothing counted twice


def test_a_revoked_links_refused_open_is_not_logged(alice: Any, shared: tuple[Any, str]) -> None:
    link, token = shared
    assert Client().get(f"/share/{token}/").status_code == 200
    client = Client()
    client.force_login(alice)
    revoked = client.post(f"/api/v1/designs/{link.design_id}/share-links/{link.pk}/revoke/")
    assert (
        revoked.status_code == 200 and revoked.json()["open_count"] == 1
    )  # the revoke answer counts the log
    assert Client().get(f"/share/{token}/").status_code == 404
    assert ShareLinkOpen.objects.filter(link_id=link.pk).count() == 1


def test_opens_are_counted_exactly_while_folds_run_beside_them(alice: Any, shared: tuple[Any, str]) -> None:
    """8 readers open the link 25 times each while another thread folds without pause: every open is
    counted once, whichever side of a fold it fell on."""
    link, token = shared
    readers, opens = 8, 25
    start = threading.Barrier(readers + 1)
    done = threading.Event()
    folded: list[int] = []
    statuses: list[int] = []

    def read() -> None:
        try:
            client = Client()
            start.wait()
            statuses.extend(client.get(f"/api/v1/shared/{token}/").status_code for _ in range(opens))
        finally:
            connection.close()

    def fold() -> None:
        try:
            start.wait()
            while not done.is_set():
                folded.append(share_link_opens_fold())
        finally:
            connection.close()

    threads = [threading.Thread(target=read) for _ in range(readers)]
    folder = threading.Thread(target=fold)
    for thread in [*threads, folder]:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    done.set()
    folder.join(timeout=120)
    assert statuses == [200] * readers * opens
    assert _listed(alice, link)["open_count"] == readers * opens  # row + log, mid-way as it was left
    folded.append(share_link_opens_fold())
    assert sum(folded) == readers * opens
    link.refresh_from_db()
    assert link.open_count == readers * opens


def test_a_deleted_links_logged_opens_go_with_the_next_fold(alice: Any, shared: tuple[Any, str]) -> None:
    link, token = shared
    assert Client().get(f"/share/{token}/").status_code == 200
    link.design.delete()  # the design, its versions, evaluations and links
    assert ShareLinkOpen.objects.count() == 1  # no constraint: the log row stays ...
    assert share_link_opens_fold() == 1  # ... until the fold, which finds no link to add it to
    assert not ShareLinkOpen.objects.exists()


def test_beat_runs_the_fold_every_minute(alice: Any, shared: tuple[Any, str]) -> None:
    link, token = shared
    entry = settings.CELERY_BEAT_SCHEDULE["share-link-opens-fold"]
    assert entry == {"task": "apps.designs.tasks.share_link_opens_fold_task", "schedule": 60.0}
    assert share_link_opens_fold_task.name == entry["task"]
    assert Client().get(f"/share/{token}/").status_code == 200
    share_link_opens_fold_task.run()
    link.refresh_from_db()
    assert link.open_count == 1 and not ShareLinkOpen.objects.exists()
