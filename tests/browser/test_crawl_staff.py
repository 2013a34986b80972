"""The crawl (tests/browser/crawl.py) as a staff user in /admin/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import crawl_as

pytestmark = pytest.mark.browser


def test_every_admin_page_reachable_by_staff_works(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    crawl_as(("staff",), "staff", browser, live_server, django_user_model)
